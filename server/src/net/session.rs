//! What a connection is doing, as one value — greeting, idle, in a lobby,
//! or attached to a solo game — and the dispatch of every client message
//! from it. Every message type has its arm; every answer is queued on the
//! connection's one outbound queue (rooms and solo games queue theirs on
//! the same one).

use jumpgate_protocol as wire;
use jumpgate_protocol::{ClientMessage, ErrorCode, ServerMessage};

use super::{CLOSE_POLICY, CLOSE_PROTOCOL_ERROR, Connection, Flow};
use crate::identity::Identity;
use crate::lobby::{Action, LobbyOptions};
use crate::outbound::Member;
use crate::room::{Entered, RoomHandle};
use crate::solo::{SoloHandle, SoloRequest};
use crate::wire_view;

/// Where a connection is.
#[derive(Debug)]
pub(super) enum Session {
    /// No `hello` yet.
    Greeting,
    /// Greeted; in no lobby and attached to no solo game.
    Idle { identity: Identity },
    /// In a lobby, seated or watching. `leaving`: the seq of a `leave` sent
    /// to the room and not yet confirmed.
    Lobby {
        identity: Identity,
        room: RoomHandle,
        leaving: Option<u32>,
    },
    /// Attached to the identity's solo game.
    Solo {
        identity: Identity,
        solo: SoloHandle,
    },
}

impl Session {
    fn identity(&self) -> Option<&Identity> {
        match self {
            Session::Greeting => None,
            Session::Idle { identity }
            | Session::Lobby { identity, .. }
            | Session::Solo { identity, .. } => Some(identity),
        }
    }
}

const NOT_IN_LOBBY: &str = "you are not in a lobby";
/// Times a join looks a room up, when it was unloaded under the request.
const ENTRY_ATTEMPTS: usize = 3;
const LEAVE_FIRST: &str = "leave your lobby first";

impl Connection {
    /// Tells the room or the solo game this connection is gone.
    pub(super) async fn leave_session(&mut self) {
        let identity = self.session.identity().cloned();
        let previous = std::mem::replace(
            &mut self.session,
            match identity {
                Some(identity) => Session::Idle { identity },
                None => Session::Greeting,
            },
        );
        match previous {
            Session::Lobby { room, .. } => room.disconnect(self.id).await,
            Session::Solo { solo, .. } => solo.detach(self.id).await,
            Session::Greeting | Session::Idle { .. } => {}
        }
    }

