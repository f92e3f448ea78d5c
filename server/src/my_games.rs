//! "My games": the unfinished lobbies and solo game of one identity, for
//! `my_games` and `GET /api/my-games`. Read from the store, never from the
//! rooms: a lobby's stored record is current (every change is stored before
//! anyone is told of it), and reading it does not load an unloaded lobby.

use jumpgate_protocol as wire;
use jumpgate_protocol::ErrorCode;

use crate::AppState;
use crate::identity::Identity;
use crate::lobby::{Pace, Phase, glance};
use crate::outbound::Refusal;
use crate::room::view;
use crate::wire_view;

/// Most lobbies listed; the most recently active come first.
pub const MOST_LISTED: usize = 200;

fn unavailable() -> Refusal {
    Refusal::new(
        ErrorCode::StorageUnavailable,
        "your games could not be read just now; try again",
    )
}

/// The identity's open lobbies in which it holds a seat, most recently
/// active first (games where it is to move before the others), then its
/// unfinished solo game. Lobbies it no longer sits in, or that closed, are
/// taken off its list as they are found.
pub async fn list(state: &AppState, identity: &Identity) -> Result<Vec<wire::MyGame>, Refusal> {
    let store = &state.store;
    let codes = store
        .rooms_of(&identity.id)
        .await
        .map_err(|_| unavailable())?;
    let records = store
        .open_records(&codes)
        .await
        .map_err(|_| unavailable())?;
    let expire_after = state.settings.correspondence_expiry.as_millis() as u64;
    let mut games = Vec::new();
    let mut stale = Vec::new();
    for (code, record) in codes.iter().zip(records) {
        let lobby = record.as_deref().and_then(glance);
        let seat = lobby.as_ref().and_then(|l| {
            l.seats
                .iter()
                .position(|s| s.as_ref().is_some_and(|s| s.id == identity.id))
        });
        let (Some(lobby), Some(seat)) = (lobby, seat) else {
            stale.push(code.clone());
            continue;
        };
        let correspondence = lobby.pace == Pace::Correspondence;
        games.push(wire::MyGame {
            code: code.clone(),
            kind: wire::GameKind::Lobby,
            rule_set: wire_view::rule_set(lobby.rule_set),
            pace: view::pace(lobby.pace),
            phase: Some(view::phase(lobby.phase)),
            opponent: lobby.seats[1 - seat].as_ref().map(|s| s.name.clone()),
            your_turn: lobby.to_move == Some(seat),
            deadline: lobby.deadline_ms,
            last_move_at: lobby.last_move_ms,
            expires_at: lobby
                .active_at_ms
                .filter(|_| correspondence && lobby.phase != Phase::Ended)
                .map(|at| at.saturating_add(expire_after)),
        });
    }
    if !stale.is_empty() {
        // Best effort: an entry left behind is dropped on the next read.
        let _ = store.forget_rooms_of(&identity.id, &stale).await;
    }
    games.sort_by_key(|g| {
        let active = g.last_move_at.or(g.expires_at).unwrap_or(0);
        (!g.your_turn, std::cmp::Reverse(active))
    });
    games.truncate(MOST_LISTED);
    if let Some(solo) = solo_game(state, identity).await? {
        games.push(solo);
    }
    Ok(games)
}

/// The identity's unfinished solo game, if it has one.
async fn solo_game(state: &AppState, identity: &Identity) -> Result<Option<wire::MyGame>, Refusal> {
    let id = if state.store.is_durable() {
        state
            .store
            .solo_of(&identity.id)
            .await
            .map_err(|_| unavailable())?
    } else {
        state.solo_of(&identity.id).map(|h| h.id)
    };
    let Some(id) = id else {
        return Ok(None);
    };
    let stored = state.store.load(&id).await.map_err(|_| unavailable())?;
    Ok(stored
        .and_then(|s| crate::solo::solo_record(&s.record))
        .filter(|r| r.owner == identity.id)
        .and_then(|r| crate::solo::my_game(&r)))
}
