//! The list boundary: a panic inside a list becomes an error naming the damage.
//!
//! A list reads memory-mapped files through code that trusts them (tantivy's
//! postings, for one), so bit rot that keeps a file's size and mtime can make
//! it panic before `status --verify` is run. A search must then fail like any
//! other read of a damaged index: one line naming the folder, exit 2, never
//! a backtrace. [`catch`] runs a list's work under `catch_unwind`; while it
//! does, the panic hook (the previous one, wrapped once) stays quiet on that
//! thread, so the caught panic prints nothing.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::Once;

use anyhow::{Result, anyhow};

use crate::store::damaged;

thread_local! {
    /// True while this thread runs a list's work under [`catch`].
    static CATCHING: Cell<bool> = const { Cell::new(false) };
}

/// Wraps the process's panic hook, once, so it says nothing for a panic
/// that [`catch`] turns into an error.
fn quiet_hook_while_catching() {
    static WRAPPED: Once = Once::new();
    WRAPPED.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !CATCHING.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

/// Runs `work` (a list's open or search over the files in `dir`); a panic
/// becomes the damaged-index error for `dir`, saying which list failed.
pub fn catch<T>(list: &str, dir: &Path, work: impl FnOnce() -> Result<T>) -> Result<T> {
    quiet_hook_while_catching();
    let was = CATCHING.with(|c| c.replace(true));
    let outcome = panic::catch_unwind(AssertUnwindSafe(work));
    CATCHING.with(|c| c.set(was));
    outcome.unwrap_or_else(|_| {
        Err(anyhow!(damaged(
            dir,
            &format!("made the {list} list fail while reading it")
        )))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_damage_error_and_results_pass_through() {
        let dir = Path::new("/idx/gen-3/sparse");
        let err = catch::<()>("sparse", dir, || panic!("index out of bounds")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "index is damaged: /idx/gen-3/sparse made the sparse list fail while reading it; run 'memidx index --full' to rebuild it"
        );
        assert_eq!(catch("dense", dir, || Ok(7)).unwrap(), 7);
        assert!(!CATCHING.with(Cell::get));
    }
}
