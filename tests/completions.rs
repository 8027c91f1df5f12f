//! The completion scripts checked into `completions/` must match what the
//! current CLI generates (regenerate with `memidx completions SHELL`).

use assert_cmd::Command;

#[test]
fn checked_in_completions_are_up_to_date() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("completions");
    for (shell, file) in [
        ("bash", "memidx.bash"),
        ("zsh", "_memidx"),
        ("fish", "memidx.fish"),
    ] {
        let generated = Command::cargo_bin("memidx")
            .unwrap()
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(generated.status.success());
        let checked_in = std::fs::read(dir.join(file)).unwrap_or_default();
        assert!(
            generated.stdout == checked_in,
            "completions/{file} is out of date: run `cargo run -- completions {shell} > completions/{file}`"
        );
    }
}
