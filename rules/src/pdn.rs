//! PDN games: export with the GameType tag and result, and import of the
//! same format (tags, optional FEN, numbered movetext).

use std::fmt::Write as _;

use super::fen;
use super::game::{Game, PlayError};
use super::position::Color;
use super::variant::RuleSet;

/// Names for the PDN header.
#[derive(Clone, Debug, Default)]
pub struct PdnTags {
    pub event: Option<String>,
    pub date: Option<String>,
    /// Who played the first player's pieces.
    pub dark: Option<String>,
    pub light: Option<String>,
    /// Set when the game ended off the board (resignation, time, agreement).
    pub result_override: Option<Option<Color>>,
    /// Points scored (Dark's, Light's) where games are scored by points,
    /// also when the game ended off the board.
    pub points: Option<[u32; 2]>,
}

/// The PDN result token for a winner (`None` = draw).
pub fn result_token(rule_set: RuleSet, winner: Option<Color>) -> &'static str {
    let dark_is_white = rule_set.first_player_letter() == 'W';
    match winner {
        None => "1/2-1/2",
        Some(Color::Dark) if dark_is_white => "1-0",
        Some(Color::Dark) => "0-1",
        Some(Color::Light) if dark_is_white => "0-1",
        Some(Color::Light) => "1-0",
    }
}

pub fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Writes a game as PDN. Unfinished games end in `*`.
pub fn write(game: &Game, tags: &PdnTags) -> String {
    let rs = game.rule_set();
    let result = match tags.result_override {
        Some(w) => result_token(rs, w),
        None => match game.outcome() {
            Some(o) => result_token(rs, o.winner()),
            None => "*",
        },
    };
    let dark_is_white = rs.first_player_letter() == 'W';
    let (white, black) = if dark_is_white {
        (&tags.dark, &tags.light)
    } else {
        (&tags.light, &tags.dark)
    };
    let mut out = String::new();
    let event = tags.event.as_deref().unwrap_or("Jumpgate game");
    let _ = writeln!(out, "[Event \"{}\"]", escape(event));
    let _ = writeln!(
        out,
        "[Date \"{}\"]",
        escape(tags.date.as_deref().unwrap_or("????.??.??"))
    );
    let _ = writeln!(
        out,
        "[White \"{}\"]",
        escape(white.as_deref().unwrap_or("?"))
    );
    let _ = writeln!(
        out,
        "[Black \"{}\"]",
        escape(black.as_deref().unwrap_or("?"))
    );
    let _ = writeln!(out, "[Result \"{result}\"]");
    let _ = writeln!(out, "[GameType \"{}\"]", rs.pdn_game_type());
    let start = game.initial_position();
    if *start != super::position::Position::start(rs) {
        let _ = writeln!(out, "[SetUp \"1\"]");
        let _ = writeln!(out, "[FEN \"{}\"]", fen::write(rs, start));
    }
    out.push('\n');
    // Replay to write each move with the notation of its own position.
    let mut replay = Game::from_position(rs, *start);
    let first_is_light = start.turn() == Color::Light;
    let tokens = game.moves().iter().enumerate().map(|(i, m)| {
        let ply = i + usize::from(first_is_light);
        let text = replay.move_text(m);
        replay.play(m).expect("a recorded move replays");
        if ply % 2 == 0 {
            format!("{}. {text}", ply / 2 + 1)
        } else if i == 0 {
            format!("{}... {text}", ply / 2 + 1)
        } else {
            text
        }
    });
    push_movetext(&mut out, tokens, result);
    out
}

/// Appends movetext: the tokens (a move, with its number when it has one)
/// separated by spaces, a line break once a line passes 72 characters,
/// then the result and a newline.
pub fn push_movetext(out: &mut String, tokens: impl IntoIterator<Item = String>, result: &str) {
    let mut line = String::new();
    for token in tokens {
        line.push_str(&token);
        line.push(' ');
        if line.len() > 72 {
            out.push_str(line.trim_end());
            out.push('\n');
            line.clear();
        }
    }
    line.push_str(result);
    out.push_str(&line);
    out.push('\n');
}

/// Why PDN could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PdnError {
    #[error("bad FEN tag: {0}")]
    Fen(#[from] fen::FenError),
    #[error("move {number} ({text}): {error}")]
    Move {
        number: usize,
        text: String,
        error: PlayError,
    },
}

/// Reads one PDN game in the given rule set: the FEN tag if any, then the
/// moves. Comments in braces and move numbers are skipped.
pub fn read(rule_set: RuleSet, pdn: &str) -> Result<Game, PdnError> {
    let mut fen_tag = None;
    let mut movetext = String::new();
    for line in pdn.lines() {
        let line = line.trim();
        if let Some(tag) = line.strip_prefix('[') {
            let tag = tag.trim_end_matches(']');
            if let Some(("FEN", value)) = tag.split_once(' ') {
                fen_tag = Some(value.trim().trim_matches('"').to_owned());
            }
        } else {
            movetext.push_str(line);
            movetext.push(' ');
        }
    }
    let start = match fen_tag {
        Some(f) => fen::parse(rule_set, &f)?,
        None => super::position::Position::start(rule_set),
    };
    let mut game = Game::from_position(rule_set, start);
    let mut in_comment = false;
    let mut number = 0;
    for token in movetext.split_whitespace() {
        if in_comment || token.starts_with('{') {
            in_comment = !token.ends_with('}');
            continue;
        }
        if matches!(
            token,
            "*" | "1-0" | "0-1" | "1/2-1/2" | "2-0" | "0-2" | "1-1"
        ) {
            break;
        }
        let token = match token.rfind('.') {
            Some(i) => &token[i + 1..],
            None => token,
        };
        if token.is_empty() {
            continue;
        }
        number += 1;
        game.play_text(token).map_err(|error| PdnError::Move {
            number,
            text: token.to_owned(),
            error,
        })?;
    }
    Ok(game)
}
