//! The task that owns one lobby: it holds the [`Lobby`] value and its
//! connections, and performs what the pure transitions leave to do —
//! storing every change (conditionally, resolving unknown outcomes), taking
//! and settling stakes, recording series, running the clock, and fanning
//! out each confirmed change (a protocol 2 event or snapshot, a protocol 1
//! `state`), each frame encoded once per encoding. Connections
//! talk to it through its [`RoomHandle`]; everything it sends a connection goes
//! through that connection's one ordered queue.
//!
//! Over 700 lines: the mailbox loop and the handling of each command work on
//! the room's private state together; storage, stakes and the view are
//! split out.

mod deps;
mod feed;
mod handle;
mod stakes;
mod storage;
pub mod view;

use std::sync::Arc;

use jumpgate_protocol as wire;
use jumpgate_protocol::{ErrorCode, ServerMessage};
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Duration, Instant, sleep_until};

use crate::code::RoomCode;
use crate::lobby::{
    Action, Applied, ClockEvent, Lobby, LobbyError, LobbyOptions, Phase, ResumeError, WallClock,
};
use crate::outbound::{ConnId, Member, Outbound, Refusal, SharedFrame};
use crate::records::Records;
use crate::store::{OwnerEpoch, Store, StoredRoom};
use crate::wallet::Wallets;

pub use self::deps::{RoomDeps, RoomSettings};
pub use self::handle::{RoomHandle, RoomStopped};

/// Messages to a room task (sent through a [`RoomHandle`]).
#[derive(Debug)]
enum RoomCommand {
    /// Join (take or retake a seat) or watch. The room answers on the
    /// member's queue: `ack` and a `state`, or the refusal; `reply` only
    /// says whether the connection is now in the room.
    Enter {
        member: Member,
        seq: u32,
        invite: Option<String>,
        watch: bool,
        reply: oneshot::Sender<Entered>,
    },
    Act {
        conn: ConnId,
        seq: u32,
        action: Action,
        /// With [`Action::Resync`] from a protocol 2 member: the version it
        /// holds (`resync.since`); it gets the events after it, or a
        /// `snapshot`. `None`: a full v1 `state`.
        since: Option<u64>,
    },
    /// Leave the lobby (giving up the seat). `out` answers even a leave
    /// re-sent after the first one's outcome was unknown.
    Leave {
        conn: ConnId,
        seq: u32,
        out: mpsc::Sender<Outbound>,
    },
    Disconnect {
        conn: ConnId,
    },
    /// The lobby's public summary; `None` (answered as a code without a
    /// lobby) for an invite-only lobby asked without its invite by someone
    /// holding no seat there (`who`: the asking identity, if any).
    Summary {
        who: Option<String>,
        invite: Option<String>,
        reply: oneshot::Sender<Option<wire::LobbySummary>>,
    },
    /// The lobby's finished games as PDN; `None` as for `Summary`.
    Games {
        invite: Option<String>,
        reply: oneshot::Sender<Option<Vec<String>>>,
    },
    /// The current game's moves, to replay into its position after every
    /// ply outside the room's task; `None` as for `Summary`.
    Positions {
        invite: Option<String>,
        reply: oneshot::Sender<Option<view::PositionsReplay>>,
    },
    /// Give the room up for another instance: store everything, release
    /// ownership, tell the members to reconnect, stop. Replies whether it
    /// did (not while the store cannot confirm what the room holds).
    HandOver {
        /// The instance that asked for it, or `None` (shutting down) for
        /// whoever takes it.
        to: Option<String>,
        reply: oneshot::Sender<bool>,
    },
    /// Stop if the store names another owner (after this instance was
    /// counted dead for a while).
    CheckOwner,
}

/// What became of an [`RoomCommand::Enter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entered {
    /// The connection is in the room now.
    Yes,
    /// Refused (the refusal is on the member's queue).
    No,
    /// The room was unloaded from memory just before it could answer (a
    /// correspondence lobby nobody was connected to): nothing was done;
    /// look the room up again, which loads it.
    Unloaded,
}