    pub(super) async fn on_message(&mut self, message: ClientMessage) -> Flow {
        let seq = message.seq();
        if let ClientMessage::Hello {
            protocol,
            token,
            name,
            ..
        } = &message
        {
            return self.hello(seq, *protocol, token.as_deref(), name.as_deref());
        }
        let Some(identity) = self.session.identity().cloned() else {
            self.refuse(Some(seq), ErrorCode::HelloRequired, "send hello first");
            return Flow::Continue;
        };
        let in_lobby = matches!(self.session, Session::Lobby { .. });
        match message {
            ClientMessage::Hello { .. } => unreachable!("answered above"),
            ClientMessage::Ping { seq } => self.reply(ServerMessage::Ack { seq }),
            ClientMessage::CreateLobby {
                seq,
                rule_set,
                series_length,
                invite_only,
                stake,
                pace,
                draw_rules,
            } => {
                if in_lobby {
                    self.refuse(Some(seq), ErrorCode::AlreadyInLobby, LEAVE_FIRST);
                    return Flow::Continue;
                }
                let stake = stake.unwrap_or(0);
                if let Err((code, text)) = lobby_options_valid(series_length, stake, &identity) {
                    self.refuse(Some(seq), code, text);
                    return Flow::Continue;
                }
                if !self.may_create_room(seq, &identity) {
                    return Flow::Continue;
                }
                if let Err(r) =
                    crate::my_games::may_take_seat(&*self.state.backends.store, &identity, None)
                        .await
                {
                    self.refuse(Some(seq), r.code, &r.message);
                    return Flow::Continue;
                }
                let options = LobbyOptions {
                    rule_set: wire_view::rule_set_from_wire(rule_set),
                    series_length,
                    invite_only,
                    stake,
                    pace: wire_view::pace_from_wire(pace.unwrap_or_default()),
                    draw_rules: wire_view::draw_rules_from_wire(draw_rules.unwrap_or_default()),
                };
                let (handle, invite) = self.state.registry.create_room(options, &identity);
                self.enter(handle, seq, invite, false, identity).await;
            }
            ClientMessage::JoinLobby { seq, code, invite } => {
                self.join(seq, code, invite, false, identity).await;
            }
            ClientMessage::Watch { seq, code, invite } => {
                self.join(seq, code, invite, true, identity).await;
            }
            ClientMessage::StartSolo {
                seq,
                rule_set,
                mode,
                level,
                ranked,
            } => {
                self.start_solo(seq, identity, rule_set, mode, level, ranked)
                    .await;
            }
            ClientMessage::ResumeSolo { seq } => {
                if in_lobby {
                    self.refuse(Some(seq), ErrorCode::AlreadyInLobby, LEAVE_FIRST);
                    return Flow::Continue;
                }
                match self
                    .state
                    .ownership
                    .acquire_solo(&identity.id, self.named_room.as_deref())
                    .await
                {
                    Ok(Some(handle)) => self.attach_solo(handle, seq, identity).await,
                    Ok(None) => self.refuse(
                        Some(seq),
                        ErrorCode::NoGameInProgress,
                        "you have no unfinished solo game",
                    ),
                    Err(r) => self.refuse(Some(seq), r.code, &r.message),
                }
            }
            ClientMessage::Leave { seq } => self.leave(seq, identity).await,
            ClientMessage::Undo { seq } => {
                if matches!(self.session, Session::Solo { .. }) {
                    self.tell_solo(seq, SoloRequest::Undo).await;
                } else {
                    self.refuse(
                        Some(seq),
                        ErrorCode::NoGameInProgress,
                        "undo is for solo games",
                    );
                }
            }
            ClientMessage::Move {
                seq,
                notation,
                path,
            } => match self.session {
                Session::Solo { .. } => {
                    self.tell_solo(seq, SoloRequest::Move { notation, path })
                        .await
                }
                _ => self.act(seq, Action::Move { notation, path }).await,
            },
            ClientMessage::Resign { seq } => match self.session {
                Session::Solo { .. } => self.tell_solo(seq, SoloRequest::Resign).await,
                _ => self.act(seq, Action::Resign).await,
            },
            ClientMessage::Resync { seq, since } => match self.session {
                Session::Solo { .. } => self.tell_solo(seq, SoloRequest::Resync).await,
                // Protocol 2 resyncs from a version: the room's history.
                _ if self.version == wire::ProtocolVersion::V2 => {
                    self.act_since(seq, Action::Resync, Some(since)).await;
                }
                _ => self.act(seq, Action::Resync).await,
            },
            ClientMessage::OfferDraw { seq } => self.act(seq, Action::OfferDraw).await,
            ClientMessage::AcceptDraw { seq } => self.act(seq, Action::AcceptDraw).await,
            ClientMessage::DeclineDraw { seq } => self.act(seq, Action::DeclineDraw).await,
            ClientMessage::NextRound { seq } => self.act(seq, Action::NextRound).await,
            ClientMessage::Rematch { seq } => self.act(seq, Action::Rematch).await,
            ClientMessage::EndMatch { seq } => self.act(seq, Action::EndMatch).await,
            ClientMessage::ClaimForfeit { seq } => self.act(seq, Action::ClaimForfeit).await,
            ClientMessage::LobbyInfo { seq, code, invite } => {
                self.lobby_info(seq, code, invite, identity.id.clone())
                    .await;
            }
            ClientMessage::MyGames { seq } => match self.state.my_games(&identity).await {
                Ok(games) => self.reply(ServerMessage::MyGames { seq, games }),
                Err(r) => self.refuse(Some(seq), r.code, &r.message),
            },
        }
        Flow::Continue
    }

