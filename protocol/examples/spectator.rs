//! A spectator that watches a lobby by its code (or invite link) and prints every move,
//! each game's result and the series' end.
//!
//! ```sh
//! cargo run -p jumpgate-protocol --features client --example spectator -- \
//!     ws://127.0.0.1:8080/ws K7QP2DXM [--follow] [--protocol 1] [--json]
//! ```
//!
//! Moves print as `move NOTATION`, results as `game over: …`. It stops when
//! the series is over, unless `--follow` keeps it watching (rematches included).

mod common;

use jumpgate_protocol::Phase;
use jumpgate_protocol::session::{LobbyAddress, Session, SessionEvent};
use tokio::sync::broadcast::error::RecvError;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: spectator WS_URL CODE_OR_INVITE_LINK [--follow] [--protocol 1|2] [--json]";
    let Some((options, mut args)) = common::session_options("jumpgate-spectator/1")? else {
        println!("{usage}");
        return Ok(());
    };
    let follow = args.iter().any(|arg| arg == "--follow");
    args.retain(|arg| arg != "--follow");
    let [url, lobby] = args.as_slice() else {
        return Err(usage.into());
    };
    let address: LobbyAddress = lobby.parse()?;
    let session = Session::connect(url, options).await?;
    // Subscribe first, so the moves played before we came are told too.
    let mut events = session.events();
    let room = session.watch(&address).await?;
    println!(
        "watching {} ({}, best of {})",
        room.code, room.rule_set, room.series_length
    );

    let mut results_told = 0;
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            Err(RecvError::Lagged(missed)) => {
                eprintln!("fell {missed} events behind");
                continue;
            }
            Err(RecvError::Closed) => break,
        };
        match event {
            SessionEvent::MovePlayed { notation } => println!("move {notation}"),
            SessionEvent::Reconnected(reconnection) => {
                println!("reconnected after {}", reconnection.cause);
            }
            SessionEvent::Ended(reason) => {
                println!("the session ended: {reason}");
                break;
            }
            SessionEvent::Message(_) | SessionEvent::Undecodable(_) => {}
        }
        let Some(room) = session.room() else {
            println!("the lobby is closed");
            break;
        };
        let finished = room.series.wins.iter().sum::<u32>() + room.series.draws;
        if finished != results_told {
            results_told = finished;
            if let Some(result) = room.game.as_ref().and_then(|game| game.result) {
                println!("game over: {:?} ({})", result.winner, result.reason);
            }
        }
        if matches!(room.phase, Phase::Finished | Phase::Ended) && !follow {
            println!(
                "series over: wins {:?}, draws {}",
                room.series.wins, room.series.draws
            );
            break;
        }
    }
    session.close().await;
    Ok(())
}