/// A command and when it was sent, so the room can tell how long its
/// mailbox made it wait.
#[derive(Debug)]
pub(crate) struct Queued {
    at: Instant,
    command: RoomCommand,
}

/// The sending side of a room's mailbox.
#[derive(Clone, Debug)]
struct Mailbox(mpsc::Sender<Queued>);

/// A room's mailbox holding `capacity` commands: the sending side for
/// handles, the receiving side for [`Room::run`].
fn mailbox(capacity: usize) -> (Mailbox, mpsc::Receiver<Queued>) {
    let (tx, rx) = mpsc::channel(capacity);
    (Mailbox(tx), rx)
}

impl Mailbox {
    /// Queues a command; `Err` if the room has stopped.
    async fn send(&self, command: RoomCommand) -> Result<(), RoomCommand> {
        let queued = Queued {
            at: Instant::now(),
            command,
        };
        self.0.send(queued).await.map_err(|e| e.0.command)
    }

    /// Whether the room has stopped taking commands.
    fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

/// The state one room task owns.
#[derive(Debug)]
pub struct Room {
    lobby: Lobby,
    settings: Arc<RoomSettings>,
    store: Arc<dyn Store>,
    wallets: Arc<dyn Wallets>,
    records: Arc<dyn Records>,
    members: Vec<Member>,
    /// This instance's claim on the room: every write is fenced by it.
    owner: OwnerEpoch,
    /// The version the store is known to hold.
    stored_version: u64,
    /// The last write sent, kept so that resending it sends the same bytes
    /// (the record holds clock deadlines that would differ if rebuilt).
    last_attempt: Option<(u64, String)>,
    /// Since when memory has been ahead of the store: a write failed or its
    /// outcome is unknown. Nothing is shown, acknowledged or timed until the
    /// store has caught up; the clocks then get this time back.
    unsaved_since: Option<Instant>,
    /// The store refused a write as not following from what it holds: the
    /// room reloads itself from the store before doing anything else.
    stale: bool,
    /// The stored room is gone, does not replay, or belongs to another
    /// instance now: this task stops.
    halted: bool,
    /// Seated accounts' records and their head-to-head, as last read.
    record_views: [Option<wire::RecordView>; 2],
    head_to_head: Option<wire::HeadToHead>,
    /// Since when nobody has been connected while no game was in play.
    idle_since: Option<Instant>,
    /// Closed for having been idle too long, or (correspondence) for having
    /// had no move for the expiry window.
    expired: bool,
    /// Seat holders whose "my games" index is known to list this lobby.
    indexed: Vec<String>,
    /// Unloaded from memory (a correspondence lobby nobody is connected
    /// to): stored, released for whoever next asks for it.
    unloaded: bool,
    /// What the protocol 2 members have been shown, and its recent events.
    feed: feed::Feed,
    /// `moves_accepted_total` for this lobby's rule set, looked up once.
    moves_accepted: prometheus::IntCounter,
}

/// Both clocks now.
fn wall_clock() -> WallClock {
    WallClock {
        now: Instant::now().into_std(),
        unix_ms: crate::sync::now_ms(),
    }
}

fn now() -> std::time::Instant {
    Instant::now().into_std()
}

impl Room {
    pub fn new(
        code: RoomCode,
        options: LobbyOptions,
        host: &crate::identity::Identity,
        deps: &RoomDeps,
    ) -> Room {
        let invite = options.invite_only.then(|| nanoid::nanoid!(22));
        let lobby = Lobby::new(
            code,
            options,
            invite,
            &host.id,
            deps.settings.timing(),
            rand::random(),
            now(),
        );
        let owner = OwnerEpoch::first(&deps.settings.instance_id);
        Room::around(lobby, owner, 0, deps)
    }

    fn around(lobby: Lobby, owner: OwnerEpoch, stored_version: u64, deps: &RoomDeps) -> Room {
        Room {
            settings: deps.settings.clone(),
            store: deps.store.clone(),
            wallets: deps.wallets.clone(),
            records: deps.records.clone(),
            members: Vec::new(),
            owner,
            stored_version,
            last_attempt: None,
            unsaved_since: None,
            stale: false,
            halted: false,
            record_views: [None, None],
            head_to_head: None,
            idle_since: None,
            expired: false,
            indexed: Vec::new(),
            unloaded: false,
            moves_accepted: crate::metrics::METRICS
                .moves_accepted
                .with_label_values(&[lobby.options.rule_set.name()]),
            lobby,
            feed: feed::Feed::default(),
        }
    }

