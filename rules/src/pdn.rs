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

/// A Unix time (seconds) as a PDN date, `YYYY.MM.DD` in UTC.
pub fn utc_date(unix_secs: u64) -> String {
    // Days to a civil date (proleptic Gregorian), by eras of 400 years.
    let days = (unix_secs / 86_400) as i64 + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!("{year:04}.{month:02}.{day:02}")
}

/// The PDN text with an unknown date (`????.??.??`) replaced by `date`;
/// a known date is kept.
pub fn with_date(pdn: &str, date: &str) -> String {
    pdn.replacen(
        "[Date \"????.??.??\"]",
        &format!("[Date \"{}\"]", escape(date)),
        1,
    )
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

/// One PDN game taken apart: its tags (name and unquoted value, in order)
/// and its moves as written, without move numbers, comments or the result.
/// A pass is the token `--`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PdnParts {
    pub tags: Vec<(String, String)>,
    pub moves: Vec<String>,
}

impl PdnParts {
    /// The value of the first tag with this name.
    pub fn tag(&self, name: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Takes one PDN game apart (see [`PdnParts`]). Comments in braces and move
/// numbers (`12.`, `12...`) are skipped; the movetext ends at the result.
pub fn parts(pdn: &str) -> PdnParts {
    let mut out = PdnParts::default();
    let mut movetext = String::new();
    for line in pdn.lines() {
        let line = line.trim();
        if let Some(tag) = line.strip_prefix('[') {
            let tag = tag.trim_end_matches(']');
            if let Some((name, value)) = tag.split_once(' ') {
                let value = value.trim().trim_matches('"');
                let value = value.replace("\\\"", "\"").replace("\\\\", "\\");
                out.tags.push((name.to_owned(), value));
            }
        } else {
            movetext.push_str(line);
            movetext.push(' ');
        }
    }
    let mut in_comment = false;
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
        if !token.is_empty() {
            out.moves.push(token.to_owned());
        }
    }
    out
}

/// Reads one PDN game in the given rule set: the FEN tag if any, then the
/// moves. Comments in braces and move numbers are skipped.
pub fn read(rule_set: RuleSet, pdn: &str) -> Result<Game, PdnError> {
    let parts = parts(pdn);
    let start = match parts.tag("FEN") {
        Some(f) => fen::parse(rule_set, f)?,
        None => super::position::Position::start(rule_set),
    };
    let mut game = Game::from_position(rule_set, start);
    for (i, token) in parts.moves.iter().enumerate() {
        game.play_text(token).map_err(|error| PdnError::Move {
            number: i + 1,
            text: token.clone(),
            error,
        })?;
    }
    Ok(game)
}
