//! The completion scripts in `completions/` and the man page in `man/` must
//! match what the current CLI generates (`scripts/update-generated.sh`).

use assert_cmd::Command;

fn generated(args: &[&str]) -> Vec<u8> {
    let output = Command::cargo_bin("memidx")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "{args:?}");
    output.stdout
}

#[test]
fn checked_in_completions_and_man_page_are_up_to_date() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = [
        (&["completions", "bash"][..], "completions/memidx.bash"),
        (&["completions", "zsh"], "completions/_memidx"),
        (&["completions", "fish"], "completions/memidx.fish"),
        (&["completions", "powershell"], "completions/_memidx.ps1"),
        (&["completions", "elvish"], "completions/memidx.elv"),
        (&["man"], "man/memidx.1"),
    ];
    for (args, file) in files {
        let checked_in = std::fs::read(root.join(file)).unwrap_or_default();
        assert!(
            generated(args) == checked_in,
            "{file} is out of date: run scripts/update-generated.sh"
        );
    }
    // memidx(1) names a page per subcommand; each is checked in too.
    let top = String::from_utf8(generated(&["man"])).unwrap();
    let commands: Vec<&str> = top
        .split("memidx\\-")
        .skip(1)
        .filter_map(|rest| rest.split_once("(1)").map(|(name, _)| name))
        .collect();
    assert_eq!(
        commands,
        [
            "index",
            "search",
            "get",
            "explain",
            "mcp",
            "status",
            "remember",
            "eval",
            "graph",
            "completions",
            "man"
        ]
    );
    // push is hidden from a build without Milvus, which only says so; its
    // page is checked in for the builds that have it.
    for command in commands.into_iter().chain(["push"]) {
        let file = format!("man/memidx-{command}.1");
        let checked_in = std::fs::read(root.join(&file)).unwrap_or_default();
        assert!(
            generated(&["man", command]) == checked_in,
            "{file} is out of date: run scripts/update-generated.sh"
        );
    }
    for section in [".SH \"EXIT STATUS\"", ".SH ENVIRONMENT", ".SH FILES"] {
        assert!(top.contains(section), "memidx(1) has no {section}");
    }
    let man = String::from_utf8(generated(&["man"])).unwrap();
    assert!(
        man.starts_with(".ie \\n(.g .ds Aq") && man.contains("memidx"),
        "{man}"
    );
}
