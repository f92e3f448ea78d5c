//! The one way into a running room from outside it: [`RoomHandle`], whose
//! methods send the room's private commands and wait for its answers. A
//! room that has stopped (it closed, or moved to another instance) answers
//! [`RoomStopped`], and nothing was applied.

use jumpgate_protocol as wire;
use tokio::sync::{mpsc, oneshot};

use super::{Entered, Mailbox, RoomCommand};
use crate::code::RoomCode;
use crate::lobby::Action;
use crate::outbound::{ConnId, Member, Outbound};

/// The room stopped before it took the command, or before it answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the room has stopped")]
pub struct RoomStopped;

/// Handle to a running room; cheap to clone.
#[derive(Clone, Debug)]
pub struct RoomHandle {
    code: RoomCode,
    mailbox: Mailbox,
}

impl RoomHandle {
    pub(super) fn new(code: RoomCode, mailbox: Mailbox) -> RoomHandle {
        RoomHandle { code, mailbox }
    }

    pub fn code(&self) -> &RoomCode {
        &self.code
    }

    /// Whether the room still takes commands.
    pub fn is_running(&self) -> bool {
        !self.mailbox.is_closed()
    }

    async fn send(&self, command: RoomCommand) -> Result<(), RoomStopped> {
        self.mailbox.send(command).await.map_err(|_| RoomStopped)
    }

    async fn ask<T>(
        &self,
        command: impl FnOnce(oneshot::Sender<T>) -> RoomCommand,
    ) -> Result<T, RoomStopped> {
        let (reply, answer) = oneshot::channel();
        self.send(command(reply)).await?;
        answer.await.map_err(|_| RoomStopped)
    }

    /// Takes (or retakes) a seat, or watches. The room answers on the
    /// member's queue (`ack` and a `state`, or the refusal); the result
    /// only says whether the connection is now in the room.
    pub async fn enter(
        &self,
        member: Member,
        seq: u32,
        invite: Option<String>,
        watch: bool,
    ) -> Result<Entered, RoomStopped> {
        self.ask(|reply| RoomCommand::Enter {
            member,
            seq,
            invite,
            watch,
            reply,
        })
        .await
    }

    /// A member's action; answered on its queue. `since`: with a protocol
    /// 2 `resync`, the version the member holds.
    pub async fn act(
        &self,
        conn: ConnId,
        seq: u32,
        action: Action,
        since: Option<u64>,
    ) -> Result<(), RoomStopped> {
        self.send(RoomCommand::Act {
            conn,
            seq,
            action,
            since,
        })
        .await
    }

    /// Gives up the member's seat; answered on `out`, even when re-sent
    /// after the first leave's outcome was unknown.
    pub async fn leave(
        &self,
        conn: ConnId,
        seq: u32,
        out: mpsc::Sender<Outbound>,
    ) -> Result<(), RoomStopped> {
        self.send(RoomCommand::Leave { conn, seq, out }).await
    }

    /// The connection went away (its seat is kept).
    pub async fn disconnect(&self, conn: ConnId) {
        let _ = self.send(RoomCommand::Disconnect { conn }).await;
    }

    /// The lobby's public summary; `None` for an invite-only lobby asked
    /// without its invite by someone (`who`) holding no seat there.
    pub async fn summary(
        &self,
        who: Option<String>,
        invite: Option<String>,
    ) -> Result<Option<wire::LobbySummary>, RoomStopped> {
        self.ask(|reply| RoomCommand::Summary { who, invite, reply })
            .await
    }

    /// The lobby's finished games as PDN; `None` as for [`summary`](Self::summary).
    pub async fn games(&self, invite: Option<String>) -> Result<Option<Vec<String>>, RoomStopped> {
        self.ask(|reply| RoomCommand::Games { invite, reply }).await
    }

    /// The current game's moves, to replay into its position after every
    /// ply off the room's task ([`PositionsReplay::replay`](super::view::PositionsReplay::replay));
    /// `None` as for [`summary`](Self::summary).
    pub async fn positions(
        &self,
        invite: Option<String>,
    ) -> Result<Option<super::view::PositionsReplay>, RoomStopped> {
        self.ask(|reply| RoomCommand::Positions { invite, reply })
            .await
    }

    /// Gives the room up to the instance `to` (or, shutting down, to
    /// whoever takes it); whether it did.
    pub async fn hand_over(&self, to: Option<String>) -> Result<bool, RoomStopped> {
        self.ask(|reply| RoomCommand::HandOver { to, reply }).await
    }

    /// Makes the room stop if the store names another owner.
    pub async fn check_owner(&self) {
        let _ = self.send(RoomCommand::CheckOwner).await;
    }
}
