//! Turns engine values into protocol views: board names, notation, legal
//! moves, deadlines as Unix milliseconds.

use std::time::{SystemTime, UNIX_EPOCH};

use jumpgate_protocol as wire;
use tokio::time::Instant;

use crate::rules::{Color, Game, Move, RuleSet, fen, notation};

pub fn rule_set(rs: RuleSet) -> wire::RuleSet {
    match rs {
        RuleSet::American => wire::RuleSet::American,
        RuleSet::Brazilian => wire::RuleSet::Brazilian,
        RuleSet::Russian => wire::RuleSet::Russian,
        RuleSet::Spanish => wire::RuleSet::Spanish,
        RuleSet::Italian => wire::RuleSet::Italian,
        RuleSet::Thai => wire::RuleSet::Thai,
    }
}

pub fn rule_set_from_wire(rs: wire::RuleSet) -> RuleSet {
    match rs {
        wire::RuleSet::American => RuleSet::American,
        wire::RuleSet::Brazilian => RuleSet::Brazilian,
        wire::RuleSet::Russian => RuleSet::Russian,
        wire::RuleSet::Spanish => RuleSet::Spanish,
        wire::RuleSet::Italian => RuleSet::Italian,
        wire::RuleSet::Thai => RuleSet::Thai,
    }
}

pub fn color(c: Color) -> wire::Color {
    match c {
        Color::Dark => wire::Color::Dark,
        Color::Light => wire::Color::Light,
    }
}

/// A tokio instant as Unix milliseconds (wall clock).
pub fn unix_ms(at: Instant) -> u64 {
    let now_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let now = Instant::now();
    if at >= now {
        now_unix + (at - now).as_millis() as u64
    } else {
        now_unix.saturating_sub((now - at).as_millis() as u64)
    }
}

/// Unix milliseconds as a tokio instant (now, if already past).
pub fn instant_from_unix_ms(ms: u64) -> Instant {
    let now_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    Instant::now() + std::time::Duration::from_millis(ms.saturating_sub(now_unix))
}

fn move_view(game: &Game, m: &Move, text: String) -> wire::MoveView {
    let rs = game.rule_set();
    wire::MoveView {
        notation: text,
        path: m
            .path()
            .iter()
            .map(|&sq| notation::board_name(rs, sq))
            .collect(),
        captures: m
            .captured()
            .into_iter()
            .map(|sq| notation::board_name(rs, sq))
            .collect(),
    }
}

pub fn game_view(
    game: &Game,
    dark_seat: u8,
    notations: &[String],
    deadline: Instant,
    draw_offer: Option<Color>,
    result: Option<wire::GameResult>,
) -> wire::GameView {
    let rs = game.rule_set();
    let pos = game.position();
    let pieces = pos
        .occupied()
        .into_iter()
        .filter_map(|sq| {
            pos.piece_at(sq).map(|(c, role)| wire::PieceView {
                square: notation::board_name(rs, sq),
                color: color(c),
                king: role == crate::rules::Role::King,
            })
        })
        .collect();
    let in_play = result.is_none();
    let legal_moves = if in_play {
        game.legal_moves()
            .iter()
            .map(|m| move_view(game, m, game.move_text(m)))
            .collect()
    } else {
        Vec::new()
    };
    let must_capture = if in_play {
        game.must_capture()
            .into_iter()
            .map(|sq| notation::board_name(rs, sq))
            .collect()
    } else {
        Vec::new()
    };
    let last_move = game.moves().last().map(|m| {
        let text = notations.last().cloned().unwrap_or_default();
        move_view(game, m, text)
    });
    wire::GameView {
        dark_seat,
        fen: fen::write(rs, pos),
        pieces,
        turn: color(game.turn()),
        ply: game.moves().len() as u32,
        moves: notations.to_vec(),
        last_move,
        legal_moves,
        must_capture,
        deadline: if in_play { unix_ms(deadline) } else { 0 },
        remaining_ms: if in_play {
            crate::room::remaining(deadline)
                .as_millis()
                .min(u128::from(u32::MAX)) as u32
        } else {
            0
        },
        draw_offer: draw_offer.map(color),
        result,
    }
}
