//! What a solo game stores (its record, moves in stored form) and what is
//! derived from it: a new game's record, the replay, the undo point.

use jumpgate_protocol as wire;
use jumpgate_protocol::ErrorCode;
use serde::{Deserialize, Serialize};

use crate::bots::Level;
use crate::identity::Identity;
use crate::outbound::Refusal;
use crate::rules::{Color, DrawRules, MoveInfo, Variant, VariantGame};

/// The stored form of a solo game (JSON, in the store like a room record).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SoloRecord {
    /// Always "solo", to tell these apart from rooms at resume.
    pub kind: String,
    pub id: String,
    pub owner: String,
    pub owner_name: String,
    pub rule_set: Variant,
    /// Space Mode's wormhole seed.
    #[serde(default)]
    pub seed: u64,
    pub same_device: bool,
    pub level: Option<Level>,
    pub ranked: bool,
    pub you: Color,
    /// The moves played, as stored.
    pub moves: Vec<SoloMove>,
    pub result: Option<wire::GameResult>,
    pub version: u64,
    /// A ranked result not yet on the leaderboard.
    pub pending_score: bool,
    /// When the ranked result was decided (Unix ms; 0 in records stored
    /// before it existed): the leaderboard write carries it (see
    /// [`crate::idempotency`]).
    #[serde(default)]
    pub score_decided: u64,
    /// Discarded (replaced by a newer game, or left unattached too long):
    /// it cannot be resumed, and its keys expire.
    #[serde(default)]
    pub closed: bool,
}

/// A stored solo move: the form [`VariantGame::play_stored`] reads.
/// Records written before the space rule sets hold lists of square indices.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SoloMove {
    Stored(String),
    Squares(Vec<u8>),
}

impl SoloMove {
    pub(super) fn stored(&self) -> String {
        match self {
            SoloMove::Stored(s) => s.clone(),
            SoloMove::Squares(squares) => squares
                .iter()
                .map(u8::to_string)
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

/// The computer level a `start_solo` asks for (the Executive if none).
pub fn bot_level(level: Option<wire::BotLevel>) -> Level {
    match level {
        Some(wire::BotLevel::Tamer) => Level::Tamer,
        Some(wire::BotLevel::Driver) => Level::Driver,
        Some(wire::BotLevel::Warden) => Level::Warden,
        Some(wire::BotLevel::Executive) | None => Level::Executive,
    }
}

pub(super) fn wire_level(level: Level) -> wire::BotLevel {
    match level {
        Level::Tamer => wire::BotLevel::Tamer,
        Level::Driver => wire::BotLevel::Driver,
        Level::Warden => wire::BotLevel::Warden,
        Level::Executive => wire::BotLevel::Executive,
    }
}

/// Checks a `start_solo` request and builds the record of the new game; its
/// id is `S` + a room code, which the load balancer routes like the code.
pub fn new_record(
    identity: &Identity,
    rule_set: Variant,
    mode: wire::SoloMode,
    level: Option<wire::BotLevel>,
    ranked: bool,
) -> Result<SoloRecord, Refusal> {
    let same_device = mode == wire::SoloMode::SameDevice;
    let level = (!same_device).then(|| bot_level(level));
    if ranked {
        if identity.guest {
            return Err(Refusal::new(
                ErrorCode::AccountRequired,
                "ranked games need an account: sign in, or play practice",
            ));
        }
        if same_device || level != Some(Level::Executive) {
            return Err(Refusal::new(
                ErrorCode::InvalidOptions,
                "only games against the Executive are ranked",
            ));
        }
    }
    Ok(SoloRecord {
        kind: "solo".into(),
        id: format!("S{}", crate::code::RoomCode::generate()),
        owner: identity.id.clone(),
        owner_name: identity.name.clone(),
        rule_set,
        seed: rand::random(),
        same_device,
        level,
        ranked,
        you: Color::Dark,
        moves: Vec::new(),
        result: None,
        version: 0,
        pending_score: false,
        score_decided: 0,
        closed: false,
    })
}

/// How many moves stay after an undo, or `None` when there is nothing to
/// undo. On one device: all but the last. Against the computer: those
/// before your last move, so the computer's replies go with it (on the
/// orbit board a side that cannot move passes, so turns do not always
/// alternate).
pub(super) fn undo_point(record: &SoloRecord) -> Option<usize> {
    if record.same_device {
        record.moves.len().checked_sub(1)
    } else {
        movers(record)
            .iter()
            .rposition(|&mover| mover == record.you)
    }
}

/// Who made each of a record's moves.
pub(super) fn movers(record: &SoloRecord) -> Vec<Color> {
    let mut game = VariantGame::new(record.rule_set, record.seed);
    record
        .moves
        .iter()
        .map(|m| {
            let mover = game.turn();
            let _ = game.play_stored(&m.stored());
            mover
        })
        .collect()
}

/// The game, its move texts and its last move, replayed from a record.
pub(super) fn replay(
    record: &SoloRecord,
) -> Result<(VariantGame, Vec<String>, Option<MoveInfo>), String> {
    let stored: Vec<String> = record.moves.iter().map(SoloMove::stored).collect();
    let stored: Vec<&str> = stored.iter().map(String::as_str).collect();
    let (game, mut played) =
        VariantGame::replay(record.rule_set, record.seed, DrawRules::Standard, &stored)?;
    let notations = played.iter().map(|m| m.notation.clone()).collect();
    Ok((game, notations, played.pop()))
}

/// The solo game a stored record holds, if it is one (rooms have no
/// `kind: "solo"`).
pub fn solo_record(json: &str) -> Option<SoloRecord> {
    serde_json::from_str::<SoloRecord>(json)
        .ok()
        .filter(|r| r.kind == "solo")
}

/// The game as `my_games` lists it, while it is unfinished and open.
pub fn my_game(record: &SoloRecord) -> Option<wire::MyGame> {
    if record.closed || record.result.is_some() {
        return None;
    }
    let (game, _, _) = replay(record).ok()?;
    Some(wire::MyGame {
        code: record.id.clone(),
        kind: wire::GameKind::Solo,
        rule_set: crate::wire_view::rule_set(record.rule_set),
        pace: wire::Pace::Live,
        phase: None,
        opponent: record
            .level
            .filter(|_| !record.same_device)
            .map(|level| wire_level(level).to_string()),
        your_turn: record.same_device || game.turn() == record.you,
        deadline: None,
        last_move_at: None,
        expires_at: None,
    })
}
