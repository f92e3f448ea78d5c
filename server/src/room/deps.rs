//! What a room task needs from the rest of the server, bundled once at
//! start ([`RoomDeps`]): the settings that shape a lobby's life (and none
//! it has no business seeing, such as the token secret), and the stores it
//! writes to.

use std::sync::Arc;
use std::time::Duration;

use crate::lobby::Timing;
use crate::records::{RankThresholds, Records};
use crate::store::Store;
use crate::wallet::Wallets;

/// The settings a room reads.
#[derive(Debug, Clone)]
pub struct RoomSettings {
    /// This instance, the owner of the rooms it creates.
    pub instance_id: Arc<str>,
    /// Where invite links point.
    pub public_url: String,
    pub move_clock: Duration,
    pub break_time: Duration,
    pub correspondence_claim: Duration,
    pub correspondence_expiry: Duration,
    /// How long a correspondence lobby nobody is connected to stays loaded.
    pub correspondence_unload: Duration,
    /// The least time the side to move gets after the room moved instances.
    pub resume_grace: Duration,
    /// How long a finished lobby's keys are kept.
    pub finished_ttl: Duration,
    /// Rewrite the whole record every this many moves (1: every move).
    pub compact_every: u32,
    /// How long a lobby nobody is in stays open.
    pub idle_lobby: Duration,
    pub rank_thresholds: RankThresholds,
}

impl RoomSettings {
    /// The lobby's clock settings.
    pub fn timing(&self) -> Timing {
        Timing {
            move_clock: self.move_clock,
            break_time: self.break_time,
            claim_after: self.correspondence_claim,
            expire_after: self.correspondence_expiry,
        }
    }
}

/// Everything a room task is given: built once, cloned into every room.
#[derive(Debug, Clone)]
pub struct RoomDeps {
    pub settings: Arc<RoomSettings>,
    pub store: Arc<dyn Store>,
    pub wallets: Arc<dyn Wallets>,
    pub records: Arc<dyn Records>,
}
