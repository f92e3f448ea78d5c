//! The session's driver task: the only owner of the connection and the only writer of
//! the session's state.

use std::collections::HashMap;

use tokio::sync::{broadcast, mpsc, oneshot, watch};

use super::{Command, Reply, SessionError, SessionEvent, SessionState};
use crate::codec::ProtocolVersion;
use crate::message::{ClientMessage, ServerMessage};
use crate::reconnect::{Event, ReconnectError, ReconnectingClient, Reconnection, Reentry, Room};
use crate::v2::{RoomSnapshot, RoomView, Update};

/// A request waiting for its answer.
struct Waiting {
    /// Its `type`, e.g. "move".
    kind: &'static str,
    answer: oneshot::Sender<Result<Reply, SessionError>>,
}

/// What the driver keeps besides the connection.
struct Books {
    version: ProtocolVersion,
    state: watch::Sender<SessionState>,
    tellers: Tellers,
    waiting: HashMap<u32, Waiting>,
    /// Protocol 2: the room as the events build it.
    view: RoomView,
    /// The `seq` of the session's own `resync`, while it is unanswered.
    resync: Option<u32>,
}

/// Where the driver tells what happens, besides the state.
pub(super) struct Tellers {
    /// Every event, for [`Session::events`](super::Session::events).
    pub(super) events: broadcast::Sender<SessionEvent>,
    /// Reconnections only, for [`Session::reconnections`](super::Session::reconnections).
    pub(super) reconnections: broadcast::Sender<Reconnection>,
}

/// Runs the session until it is closed, every handle is dropped, or the connection
/// gives up.
pub(super) async fn run(
    mut client: ReconnectingClient,
    mut commands: mpsc::Receiver<Command>,
    state: watch::Sender<SessionState>,
    tellers: Tellers,
) {
    let mut books = Books {
        version: client.subprotocol().version,
        state,
        tellers,
        waiting: HashMap::new(),
        view: RoomView::new(),
        resync: None,
    };
    let (reason, closing) = loop {
        // Commands first, so that a busy room cannot hold a request back. Taking a
        // command cancels `recv`, which loses nothing: at worst a reconnection attempt
        // under way starts again (PROTOCOL.md section 10's back-off still applies).
        tokio::select! {
            biased;
            command = commands.recv() => match command {
                None => break ("every handle on the session was dropped".to_owned(), None),
                Some(Command::Close { done }) => {
                    break ("the session was closed".to_owned(), Some(done));
                }
                Some(Command::Request { build, answer, sent }) => {
                    let seq = client.next_seq();
                    let message = build(seq);
                    books.waiting.insert(seq, Waiting { kind: message.kind(), answer });
                    if let Err(err) = client.send(message).await {
                        break (err.to_string(), None);
                    }
                    // A sender that stopped waiting still gets its answer.
                    let _ = sent.send(seq);
                }
            },
            event = client.recv() => match event {
                Ok(event) => {
                    if let Err(err) = books.absorb(&mut client, event).await {
                        break (err.to_string(), None);
                    }
                }
                Err(ReconnectError::Decode(err)) => {
                    books.tell(SessionEvent::Undecodable(err.to_string()));
                }
                Err(err) => break (err.to_string(), None),
            },
        }
    };
    books.end(&reason);
    if let Some(done) = closing {
        let _ = client.close().await;
        let _ = done.send(());
    }
}

impl Books {
    /// Takes in one event from the connection.
    async fn absorb(
        &mut self,
        client: &mut ReconnectingClient,
        event: Event,
    ) -> Result<(), ReconnectError> {
        match event {
            Event::Message(message) => self.take_message(client, message).await?,
            Event::Reconnected(reconnection) => {
                for request in &reconnection.not_resent {
                    if let Some(waiting) = self.waiting.remove(&request.seq()) {
                        let _ = waiting
                            .answer
                            .send(Err(SessionError::OutcomeUnknown { kind: waiting.kind }));
                    }
                }
                if let Reentry::Lost { room, refusal } = &reconnection.room {
                    for request in &reconnection.lost_with_room {
                        if let Some(waiting) = self.waiting.remove(&request.seq()) {
                            let _ = waiting.answer.send(Err(SessionError::RoomLost {
                                kind: waiting.kind,
                                room: room.route().to_owned(),
                                code: refusal.code,
                            }));
                        }
                    }
                }
                let lost = match &reconnection.room {
                    Reentry::Lost { room, .. } => Some(room.clone()),
                    Reentry::NoRoom | Reentry::Rejoined(_) => None,
                };
                if matches!(lost, Some(Room::Lobby { .. })) {
                    self.view = RoomView::new();
                }
                let token = client.token().to_owned();
                self.state.send_modify(|state| {
                    state.reconnections += 1;
                    state.token = token;
                    match lost {
                        Some(Room::Lobby { .. }) => state.room = None,
                        Some(Room::Solo { .. }) => state.solo = None,
                        None => {}
                    }
                });
                // No reader is no error.
                let _ = self.tellers.reconnections.send(reconnection.clone());
                self.tell(SessionEvent::Reconnected(reconnection));
            }
        }
        Ok(())
    }

