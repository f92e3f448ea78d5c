//! The one way into a running solo game from outside it: [`SoloHandle`],
//! whose methods send the game's private commands. A game that has stopped
//! (it closed, or moved to another instance) answers [`SoloStopped`].

use tokio::sync::{mpsc, oneshot};

use super::SoloCommand;
use crate::outbound::{ConnId, Outbound};

/// The game stopped before it took the command, or before it answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the solo game has stopped")]
pub struct SoloStopped;

/// What the attached player asks of the game; answered on its queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SoloRequest {
    /// A move, by notation or by the path of squares.
    Move {
        notation: Option<String>,
        path: Option<Vec<String>>,
    },
    Undo,
    Resign,
    /// The game's state again.
    Resync,
}

/// Handle to a running solo game; cheap to clone.
#[derive(Clone, Debug)]
pub struct SoloHandle {
    id: String,
    commands: mpsc::Sender<SoloCommand>,
}

impl SoloHandle {
    pub(super) fn new(id: String, commands: mpsc::Sender<SoloCommand>) -> SoloHandle {
        SoloHandle { id, commands }
    }

    /// The game's id (`S` and a room code).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether the game still takes commands.
    pub fn is_running(&self) -> bool {
        !self.commands.is_closed()
    }

    async fn send(&self, command: SoloCommand) -> Result<(), SoloStopped> {
        self.commands.send(command).await.map_err(|_| SoloStopped)
    }

    async fn ask<T>(
        &self,
        command: impl FnOnce(oneshot::Sender<T>) -> SoloCommand,
    ) -> Result<T, SoloStopped> {
        let (reply, answer) = oneshot::channel();
        self.send(command(reply)).await?;
        answer.await.map_err(|_| SoloStopped)
    }

    /// Attaches a connection (detaching any other); the game answers `ack`
    /// and its state on `out`.
    pub async fn attach(
        &self,
        conn: ConnId,
        out: mpsc::Sender<Outbound>,
        seq: u32,
    ) -> Result<(), SoloStopped> {
        self.send(SoloCommand::Attach { conn, out, seq }).await
    }

    /// The attached connection's request.
    pub async fn request(
        &self,
        conn: ConnId,
        seq: u32,
        request: SoloRequest,
    ) -> Result<(), SoloStopped> {
        self.send(match request {
            SoloRequest::Move { notation, path } => SoloCommand::Move {
                conn,
                seq,
                notation,
                path,
            },
            SoloRequest::Undo => SoloCommand::Undo { conn, seq },
            SoloRequest::Resign => SoloCommand::Resign { conn, seq },
            SoloRequest::Resync => SoloCommand::Resync { conn, seq },
        })
        .await
    }

    /// The connection went away or left; the game carries on.
    pub async fn detach(&self, conn: ConnId) {
        let _ = self.send(SoloCommand::Detach { conn }).await;
    }

    /// Ends the game unless it holds an unfinished ranked game; whether it
    /// closed.
    pub async fn close_if_practice(&self) -> Result<bool, SoloStopped> {
        self.ask(|reply| SoloCommand::CloseIfPractice { reply })
            .await
    }

    /// Gives the game up to the instance `to` (or to whoever takes it).
    pub async fn hand_over(&self, to: Option<String>) -> Result<bool, SoloStopped> {
        self.ask(|reply| SoloCommand::HandOver { to, reply }).await
    }

    /// Makes the game stop if the store names another owner.
    pub async fn check_owner(&self) {
        let _ = self.send(SoloCommand::CheckOwner).await;
    }
}