    pub fn code(&self) -> &RoomCode {
        &self.lobby.code
    }

    /// The invite token of an invite-only lobby.
    pub fn invite(&self) -> Option<&str> {
        self.lobby.invite.as_deref()
    }

    /// Rebuilds a room from the store, claimed by `owner`; the side to move
    /// gets at least `grace` from now (see [`Lobby::from_record`]).
    pub fn resume(
        stored: StoredRoom,
        owner: OwnerEpoch,
        grace: std::time::Duration,
        deps: &RoomDeps,
    ) -> Result<Room, ResumeError> {
        let lobby = Lobby::from_record(
            &stored.record,
            &stored.moves,
            deps.settings.timing(),
            wall_clock(),
            grace,
            rand::random(),
        )?;
        let version = lobby.version;
        Ok(Room::around(lobby, owner, version, deps))
    }

    fn is_empty(&self) -> bool {
        self.members.is_empty() && self.lobby.seats.iter().all(Option::is_none)
    }

    /// Whether the lobby can close: nobody is left (or nobody came back),
    /// and no money or record is still to be moved — a lobby with those
    /// stays listed in the store, so a restart finishes them.
    fn can_close(&self) -> bool {
        (self.is_empty() || self.expired)
            && self.lobby.escrow_intent.is_none()
            && self.lobby.pending_settlement.is_none()
            && self.lobby.pending_record.is_none()
    }

    /// Whether memory is ahead of the store.
    fn unsaved(&self) -> bool {
        self.unsaved_since.is_some()
    }

    /// Whether something is waiting on the store or the wallets.
    fn in_doubt(&self) -> bool {
        self.unsaved()
            || self.stale
            || self.lobby.escrow_intent.is_some()
            || self.lobby.pending_settlement.is_some()
            || self.lobby.pending_record.is_some()
    }

    /// The room's handle, and its task to spawn (a mailbox of 256
    /// commands between them).
    pub fn start(self) -> (RoomHandle, impl std::future::Future<Output = ()> + Send) {
        let (tx, rx) = mailbox(256);
        (RoomHandle::new(self.code().clone(), tx), self.run(rx))
    }

