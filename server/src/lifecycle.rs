//! An instance's life from start to stop, as signals every part can watch:
//! resumed (the stored rooms without a live owner are back), draining (it
//! stops taking rooms and connections and hands its rooms over), closing
//! (the rooms are handed over: connections close), and the count of live
//! WebSocket connections that shutdown waits for. The drain sequence itself
//! is `app::drain`.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::sync::lock;

/// The instance's lifecycle signals; cheap to clone.
#[derive(Debug, Clone)]
pub struct Lifecycle(Arc<Signals>);

#[derive(Debug)]
struct Signals {
    resumed: watch::Sender<bool>,
    draining: watch::Sender<bool>,
    closing: watch::Sender<bool>,
    live_connections: watch::Sender<usize>,
    /// The heartbeat task, once started: it stops when the instance
    /// drains, and the instance says it is gone only after that, so no
    /// beat in flight can mark it alive again.
    heartbeat: Mutex<Option<JoinHandle<()>>>,
}

/// One of the lifecycle's flags, to wait for; once set it stays set.
#[derive(Debug, Clone)]
pub struct Signal(watch::Receiver<bool>);

impl Signal {
    /// Resolves once the flag is set (at once if it is); also when the
    /// lifecycle is gone.
    pub async fn wait(&mut self) {
        let _ = self.0.wait_for(|set| *set).await;
    }

    pub fn is_set(&self) -> bool {
        *self.0.borrow()
    }
}

impl Default for Lifecycle {
    fn default() -> Lifecycle {
        Lifecycle(Arc::new(Signals {
            resumed: watch::channel(true).0,
            draining: watch::channel(false).0,
            closing: watch::channel(false).0,
            live_connections: watch::channel(0).0,
            heartbeat: Mutex::new(None),
        }))
    }
}

impl Lifecycle {
    /// Requests wait for the stored rooms to be back (with a durable store
    /// at start): `false` until [`resumed`](Self::resume_done).
    pub fn resume_pending(&self) {
        self.0.resumed.send_replace(false);
    }

    pub fn resume_done(&self) {
        self.0.resumed.send_replace(true);
    }

    pub fn is_resumed(&self) -> bool {
        *self.0.resumed.borrow()
    }

    /// Set once the stored rooms are back.
    pub fn resumed(&self) -> Signal {
        Signal(self.0.resumed.subscribe())
    }

    /// Stops taking rooms and connections.
    pub fn start_draining(&self) {
        self.0.draining.send_replace(true);
    }

    pub fn is_draining(&self) -> bool {
        *self.0.draining.borrow()
    }

    /// Set once the instance drains.
    pub fn draining(&self) -> Signal {
        Signal(self.0.draining.subscribe())
    }

    /// The rooms are handed over: connections close.
    pub fn close(&self) {
        self.0.closing.send_replace(true);
    }

    /// Set once the rooms are handed over.
    pub fn closing(&self) -> Signal {
        Signal(self.0.closing.subscribe())
    }

    /// Counts a new WebSocket connection, if fewer than `max` are open.
    pub fn open_connection(&self, max: usize) -> bool {
        let mut taken = false;
        self.0.live_connections.send_if_modified(|n| {
            taken = *n < max;
            if taken {
                *n += 1;
            }
            taken
        });
        taken
    }

    /// A counted connection ended.
    pub fn connection_closed(&self) {
        self.0.live_connections.send_modify(|n| *n -= 1);
    }

    /// WebSocket connections open now.
    pub fn connections(&self) -> usize {
        *self.0.live_connections.borrow()
    }

    /// Resolves once no WebSocket connection is open.
    pub async fn all_connections_closed(&self) {
        let mut live = self.0.live_connections.subscribe();
        let _ = live.wait_for(|n| *n == 0).await;
    }

    /// Keeps the heartbeat task, for [`take_heartbeat`](Self::take_heartbeat).
    pub fn keep_heartbeat(&self, task: JoinHandle<()>) {
        *lock(&self.0.heartbeat) = Some(task);
    }

    pub fn take_heartbeat(&self) -> Option<JoinHandle<()>> {
        lock(&self.0.heartbeat).take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_counted_up_to_the_cap() {
        let life = Lifecycle::default();
        assert!(life.open_connection(2));
        assert!(life.open_connection(2));
        assert!(!life.open_connection(2), "the cap holds");
        assert_eq!(life.connections(), 2);
        life.connection_closed();
        assert!(life.open_connection(2));
    }

    #[tokio::test]
    async fn a_signal_once_set_stays_set_for_every_watcher() {
        let life = Lifecycle::default();
        let mut early = life.draining();
        assert!(!early.is_set() && !life.is_draining());
        let waiter = tokio::spawn(async move { early.wait().await });
        life.start_draining();
        waiter.await.unwrap();
        let mut late = life.draining();
        assert!(late.is_set());
        late.wait().await;
        late.wait().await;
    }

    #[tokio::test]
    async fn shutdown_waits_for_the_last_connection() {
        let life = Lifecycle::default();
        assert!(life.open_connection(10));
        let waiting = life.clone();
        let done = tokio::spawn(async move { waiting.all_connections_closed().await });
        tokio::task::yield_now().await;
        assert!(!done.is_finished());
        life.connection_closed();
        done.await.unwrap();
    }
}