    async fn take_message(
        &mut self,
        client: &mut ReconnectingClient,
        message: ServerMessage,
    ) -> Result<(), ReconnectError> {
        let moves_before = self.moves();
        match &message {
            ServerMessage::Ack { seq } => {
                if self.resync == Some(*seq) {
                    self.resync = None;
                } else if let Some(waiting) = self.waiting.remove(seq) {
                    if waiting.kind == "leave" {
                        // A solo game's `leave` is answered by `ack` alone; a lobby's
                        // `left` follows its `ack`.
                        self.state.send_if_modified(|state| {
                            state.room.is_none() && state.solo.take().is_some()
                        });
                    }
                    let _ = waiting.answer.send(Ok(Reply::Ack));
                }
            }
            ServerMessage::Error {
                seq: Some(seq),
                code,
                message: text,
            } => {
                if self.resync == Some(*seq) {
                    self.resync = None;
                } else if let Some(waiting) = self.waiting.remove(seq) {
                    let _ = waiting.answer.send(Err(SessionError::Refused {
                        code: *code,
                        message: text.clone(),
                    }));
                }
            }
            ServerMessage::LobbyInfo { seq, lobby } => {
                self.answer(*seq, Reply::LobbyInfo(lobby.clone()));
            }
            ServerMessage::MyGames { seq, games } => {
                self.answer(*seq, Reply::MyGames(games.clone()));
            }
            ServerMessage::State(room) => {
                // Protocol 1: each state is whole; an older one (a resync answer that
                // crossed a broadcast) is ignored.
                let room = RoomSnapshot::from(room.clone());
                self.state.send_if_modified(|state| {
                    let newer = state
                        .room
                        .as_ref()
                        .is_none_or(|held| held.code != room.code || held.version <= room.version);
                    if newer && state.room.as_ref() != Some(&room) {
                        state.room = Some(room);
                        true
                    } else {
                        false
                    }
                });
            }
            ServerMessage::Snapshot(_) | ServerMessage::Moved(_) | ServerMessage::Changed(_) => {
                match self.view.apply(&message) {
                    Ok(Update::Replaced | Update::Applied) => {
                        let room = self.view.room().cloned();
                        self.state.send_modify(|state| state.room = room);
                    }
                    Ok(Update::AlreadyHeld | Update::Left | Update::Unrelated) => {}
                    Err(gap) => self.ask_resync(client, gap.since()).await?,
                }
            }
            ServerMessage::SoloState(solo) => {
                self.state.send_if_modified(|state| {
                    let newer = state
                        .solo
                        .as_ref()
                        .is_none_or(|held| held.id != solo.id || held.version <= solo.version);
                    if newer && state.solo.as_ref() != Some(solo) {
                        state.solo = Some(solo.clone());
                        true
                    } else {
                        false
                    }
                });
            }
            ServerMessage::Left { code } => {
                if self.version == ProtocolVersion::V2 {
                    let _ = self.view.apply(&message);
                }
                self.state.send_if_modified(|state| {
                    if state.room.as_ref().is_some_and(|room| room.code == *code) {
                        state.room = None;
                        true
                    } else {
                        false
                    }
                });
            }
            ServerMessage::Welcome { .. }
            | ServerMessage::Error { seq: None, .. }
            | ServerMessage::Shutdown { .. } => {}
        }
        let moves_after = self.moves();
        for notation in new_moves(&moves_before, &moves_after) {
            self.tell(SessionEvent::MovePlayed {
                notation: notation.clone(),
            });
        }
        self.tell(SessionEvent::Message(message));
        Ok(())
    }

    /// Asks for the versions after `since`, unless a `resync` is already out: its
    /// answer brings the room up to date, and events that came meanwhile are sent
    /// again or are in the snapshot.
    async fn ask_resync(
        &mut self,
        client: &mut ReconnectingClient,
        since: u64,
    ) -> Result<(), ReconnectError> {
        if self.resync.is_none() {
            let seq = client.next_seq();
            client.send(ClientMessage::Resync { seq, since }).await?;
            self.resync = Some(seq);
        }
        Ok(())
    }

    fn answer(&mut self, seq: u32, reply: Reply) {
        if let Some(waiting) = self.waiting.remove(&seq) {
            let _ = waiting.answer.send(Ok(reply));
        }
    }

    /// The moves of the game in view: the room's, or else the solo game's.
    fn moves(&self) -> Vec<String> {
        let state = self.state.borrow();
        if let Some(room) = &state.room {
            return room
                .game
                .as_ref()
                .map(|game| game.moves.clone())
                .unwrap_or_default();
        }
        state
            .solo
            .as_ref()
            .map(|solo| solo.game.moves.clone())
            .unwrap_or_default()
    }

    fn tell(&self, event: SessionEvent) {
        // No reader is no error.
        let _ = self.tellers.events.send(event);
    }

    /// Stops: every waiting request fails, and the state says why.
    fn end(&mut self, reason: &str) {
        for (_, waiting) in self.waiting.drain() {
            let _ = waiting
                .answer
                .send(Err(SessionError::Ended(reason.to_owned())));
        }
        self.state
            .send_modify(|state| state.ended = Some(reason.to_owned()));
        self.tell(SessionEvent::Ended(reason.to_owned()));
    }
}

/// The moves in `after` that `before` did not show: the new tail when the game went
/// on, none when `after` is `before` or an earlier point of it (an undo), and all of
/// them when it is another game.
pub(super) fn new_moves<'a>(before: &[String], after: &'a [String]) -> &'a [String] {
    if after.starts_with(before) {
        &after[before.len()..]
    } else if before.starts_with(after) {
        &[]
    } else {
        after
    }
}
