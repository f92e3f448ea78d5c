//! Where an instance's solo games send their searches: the local queue
//! (no Redis) or the Redis job stream, behind one interface.

use std::sync::Arc;

use jumpgate_protocol::SearchQueuePlace;

use super::jobs::JobQueue;
use super::pool::{Busy, SearchJob, SearchQueue, Ticket};
use crate::bots::Level;

/// The computer's searchers as a solo game sees them.
#[derive(Debug, Clone)]
pub enum Searchers {
    /// This instance's own threads (see `pool`).
    Local(Arc<SearchQueue>),
    /// Jobs on Redis, worked by every searcher of the deployment (see `jobs`).
    Jobs(Arc<JobQueue>),
}

impl Searchers {
    /// Asks for a search; its move arrives on the ticket.
    pub fn submit(&self, job: SearchJob) -> Ticket {
        match self {
            Searchers::Local(queue) => queue.submit(job),
            Searchers::Jobs(queue) => queue.submit(job),
        }
    }

    /// Where a search stands; `None` once its move arrived.
    pub fn place(&self, id: u64) -> Option<SearchQueuePlace> {
        match self {
            Searchers::Local(queue) => queue.place(id),
            Searchers::Jobs(queue) => queue.place(id),
        }
    }

    /// Whether a new game against the computer may start now.
    pub fn admit(&self, level: Level) -> Result<(), Busy> {
        match self {
            Searchers::Local(queue) => queue.admit(level),
            Searchers::Jobs(queue) => queue.admit(level),
        }
    }
}
