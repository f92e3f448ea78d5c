//! "My games": the unfinished lobbies and solo game of one identity, for
//! `my_games` and `GET /api/my-games`. Read from the store, never from the
//! rooms: a lobby's stored record is current (every change is stored before
//! anyone is told of it), and reading it does not load an unloaded lobby.
//! It needs only the room and solo parts of the store ([`SoloStore`]).

use jumpgate_protocol as wire;
use jumpgate_protocol::ErrorCode;

use crate::identity::Identity;
use crate::lobby::{Pace, Phase, glance};
use crate::outbound::Refusal;
use crate::registry::Registry;
use crate::room::view;
use crate::store::SoloStore;
use crate::wire_view;

/// Most open lobbies an identity may hold a seat in at once (creating or
/// joining another is refused): what keeps `my_games` cheap to read and
/// its answer well under the 16 KiB message limit.
pub const MOST_OPEN_LOBBIES: usize = 40;

/// Most list entries read: the cap, with room for entries a failed write
/// left behind (they are dropped as they are read).
const MOST_READ: usize = 2 * MOST_OPEN_LOBBIES;

/// Whether `identity` may take a seat in one more lobby (`code`: the one
/// it asks for, where it may hold a seat already).
pub async fn may_take_seat(
    store: &dyn SoloStore,
    identity: &Identity,
    code: Option<&str>,
) -> Result<(), Refusal> {
    let codes = store
        .rooms_of(&identity.id)
        .await
        .map_err(|_| unavailable())?;
    let mine = |c: &str| {
        codes
            .iter()
            .any(|listed| listed.eq_ignore_ascii_case(c.trim()))
    };
    if codes.len() < MOST_OPEN_LOBBIES || code.is_some_and(mine) {
        return Ok(());
    }
    Err(Refusal::new(
        ErrorCode::NotNow,
        format!(
            "you hold a seat in {MOST_OPEN_LOBBIES} open lobbies already: finish or leave one first"
        ),
    ))
}

fn unavailable() -> Refusal {
    Refusal::new(
        ErrorCode::StorageUnavailable,
        "your games could not be read just now; try again",
    )
}

/// The identity's open lobbies in which it holds a seat, most recently
/// active first (games where it is to move before the others), then its
/// unfinished solo game. Lobbies it no longer sits in, or that closed, are
/// taken off its list as they are found. `expire_after`: how long a
/// correspondence lobby lasts without a move.
pub async fn list(
    store: &dyn SoloStore,
    registry: &Registry,
    expire_after: std::time::Duration,
    identity: &Identity,
) -> Result<Vec<wire::MyGame>, Refusal> {
    let mut codes = store
        .rooms_of(&identity.id)
        .await
        .map_err(|_| unavailable())?;
    codes.sort();
    codes.truncate(MOST_READ);
    let records = store
        .open_records(&codes)
        .await
        .map_err(|_| unavailable())?;
    let expire_after = expire_after.as_millis() as u64;
    let mut games = Vec::new();
    let mut stale = Vec::new();
    for (code, record) in codes.iter().zip(records) {
        let lobby = record
            .as_ref()
            .and_then(|r| glance(&r.record, r.last_move.as_ref()));
        let seat = lobby.as_ref().and_then(|l| {
            l.seats
                .iter()
                .position(|s| s.as_ref().is_some_and(|s| s.id == identity.id))
        });
        let Some(lobby) = lobby else {
            // Closed or gone: off the list. (Only then: a seat this read
            // does not show may have been taken since, listing it anew.)
            stale.push(code.clone());
            continue;
        };
        let Some(seat) = seat else {
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
    // Your moves first, then the latest moves (lobbies without one last).
    games.sort_by_key(|g| (!g.your_turn, std::cmp::Reverse(g.last_move_at)));
    games.truncate(MOST_OPEN_LOBBIES);
    if let Some(solo) = solo_game(store, registry, identity).await? {
        games.push(solo);
    }
    Ok(games)
}

/// The identity's unfinished solo game, if it has one.
async fn solo_game(
    store: &dyn SoloStore,
    registry: &Registry,
    identity: &Identity,
) -> Result<Option<wire::MyGame>, Refusal> {
    let id = if store.is_durable() {
        store
            .solo_of(&identity.id)
            .await
            .map_err(|_| unavailable())?
    } else {
        registry.solo_of(&identity.id).map(|h| h.id().to_owned())
    };
    let Some(id) = id else {
        return Ok(None);
    };
    let stored = store.load(&id).await.map_err(|_| unavailable())?;
    Ok(stored
        .and_then(|s| crate::solo::solo_record(&s.record))
        .filter(|r| r.owner == identity.id)
        .and_then(|r| crate::solo::my_game(&r)))
}
