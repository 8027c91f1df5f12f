//! Progress bars on stderr (`indicatif`), drawn only when stderr is a
//! terminal, so scripts and pipes see nothing: the binary's [`Progress`].

use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::progress::Progress;

/// One bar per stage, on stderr; hidden when disabled.
#[derive(Debug)]
pub struct Bars {
    enabled: bool,
    bar: Mutex<ProgressBar>,
}

impl Bars {
    /// Bars that draw when `enabled` (and stderr is a terminal).
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            bar: Mutex::new(ProgressBar::hidden()),
        }
    }

    /// The current stage's bar (a clone shares the same bar).
    fn current(&self) -> ProgressBar {
        self.bar
            .lock()
            .map_or_else(|_| ProgressBar::hidden(), |bar| bar.clone())
    }
}

impl Progress for Bars {
    fn stage(&self, name: &str, total: usize, unit: &str) {
        if !self.enabled {
            return;
        }
        let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
        let template = format!(
            "{name:>9} [{{bar:30}}] {{pos}}/{{len}} {unit} ({{rate}}, eta {{eta}}) {{msg}}"
        );
        if let Ok(style) = ProgressStyle::with_template(&template) {
            // A whole number per second: indicatif's own `per_sec` prints
            // four decimals ("12,406.8612/s").
            let rate = |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0}/s", state.per_sec());
            };
            bar.set_style(style.progress_chars("=> ").with_key("rate", rate));
        }
        if let Ok(mut current) = self.bar.lock() {
            current.finish_and_clear();
            *current = bar;
        }
    }

    // Hidden bars return at once: a run advances once per file, from
    // several threads, and a lock and a clone each cost more than the
    // check of an unchanged file.
    fn advance(&self, items: usize) {
        if self.enabled {
            self.current().inc(items as u64);
        }
    }

    fn note(&self, note: &str) {
        if self.enabled {
            self.current().set_message(note.to_string());
        }
    }

    fn finish(&self) {
        if self.enabled {
            self.current().finish_and_clear();
        }
    }
}
