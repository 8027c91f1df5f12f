//! What no HTTP client may take all of: sessions and event streams.
//!
//! Sessions are capped at [`MAX_SESSIONS`]: a new one past the cap closes
//! the session idle longest, if it has been idle over [`EVICTABLE_AFTER`],
//! and is refused otherwise (503, saying why), so a client opening
//! sessions in a loop cannot grow the server's memory. Event streams (a
//! GET, which stays open) are one per session and at most a quarter of the
//! connections in all, so clients holding streams open never take every
//! connection. The SDK's session manager holds the sessions; this module
//! only watches them (the ids it gave out, when each was last used).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

/// Sessions at once, at most: each holds a task and its buffers (about
/// 50 KB), so this bounds their memory (about 50 MB).
pub const MAX_SESSIONS: usize = 1000;

/// How long a session must have been idle to be closed for a new one when
/// [`MAX_SESSIONS`] are open (the longest idle first).
pub const EVICTABLE_AFTER: Duration = Duration::from_secs(60);

/// How often the server looks whether sessions ended, to return their
/// memory to the system.
const ENDED_LOOK_EVERY: Duration = Duration::from_secs(30);

/// The sessions the SDK holds, and when each was last used.
pub struct Sessions {
    manager: Arc<LocalSessionManager>,
    cap: usize,
    last_used: Mutex<HashMap<String, Instant>>,
}

impl Sessions {
    /// Watches the sessions `manager` holds, at most `cap` at once
    /// ([`MAX_SESSIONS`] when serving).
    pub fn new(manager: Arc<LocalSessionManager>, cap: usize) -> Self {
        Self {
            manager,
            cap,
            last_used: Mutex::new(HashMap::new()),
        }
    }

    fn last_used(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes that session `id` was given out now.
    pub fn given(&self, id: &str) {
        self.last_used().insert(id.to_string(), Instant::now());
    }

    /// Notes that session `id` was sent a request now, if it was given out:
    /// an id a client made up is not kept.
    pub fn used(&self, id: &str) {
        if let Some(at) = self.last_used().get_mut(id) {
            *at = Instant::now();
        }
    }

    /// Forgets session `id` (the client closed it).
    pub fn closed(&self, id: &str) {
        self.last_used().remove(id);
    }

    /// Returns the memory of sessions that ended to the system, looking
    /// every [`ENDED_LOOK_EVERY`]: when fewer are open than at the last
    /// look, the heap is trimmed (1,000 sessions that expired left 78 MB of
    /// a server that started at 15 MB without it). Runs until the server's
    /// runtime ends.
    pub async fn give_back_ended(&self) {
        let mut every = tokio::time::interval(ENDED_LOOK_EVERY);
        let mut last = 0;
        loop {
            every.tick().await;
            let open = self.manager.sessions.read().await.len();
            if open < last {
                crate::cmd::heap::give_back();
            }
            last = open;
        }
    }

    /// Whether a new session may open: under the cap, or once the session
    /// idle longest (over [`EVICTABLE_AFTER`]) was closed for it.
    pub async fn room_for_one(&self) -> bool {
        let open: Vec<Arc<str>> = self.manager.sessions.read().await.keys().cloned().collect();
        let victim = {
            let mut last_used = self.last_used();
            // Sessions the SDK ended (idle past its keep-alive) are gone.
            let live: HashSet<&str> = open.iter().map(|id| &**id).collect();
            last_used.retain(|id, _| live.contains(id.as_str()));
            if open.len() < self.cap {
                return true;
            }
            (last_used.iter())
                .filter(|(_, at)| at.elapsed() >= EVICTABLE_AFTER)
                .min_by_key(|(_, at)| **at)
                .map(|(id, _)| id.clone())
        };
        let Some(victim) = victim else {
            return false;
        };
        self.closed(&victim);
        let id: Arc<str> = victim.into();
        // Gone meanwhile, or closed now: either way there is room.
        let _ = self.manager.close_session(&id).await;
        true
    }
}

/// The event streams open: how many, and which sessions hold one.
#[derive(Default)]
pub struct Streams {
    open: Mutex<HashSet<String>>,
}

/// Why a stream may not open.
pub enum NoStream {
    /// The session has one open already.
    SessionHasOne,
    /// The streams open are at their cap.
    Full,
}

impl Streams {
    fn open(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens the stream of session `id`, at most `cap` in all: the guard
    /// that closes it when dropped (with the response's body).
    pub fn take(self: &Arc<Self>, id: &str, cap: usize) -> Result<OpenStream, NoStream> {
        let mut open = self.open();
        if open.contains(id) {
            return Err(NoStream::SessionHasOne);
        }
        if open.len() >= cap {
            return Err(NoStream::Full);
        }
        open.insert(id.to_string());
        Ok(OpenStream {
            streams: self.clone(),
            id: id.to_string(),
        })
    }
}

/// An open event stream, counted in [`Streams`] until dropped.
pub struct OpenStream {
    streams: Arc<Streams>,
    id: String,
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.streams.open().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A manager holding `count` sessions, watched with a cap of `count`;
    /// the ids in the order given, and their transports (kept alive).
    async fn full(
        count: usize,
    ) -> (
        Arc<LocalSessionManager>,
        Sessions,
        Vec<String>,
        Vec<impl Sized>,
    ) {
        let manager = Arc::new(LocalSessionManager::default());
        let sessions = Sessions::new(manager.clone(), count);
        let (mut ids, mut transports) = (Vec::new(), Vec::new());
        for _ in 0..count {
            let (id, transport) = manager.create_session().await.expect("a session");
            sessions.given(&id);
            ids.push(id.to_string());
            transports.push(transport);
        }
        (manager, sessions, ids, transports)
    }

