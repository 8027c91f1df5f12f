//! Helpers the unit tests share.

/// Says on stderr, past the harness's capture, that the calling test checks
/// nothing and why; under `CI=true` (or `CI=1`) it fails instead, since CI
/// provides what the test needs (`../shared`, python3).
pub(crate) fn skip(reason: &str) {
    use std::io::Write;
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(!ci, "{reason} (under CI=true this test may not be skipped)");
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
}

/// The shared evaluation collections' folder, `../shared/eval`, if present.
pub(crate) fn shared_eval() -> Option<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/eval");
    dir.is_dir().then_some(dir)
}
