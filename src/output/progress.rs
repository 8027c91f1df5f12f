//! Progress bars on stderr (`indicatif`), drawn only when stderr is a
//! terminal, so scripts and pipes see nothing.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar for `len` items of `unit` in stage `stage`, followed by its
/// message (e.g. a second count); hidden when `enabled` is false or stderr
/// is not a terminal.
pub fn bar(enabled: bool, len: usize, stage: &str, unit: &str) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
    let template = format!(
        "{stage:>9} [{{bar:30}}] {{pos}}/{{len}} {unit} ({{per_sec}}, eta {{eta}}) {{msg}}"
    );
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}