    /// Runs the room until nobody is seated or connected.
    async fn run(mut self, mut commands: mpsc::Receiver<Queued>) {
        let metrics = &crate::metrics::METRICS;
        let rule_set = self.lobby.options.rule_set.name();
        metrics.lobbies_live.with_label_values(&[rule_set]).inc();
        let mut counted_game = self.lobby.game_in_play();
        if counted_game {
            metrics.games_live.with_label_values(&[rule_set]).inc();
        }
        // Whatever a crash interrupted is finished (a settlement, a record)
        // or undone (a series start whose stakes were being taken) first.
        self.settle_doubts().await;
        self.record_pending().await;
        self.refresh_records().await;
        // The game's clock or break deadline: one timer for the room's
        // life, moved only when the deadline does (not made, registered and
        // dropped again for every command).
        let clock = sleep_until(Instant::now());
        tokio::pin!(clock);
        let mut clock_at: Option<Instant> = None;
        loop {
            let now_live = self.lobby.game_in_play();
            if now_live != counted_game {
                let gauge = metrics.games_live.with_label_values(&[rule_set]);
                if now_live {
                    gauge.inc()
                } else {
                    gauge.dec()
                }
                counted_game = now_live;
            }
            // A live lobby nobody is connected to, with no game in play,
            // closes after a while (a game in play ends by its clock first).
            // A correspondence lobby lasts until it expires (or both
            // players leave): nobody connected, it is unloaded from memory
            // (with Redis), unless its match was ended for good, when it
            // closes like a live one.
            let correspondence = self.lobby.is_correspondence();
            let ended = self.lobby.phase == Phase::Ended;
            let unloads = correspondence && !ended && self.store.is_durable();
            let closes_when_idle = if correspondence {
                ended
            } else {
                !matches!(self.lobby.phase, Phase::Playing | Phase::Break)
            };
            let idle = self.members.is_empty() && (unloads || closes_when_idle);
            if !idle {
                self.idle_since = None;
            } else if self.idle_since.is_none() {
                self.idle_since = Some(Instant::now());
            }
            let timer = self.next_timer();
            if let Some(t) = timer
                && timer != clock_at
            {
                clock.as_mut().reset(t);
            }
            clock_at = timer;
            let retry = self.in_doubt().then(|| Instant::now() + STORE_RETRY);
            let idle_after = if unloads {
                self.settings.correspondence_unload
            } else {
                self.settings.idle_lobby
            };
            let idle_end = self
                .idle_since
                .filter(|_| !self.expired)
                .map(|t| t + idle_after);
            tokio::select! {
                // A timer that is due goes first: a lobby loaded after its
                // expiry ends before anyone can act in it.
                biased;
                () = &mut clock, if clock_at.is_some() => self.on_timer().await,
                queued = commands.recv() => match queued {
                    Some(Queued { at, command }) => {
                        metrics
                            .room_mailbox_wait_seconds
                            .observe(at.elapsed().as_secs_f64());
                        self.handle(command).await;
                    }
                    None => break,
                },
                () = sleep_or_forever(retry) => {
                    self.settle_doubts().await;
                }
                () = sleep_or_forever(idle_end) => {
                    if unloads {
                        self.unload().await;
                    } else {
                        tracing::info!(room = %self.lobby.code, "closing a lobby nobody came back to");
                        self.expired = true;
                    }
                }
            }

            if self.halted {
                break;
            }
            self.settle_pending().await;
            self.record_pending().await;
            if self.can_close() && !self.stale {
                // Nobody left, or nobody came back: the lobby closes; its
                // keys expire. It ends only once the store has that.
                self.commit_or_retry().await;
                if !self.unsaved() {
                    // Anyone still here (a correspondence lobby that just
                    // expired) is out of it now.
                    self.halt();
                    break;
                }
            }
        }
        if self.unloaded {
            // Requests that reached the mailbox after the room was stored
            // and released are answered from what it held, or sent to
            // look it up again (which loads it).
            commands.close();
            while let Ok(queued) = commands.try_recv() {
                self.answer_unloaded(queued.command).await;
            }
        }
        if counted_game {
            metrics.games_live.with_label_values(&[rule_set]).dec();
        }
        metrics.lobbies_live.with_label_values(&[rule_set]).dec();
        if self.unsaved_since.is_some() {
            metrics.rooms_awaiting_store.dec();
        }
        tracing::debug!(room = %self.lobby.code, "room closed");
    }

    /// The next clock or break deadline. Clocks stand still while the room
    /// waits on the store (they get that time back when it answers).
    fn next_timer(&self) -> Option<Instant> {
        if self.unsaved() || self.stale || self.lobby.escrow_intent.is_some() {
            return None;
        }
        self.lobby.next_deadline().map(Instant::from_std)
    }

    async fn on_timer(&mut self) {
        let finished_before = self.lobby.series.result;
        match self.lobby.on_clock(now()) {
            ClockEvent::Nothing => return,
            ClockEvent::Forfeit(_) => {
                tracing::debug!(room = %self.lobby.code, "move clock lapsed");
                crate::metrics::METRICS
                    .clock_forfeits
                    .with_label_values(&[self.lobby.options.rule_set.name()])
                    .inc();
            }
            ClockEvent::Expired => {
                tracing::info!(room = %self.lobby.code, "correspondence lobby expired with no move");
                crate::metrics::METRICS.correspondence_expired.inc();
                self.expired = true;
            }
            ClockEvent::NextRound => {}
        }
        self.count_series_end(finished_before);
        self.commit_or_retry().await;
        self.broadcast();
    }

    /// Counts a series that a transition just finished.
    fn count_series_end(&self, before: Option<crate::lobby::SeriesResult>) {
        if let Some(result) = self.lobby.series.result
            && before != Some(result)
        {
            crate::metrics::METRICS
                .series_finished
                .with_label_values(&[view::series_end(result.reason).as_str()])
                .inc();
        }
    }