    fn hello(&mut self, seq: u32, protocol: u32, token: Option<&str>, name: Option<&str>) -> Flow {
        if !matches!(self.session, Session::Greeting) {
            self.refuse(
                Some(seq),
                ErrorCode::AlreadyGreeted,
                "hello was already sent",
            );
            return Flow::Continue;
        }
        // The subprotocol fixed the version; `hello` must name the same one.
        if protocol != self.version.number() {
            let text = format!(
                "protocol {protocol} is not supported on this connection; its subprotocol \
                 speaks {} (this server speaks 1 and 2, each on its own subprotocols)",
                self.version
            );
            self.refuse(Some(seq), ErrorCode::UnsupportedVersion, &text);
            return Flow::Close(CLOSE_PROTOCOL_ERROR, "unsupported protocol version");
        }
        let ids = &self.state.identities;
        let (identity, token) = match token {
            Some(token) => match ids.verify(token) {
                Ok(identity) => (identity, token.to_owned()),
                Err(e) => {
                    // The reason only: never the token.
                    tracing::info!(reason = %e, "hello refused: invalid token");
                    self.refuse(Some(seq), ErrorCode::InvalidToken, &e.to_string());
                    return Flow::Continue;
                }
            },
            None => ids.new_guest(),
        };
        // A guest's chosen name (PROTOCOL.md, Names) comes with a token that carries it.
        let (identity, token) = match name {
            Some(name) if identity.guest => ids.rename_guest(&identity, name),
            _ => (identity, token),
        };
        // One identity's connections are capped: a leaked token or a
        // runaway client cannot open the instance's worth on its own.
        let Some(slot) = self.state.limits.greet(&identity.id) else {
            crate::metrics::METRICS
                .edge_refusals
                .with_label_values(&["identity_connections_cap"])
                .inc();
            self.refuse(
                Some(seq),
                ErrorCode::TooManyConnections,
                "this identity has too many connections open; close one first",
            );
            return Flow::Close(CLOSE_POLICY, "too many connections");
        };
        self.identity_slot = Some(slot);
        tracing::debug!(identity = %identity.id, guest = identity.guest, "greeted");
        self.reply(ServerMessage::Welcome {
            server_version: env!("CARGO_PKG_VERSION").to_owned(),
            protocols: wire::PROTOCOL_VERSIONS.to_vec(),
            identity: wire::Identity {
                id: identity.id.clone(),
                name: identity.name.clone(),
                guest: identity.guest,
            },
            token,
            accounts: self.state.settings.accounts.is_some(),
        });
        self.session = Session::Idle { identity };
        Flow::Continue
    }

    /// Whether this client may create one more lobby or solo game now;
    /// refuses the request with `rate_limited` (and when to retry) if not.
    fn may_create_room(&self, seq: u32, identity: &Identity) -> bool {
        match self.state.limits.new_room(self.client, &identity.id) {
            Ok(()) => true,
            Err(wait) => {
                crate::metrics::METRICS
                    .edge_refusals
                    .with_label_values(&["rooms_rate"])
                    .inc();
                let text = format!(
                    "too many new lobbies and games; try again in {} s",
                    wait.secs()
                );
                self.refuse(Some(seq), ErrorCode::RateLimited, &text);
                false
            }
        }
    }

    /// A lobby action, for the room this connection is in.
    async fn act(&mut self, seq: u32, action: Action) {
        self.act_since(seq, action, None).await;
    }

    /// [`act`](Self::act), with protocol 2's `resync.since`.
    async fn act_since(&mut self, seq: u32, action: Action, since: Option<u64>) {
        let Session::Lobby { room, identity, .. } = &self.session else {
            self.refuse(Some(seq), ErrorCode::NotInLobby, NOT_IN_LOBBY);
            return;
        };
        if room.act(self.id, seq, action, since).await.is_err() {
            self.session = Session::Idle {
                identity: identity.clone(),
            };
            // A room stops under a connected member only when it moved to
            // another instance (the connection is being closed with 4001).
            self.refuse(
                Some(seq),
                ErrorCode::RoomUnavailable,
                "the lobby moved to another server instance; reconnect naming it and send again",
            );
        }
    }