    /// Marks session `id` as last used `ago`.
    fn idle(sessions: &Sessions, id: &str, ago: Duration) {
        let at = Instant::now()
            .checked_sub(ago)
            .expect("a clock older than the idle time");
        sessions.last_used().insert(id.to_string(), at);
    }

    async fn held(manager: &LocalSessionManager) -> HashSet<String> {
        manager
            .sessions
            .read()
            .await
            .keys()
            .map(|id| id.to_string())
            .collect()
    }

    #[tokio::test]
    async fn a_full_server_refuses_while_no_session_is_idle_long_enough() {
        let (manager, sessions, ids, _transports) = full(3).await;
        idle(&sessions, &ids[0], EVICTABLE_AFTER - Duration::from_secs(5));
        assert!(!sessions.room_for_one().await);
        assert_eq!(held(&manager).await, ids.iter().cloned().collect());
    }

    #[tokio::test]
    async fn a_full_server_closes_the_session_idle_longest_for_a_new_one() {
        let (manager, sessions, ids, _transports) = full(3).await;
        idle(&sessions, &ids[0], EVICTABLE_AFTER + Duration::from_secs(1));
        idle(
            &sessions,
            &ids[2],
            EVICTABLE_AFTER + Duration::from_secs(30),
        );
        // The one used just now stays.
        sessions.used(&ids[1]);
        assert!(sessions.room_for_one().await);
        let left = held(&manager).await;
        assert_eq!(left, [&ids[0], &ids[1]].into_iter().cloned().collect());
        assert!(!sessions.last_used().contains_key(&ids[2]));
        // Under the cap again: room without closing anything.
        assert!(sessions.room_for_one().await);
        assert_eq!(held(&manager).await, left);
    }

    #[tokio::test]
    async fn sessions_the_sdk_ended_are_forgotten_and_made_up_ids_never_kept() {
        let (manager, sessions, ids, _transports) = full(2).await;
        sessions.used("made-up");
        let id: Arc<str> = ids[0].clone().into();
        manager.close_session(&id).await.expect("closed");
        assert!(sessions.room_for_one().await);
        let kept: HashSet<String> = sessions.last_used().keys().cloned().collect();
        assert_eq!(kept, [ids[1].clone()].into_iter().collect());
    }
}