    async fn handle(&mut self, command: RoomCommand) {
        match command {
            RoomCommand::Enter {
                member,
                seq,
                invite,
                watch,
                reply,
            } => {
                let ready = self.settle_doubts().await;
                // Someone the lobby does not show itself to learns nothing
                // else either, not even that its storage is slow.
                if !self
                    .lobby
                    .admits(Some(&member.identity.id), invite.as_deref())
                {
                    refuse_entry(&member.out, reply, seq, refusal(LobbyError::NotInvited));
                    return;
                }
                if !ready {
                    refuse_entry(&member.out, reply, seq, storage_unavailable());
                    return;
                }
                let seated_before = seat_ids(&self.lobby);
                // A seated player counts as present while any connection of
                // theirs is in the room (PROTOCOL.md section 11).
                let members = &self.members;
                let present = |id: &str| members.iter().any(|m| m.identity.id == id);
                if let Err(e) =
                    self.lobby
                        .enter(&member.identity, invite.as_deref(), watch, &present, now())
                {
                    refuse_entry(&member.out, reply, seq, refusal(e));
                    return;
                }
                let out = member.out.clone();
                let conn = member.conn;
                if member.version == wire::ProtocolVersion::V2 {
                    self.feed.note_entry(conn);
                }
                self.members.push(member);
                let result = self.save_requested().await;
                if result.is_ok() && seat_ids(&self.lobby) != seated_before {
                    self.refresh_records().await;
                }
                match result {
                    Ok(()) => {
                        self.send_to(conn, ServerMessage::Ack { seq });
                        let _ = reply.send(Entered::Yes);
                        self.broadcast();
                    }
                    Err(r) => {
                        // The connection is not attached; a seat taken
                        // stays taken once stored, and joining again gets it.
                        self.members.retain(|m| m.conn != conn);
                        refuse_entry(&out, reply, seq, r);
                        self.broadcast();
                    }
                }
            }
            RoomCommand::HandOver { to, reply } => {
                let done = self.hand_over(to.as_deref()).await;
                let _ = reply.send(done);
            }
            RoomCommand::CheckOwner => self.check_owner().await,
            RoomCommand::Act {
                conn,
                seq,
                action,
                since,
            } => {
                let is_move = matches!(action, Action::Move { .. });
                let started = std::time::Instant::now();
                let finished_before = self.lobby.series.result;
                let ready = self.settle_doubts().await;
                let seats_before = seat_ids(&self.lobby);
                let result = if !ready {
                    Err(storage_unavailable())
                } else {
                    // The member's id is borrowed, not cloned, for the act.
                    let acted = self
                        .members
                        .iter()
                        .find(|m| m.conn == conn)
                        .map(|m| self.lobby.act(&m.identity.id, seq, action, now()));
                    match acted {
                        None => Err(Refusal::new(
                            ErrorCode::NotInLobby,
                            "you are not in this lobby",
                        )),
                        Some(acted) => match acted {
                            Ok(Applied::Changed) => {
                                let saved = self.save_requested().await;
                                if is_move {
                                    // Applied whether or not the store has
                                    // confirmed it yet: shown as a `moved`
                                    // once it has, if nothing else came between.
                                    self.feed.note_move(self.lobby.version);
                                }
                                saved.map(|()| true)
                            }
                            Ok(Applied::Unchanged) => Ok(false),
                            Ok(Applied::Resync) => {
                                if let Some(since) = since {
                                    self.resync(conn, seq, since);
                                    return;
                                }
                                let state = ServerMessage::State(self.state());
                                self.send_to(conn, ServerMessage::Ack { seq });
                                self.send_to(conn, state);
                                return;
                            }
                            Err(e) => Err(refusal(e)),
                        },
                    }
                };
                if is_move {
                    let metrics = &crate::metrics::METRICS;
                    match &result {
                        Ok(_) => self.moves_accepted.inc(),
                        Err(r) => metrics
                            .moves_rejected
                            .with_label_values(&[r.code.as_str()])
                            .inc(),
                    }
                    metrics
                        .move_handling_seconds
                        .observe(started.elapsed().as_secs_f64());
                }
                match result {
                    Ok(changed) => {
                        self.count_series_end(finished_before);
                        if seat_ids(&self.lobby) != seats_before {
                            // A rematch swapped the seats: the cached
                            // records follow their players.
                            self.record_views.swap(0, 1);
                            if let Some(h2h) = &mut self.head_to_head {
                                h2h.wins.reverse();
                            }
                        }
                        self.send_to(conn, ServerMessage::Ack { seq });
                        if changed {
                            self.broadcast();
                        }
                    }
                    Err(refusal) => {
                        let insufficient = refusal.code == ErrorCode::InsufficientFunds;
                        self.send_to(
                            conn,
                            ServerMessage::Error {
                                seq: Some(seq),
                                code: refusal.code,
                                message: refusal.message,
                            },
                        );
                        if insufficient {
                            // The rematch calls were cleared.
                            self.broadcast();
                        }
                    }
                }
            }
            RoomCommand::Leave { conn, seq, out } => {
                let reply = |messages: Vec<ServerMessage>| {
                    for message in messages {
                        let _ = out.try_send(Outbound::Direct(Box::new(message)));
                    }
                };
                if !self.settle_doubts().await {
                    reply(vec![ServerMessage::Error {
                        seq: Some(seq),
                        code: ErrorCode::StorageUnavailable,
                        message: "the lobby could not be saved just now; send leave again with the same seq".into(),
                    }]);
                    return;
                }
                let Some(index) = self.members.iter().position(|m| m.conn == conn) else {
                    // Already gone: a leave re-sent after its outcome was
                    // unknown, and now stored.
                    reply(vec![
                        ServerMessage::Ack { seq },
                        ServerMessage::Left {
                            code: self.lobby.code.to_string(),
                        },
                    ]);
                    return;
                };
                let finished_before = self.lobby.series.result;
                let member = self.members.remove(index);
                let id = member.identity.id;
                if self.lobby.seat_of(&id).is_some() {
                    self.lobby.leave(&id);
                    // Other connections of the same player leave the seat too.
                    self.members.retain(|m| m.identity.id != id);
                }
                self.count_series_end(finished_before);
                let messages = match self.save_requested().await {
                    Ok(()) => vec![
                        ServerMessage::Ack { seq },
                        ServerMessage::Left {
                            code: self.lobby.code.to_string(),
                        },
                    ],
                    Err(refusal) => vec![ServerMessage::Error {
                        seq: Some(seq),
                        code: refusal.code,
                        message: "leaving is not confirmed yet; send leave again with the same seq to learn the outcome".into(),
                    }],
                };
                reply(messages);
                self.broadcast();
            }
            RoomCommand::Disconnect { conn } => {
                self.feed.take_unshown(conn);
                self.members.retain(|m| m.conn != conn);
                self.commit_or_retry().await;
                self.broadcast();
            }
            RoomCommand::Summary { who, invite, reply } => {
                let summary = self
                    .lobby
                    .admits(who.as_deref(), invite.as_deref())
                    .then(|| self.summary());
                let _ = reply.send(summary);
            }
            RoomCommand::Games { invite, reply } => {
                if !self.lobby.admits(None, invite.as_deref()) {
                    let _ = reply.send(None);
                    return;
                }
                let games = self
                    .store
                    .games(self.lobby.code.as_str())
                    .await
                    .unwrap_or_default();
                let _ = reply.send(Some(games));
            }
            RoomCommand::Positions { invite, reply } => {
                let positions = self
                    .lobby
                    .admits(None, invite.as_deref())
                    .then(|| self.positions());
                let _ = reply.send(positions);
            }
        }
    }

