//! Watching an indexed folder: `memidx index --watch` (in the foreground,
//! until SIGINT or SIGTERM) and `memidx mcp --watch` (on a thread beside
//! the server, until it ends) share the loop here.
//!
//! File events come from the `notify` crate (the maintained cross-platform
//! watcher: inotify, FSEvents, ReadDirectoryChangesW), as a recursive watch
//! on the root. Reads are dropped, and so are events inside hidden folders
//! (which the walk prunes, `.memidx` and `.git` among them) and inside the
//! index folder, since every run writes there and would otherwise start the
//! next. A run starts once the folder has been quiet for [`QUIET_PERIOD`]
//! (debounce), or [`MAX_DELAY`] after the first change of a burst that does
//! not end; events that arrive during a run wait in the channel and start
//! the next run, so no change is lost. A run is told the paths its burst's
//! events named and looks only at those ([`IndexOptions::told`]); the first
//! run, and one after an event that cannot tell what changed (a watcher
//! error, an overflowed queue) or after a failed run, walks the folder. A
//! failed run is reported on stderr and the watch goes on.
//!
//! The writer lock is taken once, before the first run, and held for the
//! watcher's whole life ([`indexer::Writer`]), so any other `memidx index`
//! is refused while it watches; every run goes through that one lock.
//!
//! In the foreground the signals come from the `ctrlc` crate with its
//! `termination` feature (SIGINT, SIGTERM, SIGHUP). The first one lets the
//! current run finish and then exits 0; a second one exits at once (130),
//! abandoning the run, which is still safe: a run writes a new generation
//! beside the live one and switches `meta.json` atomically, so the previous
//! index stays whole and the next run removes the leftover.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
#[cfg(feature = "mcp")]
use std::sync::{Arc, Mutex, PoisonError};
#[cfg(feature = "mcp")]
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use super::{Status, heap, index};
use memidx::indexer::{self, IndexOptions, Writer};
use memidx::output::progress::Bars;
#[cfg(feature = "mcp")]
use {super::Stderr, memidx::progress::Silent};

/// How long the folder must be quiet (no new event) before a run starts.
const QUIET_PERIOD: Duration = Duration::from_millis(300);

/// The longest a run waits for a burst of changes to end.
const MAX_DELAY: Duration = Duration::from_secs(5);

/// What the watch loop is told by the file watcher and by whoever stops it.
enum Message {
    /// Something under the root changed: these paths, or (`None`) what the
    /// watcher cannot tell (an error, a lost event), so the folder is
    /// walked.
    Changed(Option<Vec<PathBuf>>),
    /// Stop after the current run.
    Stop,
}

