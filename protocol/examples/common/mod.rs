//! What the examples share: reading the command line's connection options, and
//! drawing a board as text.

use jumpgate_protocol::codec::{Encoding, Subprotocol};
use jumpgate_protocol::session::SessionOptions;
use jumpgate_protocol::{Color, PieceView};

/// The command line after the program's name, with `--protocol N` and `--json` taken
/// out and turned into session options; the other arguments are returned in order.
/// `None` when `--help` or `-h` was given: the example prints its usage.
pub fn session_options(client_name: &str) -> Result<Option<(SessionOptions, Vec<String>)>, String> {
    if std::env::args().any(|arg| arg == "--help" || arg == "-h") {
        return Ok(None);
    }
    let mut version = 2;
    let mut encoding = Encoding::MsgPack;
    let mut rest = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--json" => encoding = Encoding::Json,
            "--protocol" => {
                version = match args.next().as_deref() {
                    Some("1") => 1,
                    Some("2") => 2,
                    other => return Err(format!("--protocol takes 1 or 2, not {other:?}")),
                };
            }
            _ => rest.push(arg),
        }
    }
    let subprotocol = if version == 1 {
        Subprotocol::v1(encoding)
    } else {
        Subprotocol::v2(encoding)
    };
    let options = SessionOptions {
        subprotocol,
        client_name: client_name.to_owned(),
        ..SessionOptions::default()
    };
    Ok(Some((options, rest)))
}

/// An 8×8 board as text, rank 8 at the top: `x`/`X` for Dark's men and kings, `o`/`O`
/// for Light's, `.` for an empty playing square. Squares not named `a1`…`h8` (the orbit
/// board) are listed below instead.
#[allow(dead_code, reason = "not every example draws the board")]
pub fn board_text(pieces: &[PieceView]) -> String {
    let mut grid = [[' '; 8]; 8];
    for (rank, row) in grid.iter_mut().enumerate() {
        for (file, cell) in row.iter_mut().enumerate() {
            // a1 is a dark (playing) square.
            if (rank + file) % 2 == 0 {
                *cell = '.';
            }
        }
    }
    let mut elsewhere = Vec::new();
    for piece in pieces {
        let symbol = match (piece.color, piece.king) {
            (Color::Dark, false) => 'x',
            (Color::Dark, true) => 'X',
            (Color::Light, false) => 'o',
            (Color::Light, true) => 'O',
        };
        match square_index(&piece.square) {
            Some((file, rank)) => grid[rank][file] = symbol,
            None => elsewhere.push(format!("{symbol}@{}", piece.square)),
        }
    }
    let mut text = String::new();
    for (rank, row) in grid.iter().enumerate().rev() {
        text.push_str(&format!("{} ", rank + 1));
        for cell in row {
            text.push(' ');
            text.push(*cell);
        }
        text.push('\n');
    }
    text.push_str("   a b c d e f g h\n");
    if !elsewhere.is_empty() {
        text.push_str(&format!("pieces: {}\n", elsewhere.join(" ")));
    }
    text
}

fn square_index(square: &str) -> Option<(usize, usize)> {
    let mut chars = square.chars();
    let file = chars.next()?;
    let rank: usize = chars.as_str().parse().ok()?;
    if !('a'..='h').contains(&file) || !(1..=8).contains(&rank) {
        return None;
    }
    Some((file as usize - 'a' as usize, rank - 1))
}