    fn member(&self, conn: ConnId) -> Option<&Member> {
        self.members.iter().find(|m| m.conn == conn)
    }

    fn send_to(&mut self, conn: ConnId, message: ServerMessage) {
        if let Some(m) = self.member(conn)
            && m.out.try_send(Outbound::Direct(Box::new(message))).is_err()
        {
            crate::metrics::METRICS.slow_consumers_dropped.inc();
            m.kick.notify_one();
        }
    }

    /// Shows every member the room as it is now, each frame encoded once
    /// per encoding: v1 members a full `state`, v2 members the event for
    /// the new version (or a `snapshot`, see [`feed`]). Nothing is shown
    /// that the store has not confirmed: while a write is unconfirmed this
    /// does nothing, and the change goes out once it is.
    fn broadcast(&mut self) {
        if self.unsaved() || self.stale {
            return;
        }
        let speaks = |version| self.members.iter().any(|m| m.version == version);
        let (any_v1, any_v2) = (
            speaks(wire::ProtocolVersion::V1),
            speaks(wire::ProtocolVersion::V2),
        );
        // The full state is built only for v1 members (and, for v2, when
        // a change other than a move needs comparing).
        let state = any_v1.then(|| self.state());
        let v2 = if any_v2 {
            self.v2_frames(state.as_ref())
        } else {
            self.feed.forget();
            feed::V2Frames {
                shown: None,
                first: None,
            }
        };
        let v1 = state.map(|state| Arc::new(SharedFrame::new(ServerMessage::State(state))));
        let feed = &mut self.feed;
        self.members.retain(|m| {
            let frame = match m.version {
                wire::ProtocolVersion::V1 => &v1,
                wire::ProtocolVersion::V2 if feed.take_unshown(m.conn) => &v2.first,
                wire::ProtocolVersion::V2 => &v2.shown,
            };
            let Some(frame) = frame else {
                return true;
            };
            match m.out.try_send(Outbound::Shared(frame.clone())) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    tracing::info!(conn = m.conn, "dropping a slow consumer");
                    crate::metrics::METRICS.slow_consumers_dropped.inc();
                    m.kick.notify_one();
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            }
        });
    }
}