/// `memidx index --watch`: indexes per `options`, then keeps the index
/// current until a signal; warnings go to `err`, one summary line per run
/// to `out` unless `quiet`. Only a failure before watching starts (or of
/// the first run) is an error.
pub fn run(
    options: &IndexOptions,
    quiet: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Status> {
    heap::keep_small();
    let embedder = indexer::load_model(options)?;
    let mut writer = Writer::take(options)?;
    // Watching starts before the first run, so changes made during it
    // start the second.
    let changes = Changes::start(options)?;
    let stop = changes.stopper();
    let mut signals = 0u32;
    ctrlc::set_handler(move || {
        signals += 1;
        if signals > 1 {
            std::process::exit(130);
        }
        stop.stop();
    })
    .context("cannot install the SIGINT/SIGTERM handler")?;

    let bars = Bars::new(!quiet);
    let report = writer.run(options, embedder, &bars)?;
    index::print_report(&report, quiet, out, err)?;
    // Said even under --quiet: without it nothing shows the watcher lives.
    writeln!(
        err,
        "memidx: watching {} for changes (Ctrl-C stops)",
        options.root.display()
    )?;
    let later = IndexOptions {
        full: false,
        ..options.clone()
    };
    changes.follow(err, false, |err, told| {
        let options = IndexOptions {
            told,
            ..later.clone()
        };
        let report = writer.run(&options, embedder, &bars)?;
        index::print_report(&report, quiet, out, err)
    });
    Ok(Status::Success)
}

/// A watcher on a thread of its own (`memidx mcp --watch`): summary lines
/// and warnings go to stderr, nothing to stdout.
#[cfg(feature = "mcp")]
pub struct Background {
    stopper: Stopper,
    thread: JoinHandle<()>,
}

#[cfg(feature = "mcp")]
impl Background {
    /// Starts watching per `options` and runs at once (catching changes
    /// made while nothing watched), then after every change, each run
    /// through `writer`, which the caller may share for runs of its own.
    /// Fails when the folder cannot be watched; a failed run is reported
    /// and watching goes on.
    pub fn start(options: IndexOptions, writer: Arc<Mutex<Writer>>) -> Result<Self> {
        let embedder = indexer::load_model(&options)?;
        let changes = Changes::start(&options)?;
        let stopper = changes.stopper();
        let options = IndexOptions {
            full: false,
            ..options
        };
        let thread = std::thread::Builder::new()
            .name("memidx-watch".into())
            .spawn(move || {
                let run = |err: &mut dyn Write, told| {
                    let mut writer = writer.lock().unwrap_or_else(PoisonError::into_inner);
                    let options = IndexOptions {
                        told,
                        ..options.clone()
                    };
                    let report = writer.run(&options, embedder, &Silent)?;
                    index::print_report(&report, false, &mut Stderr, err)
                };
                let first = run(&mut Stderr, None);
                if let Err(failed) = &first {
                    report_failure(&mut Stderr, failed);
                }
                changes.follow(&mut Stderr, first.is_err(), run);
            })
            .context("cannot start the watcher's thread")?;
        Ok(Self { stopper, thread })
    }

    /// Stops watching after the current run, and waits for it.
    pub fn stop(self) {
        self.stopper.stop();
        let _ = self.thread.join();
    }
}

/// File changes under an indexed folder, as messages to the watch loop.
struct Changes {
    /// Dropping it ends the watch.
    _watcher: RecommendedWatcher,
    sender: Sender<Message>,
    messages: Receiver<Message>,
}

/// Tells a watch loop to stop after its current run.
#[derive(Clone)]
struct Stopper(Sender<Message>);

impl Stopper {
    fn stop(&self) {
        let _ = self.0.send(Message::Stop);
    }
}

impl Changes {
    /// Starts a recursive watch on `options.root`; the index folder must
    /// exist (a taken [`Writer`] has created it) so its events are known.
    fn start(options: &IndexOptions) -> Result<Self> {
        let root = options
            .root
            .canonicalize()
            .with_context(|| format!("cannot watch '{}'", options.root.display()))?;
        let index_dir = std::path::absolute(&options.index_dir)
            .and_then(|dir| dir.canonicalize())
            .with_context(|| format!("cannot find the index '{}'", options.index_dir.display()))?;
        let (sender, messages) = mpsc::channel();
        let changed = sender.clone();
        let event_root = root.clone();
        let handler = move |event: notify::Result<Event>| {
            if is_relevant(&event, &event_root, &index_dir) {
                let _ = changed.send(Message::Changed(told(&event, &index_dir)));
            }
        };
        // Links are not followed, as the walk does not follow them: an
        // edit under a linked folder is no change to the index.
        let config = notify::Config::default().with_follow_symlinks(false);
        let mut watcher = RecommendedWatcher::new(handler, config)
            .context("cannot start watching for file changes")?;
        watcher
            .watch(&root, RecursiveMode::Recursive)
            .map_err(|err| match err.kind {
                notify::ErrorKind::MaxFilesWatch => anyhow::anyhow!(
                    "cannot watch '{}': the system's limit on watched folders was reached \
                     (on Linux raise it with 'sysctl fs.inotify.max_user_watches=524288')",
                    root.display()
                ),
                _ => anyhow::Error::new(err).context(format!("cannot watch '{}'", root.display())),
            })?;
        Ok(Self {
            _watcher: watcher,
            sender,
            messages,
        })
    }

    fn stopper(&self) -> Stopper {
        Stopper(self.sender.clone())
    }

    /// Calls `run` (handing it `err` and the paths the burst changed, or
    /// `None` when the folder must be walked) after each burst of changes,
    /// until stopped; a failed run is reported on `err` and watching goes
    /// on. `failed`: the run before watching started failed. After a failed
    /// run, whose changes are not in the index, the next run walks.
    fn follow(
        self,
        err: &mut dyn Write,
        mut failed: bool,
        mut run: impl FnMut(&mut dyn Write, Option<Vec<PathBuf>>) -> Result<()>,
    ) {
        loop {
            let mut burst = Burst {
                walk: failed,
                ..Burst::default()
            };
            match self.messages.recv() {
                Ok(Message::Changed(paths)) => burst.add(paths),
                Ok(Message::Stop) | Err(_) => return,
            }
            if !self.settle(&mut burst) {
                return;
            }
            let result = run(err, burst.told());
            heap::give_back();
            failed = result.is_err();
            if let Err(failure) = result {
                report_failure(err, &failure);
            }
        }
    }

    /// Waits until [`QUIET_PERIOD`] passes with no change, or [`MAX_DELAY`]
    /// in all, adding the changes meanwhile to `burst`; false when told to
    /// stop meanwhile.
    fn settle(&self, burst: &mut Burst) -> bool {
        let started = Instant::now();
        loop {
            let wait = QUIET_PERIOD.min(MAX_DELAY.saturating_sub(started.elapsed()));
            if wait.is_zero() {
                return true;
            }
            match self.messages.recv_timeout(wait) {
                Ok(Message::Changed(paths)) => burst.add(paths),
                Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => return false,
                Err(RecvTimeoutError::Timeout) => return true,
            }
        }
    }
}

/// The paths one burst of events changed, each once; `walk` when one
/// event could not tell.
#[derive(Default)]
struct Burst {
    paths: BTreeSet<PathBuf>,
    walk: bool,
}

impl Burst {
    fn add(&mut self, paths: Option<Vec<PathBuf>>) {
        match paths {
            Some(paths) if !self.walk => self.paths.extend(paths),
            _ => self.walk = true,
        }
    }

    /// The paths for the run, or `None`: walk the folder.
    fn told(self) -> Option<Vec<PathBuf>> {
        (!self.walk).then(|| self.paths.into_iter().collect())
    }
}

/// One line on `err` for a run that failed while watching goes on.
fn report_failure(err: &mut dyn Write, failed: &anyhow::Error) {
    let _ = writeln!(err, "memidx: {failed:#}; still watching");
    let _ = err.flush();
}

/// True when `event` may change what is indexed: not a read, and not only
/// inside a hidden folder under `root` or inside `index_dir`. A watcher
/// error counts (something may have been missed, and a run finds out).
fn is_relevant(event: &notify::Result<Event>, root: &Path, index_dir: &Path) -> bool {
    let Ok(event) = event else {
        return true;
    };
    if let EventKind::Access(kind) = event.kind
        && kind != AccessKind::Close(AccessMode::Write)
    {
        return false;
    }
    event.paths.is_empty()
        || event
            .paths
            .iter()
            .any(|path| !path.starts_with(index_dir) && !in_hidden_folder(path, root))
}

/// The paths a relevant `event` names outside `index_dir`, or `None` when
/// it cannot tell what changed: a watcher error (an overflowed queue
/// among them), an event without paths, or one that asks for a rescan.
fn told(event: &notify::Result<Event>, index_dir: &Path) -> Option<Vec<PathBuf>> {
    let event = event.as_ref().ok()?;
    if event.paths.is_empty() || event.need_rescan() {
        return None;
    }
    Some(
        (event.paths.iter())
            .filter(|path| !path.starts_with(index_dir))
            .cloned()
            .collect(),
    )
}

/// True when a folder on the way from `root` to `path` (not `path` itself:
/// a hidden file is reported as skipped, so it counts) starts with `.`.
fn in_hidden_folder(path: &Path, root: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(root) else {
        return false;
    };
    let mut folders = rel.components().collect::<Vec<_>>();
    folders.pop();
    folders.iter().any(|c| match c {
        Component::Normal(name) => name.to_str().is_some_and(|n| n.starts_with('.')),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn event(kind: EventKind, paths: &[&str]) -> notify::Result<Event> {
        let mut event = Event::new(kind);
        for path in paths {
            event = event.add_path(PathBuf::from(path));
        }
        Ok(event)
    }

    #[test]
    fn reads_hidden_folders_and_the_index_folder_are_not_changes() {
        use notify::event::{CreateKind, ModifyKind};
        let (root, index) = (Path::new("/r"), Path::new("/r/idx"));
        let modify = EventKind::Modify(ModifyKind::Any);
        let relevant = |kind, paths: &[&str]| is_relevant(&event(kind, paths), root, index);
        assert!(relevant(modify, &["/r/notes/a.md"]));
        assert!(relevant(modify, &["/r/.hidden.md"]));
        assert!(relevant(modify, &["/r/notes/.gitignore"]));
        assert!(relevant(
            EventKind::Create(CreateKind::Folder),
            &["/r/.git"]
        ));
        assert!(!relevant(modify, &["/r/.git/index"]));
        assert!(!relevant(modify, &["/r/.memidx/gen-2/chunks.bin"]));
        assert!(!relevant(modify, &["/r/idx/meta.json"]));
        assert!(relevant(modify, &["/r/idx/meta.json", "/r/a.md"]));
        assert!(!relevant(
            EventKind::Access(AccessKind::Open(AccessMode::Any)),
            &["/r/a.md"]
        ));
        assert!(relevant(
            EventKind::Access(AccessKind::Close(AccessMode::Write)),
            &["/r/a.md"]
        ));
        assert!(is_relevant(
            &Err(notify::Error::generic("overflow")),
            root,
            index
        ));
    }

    #[test]
    fn a_burst_tells_the_paths_its_events_name_unless_one_cannot_tell() {
        use notify::event::{Flag, ModifyKind};
        let index = Path::new("/r/idx");
        let modify = EventKind::Modify(ModifyKind::Any);
        let told_of = |event: &notify::Result<Event>| told(event, index);
        let mut burst = Burst::default();
        burst.add(told_of(&event(modify, &["/r/b.md", "/r/idx/meta.json"])));
        burst.add(told_of(&event(modify, &["/r/a.md"])));
        burst.add(told_of(&event(modify, &["/r/b.md"])));
        let paths = ["/r/a.md", "/r/b.md"].map(PathBuf::from).to_vec();
        assert_eq!(burst.told(), Some(paths));
        // An error, an event without paths or one asking for a rescan
        // sends the run back to the walk, whatever else the burst holds.
        let rescan = event(modify, &["/r/a.md"]).map(|e| e.set_flag(Flag::Rescan));
        for unsure in [
            Err(notify::Error::generic("overflow")),
            event(modify, &[]),
            rescan,
        ] {
            let mut burst = Burst::default();
            burst.add(told_of(&event(modify, &["/r/a.md"])));
            burst.add(told_of(&unsure));
            burst.add(told_of(&event(modify, &["/r/b.md"])));
            assert_eq!(burst.told(), None);
        }
    }
}