    async fn leave(&mut self, seq: u32, identity: Identity) {
        match &mut self.session {
            Session::Lobby { room, leaving, .. } => {
                *leaving = Some(seq);
                if room.leave(self.id, seq, self.out_tx.clone()).await.is_err() {
                    // The room task stopped under a connected member: it
                    // moved to another instance, where the seat is still
                    // held. Nothing was applied.
                    self.session = Session::Idle { identity };
                    self.refuse(
                        Some(seq),
                        ErrorCode::RoomUnavailable,
                        "the lobby moved to another server instance; reconnect naming it and send again",
                    );
                }
            }
            Session::Solo { .. } => {
                // Detaches from the solo game without ending it.
                self.leave_session().await;
                self.reply(ServerMessage::Ack { seq });
            }
            Session::Idle { .. } | Session::Greeting => {
                self.refuse(Some(seq), ErrorCode::NotInLobby, NOT_IN_LOBBY);
            }
        }
    }

    async fn tell_solo(&mut self, seq: u32, request: SoloRequest) {
        if let Session::Solo { solo, identity } = &self.session
            && solo.request(self.id, seq, request).await.is_err()
        {
            self.session = Session::Idle {
                identity: identity.clone(),
            };
        }
    }

    /// Attaches to a solo game; it answers `ack` and its state itself.
    async fn attach_solo(&mut self, handle: SoloHandle, seq: u32, identity: Identity) {
        self.leave_session().await;
        if handle
            .attach(self.id, self.out_tx.clone(), seq)
            .await
            .is_ok()
        {
            self.session = Session::Solo {
                identity,
                solo: handle,
            };
        } else {
            self.refuse(
                Some(seq),
                ErrorCode::NoGameInProgress,
                "that game has closed",
            );
        }
    }

    async fn start_solo(
        &mut self,
        seq: u32,
        identity: Identity,
        rule_set: wire::RuleSet,
        mode: wire::SoloMode,
        level: Option<wire::BotLevel>,
        ranked: bool,
    ) {
        if matches!(self.session, Session::Lobby { .. }) {
            self.refuse(Some(seq), ErrorCode::AlreadyInLobby, LEAVE_FIRST);
            return;
        }
        // Counted before anything is replaced, so a refusal leaves the
        // current game as it was.
        if !self.may_create_room(seq, &identity) {
            return;
        }
        // Refused before anything is replaced when the computer is too far
        // behind to answer in reasonable time.
        if mode == wire::SoloMode::Computer
            && let Err(busy) = self
                .state
                .registry
                .solo_deps()
                .pool
                .admit(crate::solo::bot_level(level))
        {
            self.refuse(Some(seq), ErrorCode::ComputerBusy, &busy.message());
            return;
        }
        // A ranked game in progress must be finished (or resigned) first; a
        // practice game is simply replaced.
        let existing = match self
            .state
            .ownership
            .acquire_solo(&identity.id, self.named_room.as_deref())
            .await
        {
            Ok(existing) => existing,
            Err(r) => {
                self.refuse(Some(seq), r.code, &r.message);
                return;
            }
        };
        if let Some(existing) = existing
            && existing.close_if_practice().await == Ok(false)
        {
            self.refuse(
                Some(seq),
                ErrorCode::NotNow,
                "you have a ranked game in progress: resume_solo to finish it, or resign it",
            );
            return;
        }
        let record = match crate::solo::new_record(
            &identity,
            wire_view::rule_set_from_wire(rule_set),
            mode,
            level,
            ranked,
        ) {
            Ok(r) => r,
            Err(refusal) => {
                self.refuse(Some(seq), refusal.code, &refusal.message);
                return;
            }
        };
        if self.state.backends.store.is_durable()
            && let Err(e) = self
                .state
                .backends
                .store
                .index_solo(&identity.id, &record.id)
                .await
        {
            tracing::warn!(error = %e, "cannot note the new solo game");
            self.refuse(
                Some(seq),
                ErrorCode::StorageUnavailable,
                "the game could not be saved just now; try again",
            );
            return;
        }
        let owner = crate::store::OwnerEpoch::first(&self.state.settings.instance_id);
        match self.state.registry.spawn_solo(record, owner) {
            Ok(handle) => self.attach_solo(handle, seq, identity).await,
            Err(e) => self.refuse(Some(seq), ErrorCode::InternalError, &e),
        }
    }

