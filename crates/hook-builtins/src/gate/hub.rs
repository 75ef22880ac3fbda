use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{Notify, watch};

use crate::ports::{ApprovalNotifier, ConfirmationStatus, ConfirmationStore};

/// The in-process registry of confirmation waiters.
///
/// Every waiting [`ConfirmationGateHook`](crate::ConfirmationGateHook) call registers the id of
/// its ConfirmationRequest here. Waiters are woken
/// - at once by [`notify_decided`](ApprovalNotifier::notify_decided), which the decision path of
///   this process ([`decide`](crate::decide)) calls after its CAS succeeded, and
/// - by one shared poll task per hub, which issues **one** [`ConfirmationStore::statuses`] query
///   for all registered ids per poll interval (decisions made by another replica). The interval is
///   the smallest `poll_interval` among the current waiters; with no waiter the task parks and
///   issues no query.
///
/// Create one hub per process ([`ConfirmationHub::new`]) and share it between the gates of every
/// agent and the decision routes. The poll task starts with the first waiter (a Tokio runtime is
/// needed then) and ends when the hub is dropped.
pub struct ConfirmationHub {
    store: Arc<dyn ConfirmationStore>,
    waiters: Mutex<HashMap<String, Slot>>,
    wake: Arc<Notify>,
    poller_started: AtomicBool,
    poll_queries: AtomicU64,
}

struct Slot {
    tx: watch::Sender<Signal>,
    count: usize,
    poll_interval: Duration,
}

/// What a waiter was told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    Waiting,
    /// The row left `pending`; the status when the poll saw it, `None` when woken by a notifier.
    Decided(Option<ConfirmationStatus>),
}

impl ConfirmationHub {
    pub fn new(store: Arc<dyn ConfirmationStore>) -> Arc<Self> {
        Arc::new(ConfirmationHub {
            store,
            waiters: Mutex::new(HashMap::new()),
            wake: Arc::new(Notify::new()),
            poller_started: AtomicBool::new(false),
            poll_queries: AtomicU64::new(0),
        })
    }

    /// The number of distinct ConfirmationRequests being waited for.
    pub fn waiter_count(&self) -> usize {
        self.lock().len()
    }

    /// How many [`ConfirmationStore::statuses`] queries the shared poll has issued so far.
    pub fn poll_queries(&self) -> u64 {
        self.poll_queries.load(Ordering::Relaxed)
    }

    /// Registers a waiter for `confirmation_id`; it unregisters when dropped.
    pub(crate) fn register(self: &Arc<Self>, confirmation_id: &str, poll_interval: Duration) -> Waiter {
        let poll_interval = poll_interval.max(Duration::from_millis(1));
        let rx = {
            let mut waiters = self.lock();
            let slot = waiters.entry(confirmation_id.to_owned()).or_insert_with(|| Slot {
                tx: watch::channel(Signal::Waiting).0,
                count: 0,
                poll_interval,
            });
            slot.count += 1;
            slot.poll_interval = slot.poll_interval.min(poll_interval);
            slot.tx.subscribe()
        };
        self.ensure_poller();
        self.wake.notify_one();
        Waiter { hub: self.clone(), id: confirmation_id.to_owned(), rx }
    }

    fn unregister(&self, confirmation_id: &str) {
        let mut waiters = self.lock();
        if let Some(slot) = waiters.get_mut(confirmation_id) {
            slot.count -= 1;
            if slot.count == 0 {
                waiters.remove(confirmation_id);
            }
        }
    }

    fn signal(&self, confirmation_id: &str, signal: Signal) {
        if let Some(slot) = self.lock().get(confirmation_id) {
            slot.tx.send_replace(signal);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        self.waiters.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The ids being waited for and the poll interval to use, or `None` with no waiter.
    fn snapshot(&self) -> Option<(Vec<String>, Duration)> {
        let waiters = self.lock();
        let interval = waiters.values().map(|s| s.poll_interval).min()?;
        Some((waiters.keys().cloned().collect(), interval))
    }

    fn ensure_poller(self: &Arc<Self>) {
        if self.poller_started.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak = Arc::downgrade(self);
        let wake = self.wake.clone();
        tokio::spawn(poll_loop(weak, wake));
    }
}

async fn poll_loop(hub: Weak<ConfirmationHub>, wake: Arc<Notify>) {
    loop {
        let interval = {
            let Some(hub) = hub.upgrade() else { return };
            hub.snapshot().map(|(_, interval)| interval)
        };
        match interval {
            None => wake.notified().await,
            Some(interval) => tokio::time::sleep(interval).await,
        }
        let Some(hub) = hub.upgrade() else { return };
        let Some((ids, _)) = hub.snapshot() else { continue };
        hub.poll_queries.fetch_add(1, Ordering::Relaxed);
        match hub.store.statuses(&ids).await {
            Ok(statuses) => {
                for (id, status) in statuses {
                    if status.is_final() {
                        hub.signal(&id, Signal::Decided(Some(status)));
                    }
                }
            }
            // Waiters keep waiting; their deadline CAS fails closed if the store stays down.
            Err(e) => tracing::warn!(error = %e, waiters = ids.len(), "confirmation poll failed"),
        }
    }
}

impl ApprovalNotifier for ConfirmationHub {
    fn notify_decided(&self, confirmation_id: &str) {
        self.signal(confirmation_id, Signal::Decided(None));
    }
}

impl Drop for ConfirmationHub {
    fn drop(&mut self) {
        // Lets a parked poll task observe that the hub is gone.
        self.wake.notify_one();
    }
}

impl std::fmt::Debug for ConfirmationHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfirmationHub")
            .field("waiters", &self.waiter_count())
            .field("poll_queries", &self.poll_queries())
            .finish_non_exhaustive()
    }
}

/// One registration in the hub; unregisters on drop (also when the hook's future is abandoned).
pub(crate) struct Waiter {
    hub: Arc<ConfirmationHub>,
    id: String,
    rx: watch::Receiver<Signal>,
}

impl Waiter {
    /// Waits for a decision signal or the deadline; `None` at the deadline.
    pub(crate) async fn wait_until(&mut self, deadline: tokio::time::Instant) -> Option<Option<ConfirmationStatus>> {
        loop {
            if let Signal::Decided(status) = *self.rx.borrow_and_update() {
                return Some(status);
            }
            tokio::select! {
                changed = self.rx.changed() => {
                    if changed.is_err() {
                        // Cannot happen while this waiter holds its slot; wait out the deadline.
                        tokio::time::sleep_until(deadline).await;
                        return None;
                    }
                }
                () = tokio::time::sleep_until(deadline) => return None,
            }
        }
    }

    /// Forgets a decision signal that turned out stale (the row was still pending).
    pub(crate) fn reset(&mut self) {
        self.hub.signal(&self.id, Signal::Waiting);
        self.rx.borrow_and_update();
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        self.hub.unregister(&self.id);
    }
}