/// Refuses an entry: the error on the connection's queue, and "not in".
fn refuse_entry(
    out: &mpsc::Sender<Outbound>,
    reply: oneshot::Sender<Entered>,
    seq: u32,
    r: Refusal,
) {
    let error = ServerMessage::error(Some(seq), r.code, &r.message);
    let _ = out.try_send(Outbound::Direct(Box::new(error)));
    let _ = reply.send(Entered::No);
}

/// Who sits where, to tell whether a change moved anyone.
fn seat_ids(lobby: &Lobby) -> [Option<String>; 2] {
    [0, 1].map(|i| lobby.seats[i].as_ref().map(|s| s.id.clone()))
}

/// A lobby refusal as the protocol says it.
pub fn refusal(e: LobbyError) -> Refusal {
    let code = match &e {
        LobbyError::NotInvited => ErrorCode::UnknownLobby,
        LobbyError::AccountRequired => ErrorCode::AccountRequired,
        LobbyError::LobbyFull => ErrorCode::LobbyFull,
        LobbyError::SpectatorsCannotAct => ErrorCode::SpectatorsCannotAct,
        LobbyError::NotYourTurn => ErrorCode::NotYourTurn,
        LobbyError::DrawAlreadyOffered => ErrorCode::DrawAlreadyOffered,
        LobbyError::NoDrawOffer => ErrorCode::NoDrawOffer,
        LobbyError::NoGameInProgress => ErrorCode::NoGameInProgress,
        LobbyError::NotHost => ErrorCode::NotHost,
        LobbyError::NotNow(_) => ErrorCode::NotNow,
        LobbyError::IllegalMove(_) => ErrorCode::IllegalMove,
        LobbyError::ClaimTooEarly(_) => ErrorCode::ClaimTooEarly,
    };
    Refusal::new(code, e.to_string())
}

/// How soon a failed background write is retried.
const STORE_RETRY: Duration = Duration::from_secs(1);

fn storage_unavailable() -> Refusal {
    Refusal::new(
        ErrorCode::StorageUnavailable,
        "the change could not be confirmed yet; send it again with the same seq to learn the outcome",
    )
}

async fn sleep_or_forever(deadline: Option<Instant>) {
    match deadline {
        Some(t) => sleep_until(t).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod feed_tests;
#[cfg(test)]
mod tests;