    async fn join(
        &mut self,
        seq: u32,
        code: String,
        invite: Option<String>,
        watch: bool,
        identity: Identity,
    ) {
        if matches!(self.session, Session::Lobby { .. }) {
            self.refuse(Some(seq), ErrorCode::AlreadyInLobby, LEAVE_FIRST);
            return;
        }
        if !watch
            && let Err(r) =
                crate::my_games::may_take_seat(&*self.state.backends.store, &identity, Some(&code))
                    .await
        {
            self.refuse(Some(seq), r.code, &r.message);
            return;
        }
        let named = self
            .named_room
            .as_deref()
            .is_some_and(|n| n.eq_ignore_ascii_case(code.trim()));
        // A room unloaded just as the request reached it answers
        // `Unloaded`: looking it up again loads it.
        for _ in 0..ENTRY_ATTEMPTS {
            let handle = match self.state.ownership.acquire_room(&code, named).await {
                Ok(Some(handle)) => handle,
                Ok(None) => {
                    self.refuse(Some(seq), ErrorCode::UnknownLobby, "no lobby has that code");
                    return;
                }
                Err(r) => {
                    self.refuse(Some(seq), r.code, &r.message);
                    return;
                }
            };
            if self
                .enter(handle, seq, invite.clone(), watch, identity.clone())
                .await
                != Entered::Unloaded
            {
                return;
            }
        }
        self.refuse(
            Some(seq),
            ErrorCode::RoomUnavailable,
            "the lobby was being unloaded; try again",
        );
    }

    /// Answers `lobby_info`: the lobby's summary, from wherever it runs
    /// (loaded if it was unloaded), behind the same invite rule as joining.
    async fn lobby_info(&mut self, seq: u32, code: String, invite: Option<String>, who: String) {
        let named = self
            .named_room
            .as_deref()
            .is_some_and(|n| n.eq_ignore_ascii_case(code.trim()));
        match self
            .state
            .ownership
            .ask_room(&code, named, |room| async move {
                room.summary(Some(who), invite).await
            })
            .await
        {
            Ok(Some(lobby)) => self.reply(ServerMessage::LobbyInfo { seq, lobby }),
            Ok(None) => self.refuse(Some(seq), ErrorCode::UnknownLobby, "no lobby has that code"),
            Err(r) => self.refuse(Some(seq), r.code, &r.message),
        }
    }

    /// Enters a room. The room answers (`ack` and `state`, or the refusal)
    /// on this connection's queue; the reply here only says whether this
    /// connection is now in it.
    async fn enter(
        &mut self,
        handle: RoomHandle,
        seq: u32,
        invite: Option<String>,
        watch: bool,
        identity: Identity,
    ) -> Entered {
        let member = Member {
            conn: self.id,
            version: self.version,
            identity: identity.clone(),
            out: self.out_tx.clone(),
            kick: self.kick.clone(),
        };
        // A room that stopped before taking the request, or before
        // answering it, closed or moved just now.
        match handle.enter(member, seq, invite, watch).await {
            Ok(Entered::Yes) => {
                // A solo game this connection was attached to carries on
                // without it (`resume_solo` comes back to it).
                self.leave_session().await;
                self.session = Session::Lobby {
                    identity,
                    room: handle,
                    leaving: None,
                };
                Entered::Yes
            }
            Ok(other) => other,
            // The room stopped before answering: it closed, or moved to
            // another instance just now.
            Err(_) => {
                self.refuse(
                    Some(seq),
                    ErrorCode::RoomUnavailable,
                    "the lobby closed or moved just now; reconnect naming it and try again",
                );
                Entered::No
            }
        }
    }
}

/// Checks a new lobby's options.
fn lobby_options_valid(
    series_length: u8,
    stake: u32,
    identity: &Identity,
) -> Result<(), (ErrorCode, &'static str)> {
    if !wire::SERIES_LENGTHS.contains(&series_length) {
        return Err((
            ErrorCode::InvalidOptions,
            "series_length must be 1, 3, 5 or 7",
        ));
    }
    if stake != 0 && !(10..=1000).contains(&stake) {
        return Err((
            ErrorCode::InvalidOptions,
            "stake must be 0 (free) or 10 to 1,000 Bold Points",
        ));
    }
    if stake > 0 && identity.guest {
        return Err((
            ErrorCode::AccountRequired,
            "guests play free lobbies only: sign in to play for Bold Points",
        ));
    }
    Ok(())
}
