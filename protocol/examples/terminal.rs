//! A terminal client: creates a lobby, or joins (or watches) one by code or invite
//! link, and plays it with a text board.
//!
//! ```sh
//! # create a lobby and wait for a friend (prints the invite link):
//! cargo run -p jumpgate-protocol --features client --example terminal -- \
//!     ws://127.0.0.1:8080/ws --create [--rule-set russian] [--series 3] [--invite-only]
//! # join one, or watch it:
//! cargo run -p jumpgate-protocol --features client --example terminal -- \
//!     ws://127.0.0.1:8080/ws http://127.0.0.1:8080/r/K7QP2DXM [--watch]
//! ```
//!
//! Type a move in the rule set's notation (`11-15`) or as squares (`c3 d4`, `c3 e5 g7`
//! for a capture), or one of `draw`, `accept`, `decline`, `resign`, `next`, `rematch`,
//! `board`, `leave`, `quit`. Add `--protocol 1` and `--json` to pick the subprotocol
//! (default: protocol 2, MessagePack).

mod common;

use jumpgate_protocol::session::{
    LobbyAddress, MoveInput, NewLobby, Session, SessionError, SessionState,
};
use jumpgate_protocol::{Phase, RuleSet};
use tokio::sync::mpsc;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: terminal WS_URL (--create [--rule-set NAME] [--series N] \
                 [--invite-only] | CODE_OR_INVITE_LINK [--watch]) [--protocol 1|2] [--json]";
    let Some((options, args)) = common::session_options("jumpgate-terminal/1")? else {
        println!("{usage}");
        return Ok(());
    };
    let Some((url, rest)) = args.split_first() else {
        return Err(usage.into());
    };
    let session = Session::connect(url, options).await?;
    println!("connected as {}", session.identity().name);

    let room = if rest.iter().any(|arg| arg == "--create") {
        let lobby = new_lobby(rest)?;
        let room = session.create_lobby(lobby).await?;
        println!(
            "lobby {} created; invite link: {}",
            room.code,
            room.invite_link.as_deref().unwrap_or("(none)")
        );
        room
    } else {
        let address: LobbyAddress = rest
            .iter()
            .find(|arg| !arg.starts_with("--"))
            .ok_or(usage)?
            .parse()?;
        if rest.iter().any(|arg| arg == "--watch") {
            session.watch(&address).await?
        } else {
            session.join(&address).await?
        }
    };
    println!("in lobby {} ({})", room.code, room.rule_set);

    // Lines from the terminal, read on a thread of their own.
    let (lines_tx, mut lines) = mpsc::channel::<String>(16);
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if lines_tx.blocking_send(line).is_err() {
                break;
            }
        }
    });

    let mut updates = session.updates();
    let mut shown = 0;
    show(&updates.borrow_and_update(), &mut shown);
    loop {
        tokio::select! {
            changed = updates.changed() => {
                if changed.is_err() {
                    println!("the session has ended");
                    break;
                }
                let state = updates.borrow_and_update().clone();
                if let Some(reason) = &state.ended {
                    println!("the session has ended: {reason}");
                    break;
                }
                if state.room.is_none() {
                    println!("you are no longer in the lobby");
                    break;
                }
                show(&state, &mut shown);
            }
            line = lines.recv() => {
                let Some(line) = line else { break };
                match act(&session, line.trim()).await {
                    Ok(Continue::Yes) => {}
                    Ok(Continue::No) => break,
                    Err(err) => println!("{err}"),
                }
            }
        }
    }
    session.close().await;
    Ok(())
}

fn new_lobby(args: &[String]) -> Result<NewLobby, String> {
    let mut lobby = NewLobby::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rule-set" => {
                let name = args.next().ok_or("--rule-set needs a name")?;
                lobby.rule_set = *RuleSet::ALL
                    .iter()
                    .find(|rule_set| rule_set.as_str() == name)
                    .ok_or_else(|| format!("no rule set {name:?}"))?;
            }
            "--series" => {
                let length = args.next().ok_or("--series needs a length")?;
                lobby.series_length = length.parse().map_err(|_| "--series takes 1, 3, 5 or 7")?;
            }
            "--invite-only" => lobby.invite_only = true,
            _ => {}
        }
    }
    Ok(lobby)
}

enum Continue {
    Yes,
    No,
}

async fn act(session: &Session, line: &str) -> Result<Continue, SessionError> {
    match line {
        "" => {}
        "quit" => return Ok(Continue::No),
        "leave" => {
            session.leave().await?;
            return Ok(Continue::No);
        }
        "board" => show(&session.state(), &mut 0),
        "draw" => session.offer_draw().await?,
        "accept" => session.accept_draw().await?,
        "decline" => session.decline_draw().await?,
        "resign" => session.resign().await?,
        "next" => session.next_round().await?,
        "rematch" => session.rematch().await?,
        "help" => println!(
            "a move (11-15, or squares: c3 d4), draw, accept, decline, resign, next, \
             rematch, board, leave, quit"
        ),
        text => {
            let squares: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
            let mv = if squares.len() > 1 {
                MoveInput::Path(squares)
            } else {
                MoveInput::Notation(text.to_owned())
            };
            session.play(mv).await?;
        }
    }
    Ok(Continue::Yes)
}

/// Prints the room when its version is newer than `shown`.
fn show(state: &SessionState, shown: &mut u64) {
    let Some(room) = &state.room else { return };
    if room.version <= *shown {
        return;
    }
    *shown = room.version;
    let names: Vec<String> = room
        .players
        .iter()
        .map(|player| {
            player
                .as_ref()
                .map_or("(empty)".to_owned(), |p| p.name.clone())
        })
        .collect();
    println!(
        "\n{}: {} v {} | round {} | wins {:?} | {}",
        room.code,
        names[0],
        names.get(1).map_or("", String::as_str),
        room.series.round,
        room.series.wins,
        room.phase
    );
    let Some(game) = &room.game else {
        println!("waiting for an opponent…");
        return;
    };
    print!("{}", common::board_text(&game.pieces));
    if let Some(last) = &game.last_move {
        println!("last move: {}", last.notation);
    }
    if let Some(result) = &game.result {
        println!("game over: {:?} ({})", result.winner, result.reason);
    } else if room.phase == Phase::Playing {
        let you = match state.color() {
            Some(color) => format!("you play {color}"),
            None => "watching".to_owned(),
        };
        let turn = if state.my_turn() {
            "your move"
        } else {
            "waiting"
        };
        println!("{} to move ({you}; {turn})", game.turn);
        if state.my_turn() {
            let legal: Vec<String> = state.legal_paths().iter().map(|p| p.join(" ")).collect();
            println!("legal: {}", legal.join(", "));
        }
        if let Some(offer) = game.draw_offer {
            println!("{offer} offers a draw (accept / decline)");
        }
    }
}
