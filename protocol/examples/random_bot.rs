//! A bot that joins a lobby by its code (or invite link) and plays random legal moves
//! until the series ends.
//!
//! ```sh
//! cargo run -p jumpgate-protocol --features client --example random_bot -- \
//!     ws://127.0.0.1:8080/ws K7QP2DXM [--protocol 1] [--json]
//! ```
//!
//! It prints each move it plays, `game over: …` after each game and `series over: …`
//! at the end, then leaves with exit status 0.

mod common;

use jumpgate_protocol::session::{LobbyAddress, Session, SessionError};
use jumpgate_protocol::{ErrorCode, Phase};
use rand::seq::IndexedRandom;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: random_bot WS_URL CODE_OR_INVITE_LINK [--protocol 1|2] [--json]";
    let Some((options, args)) = common::session_options("jumpgate-random-bot/1")? else {
        println!("{usage}");
        return Ok(());
    };
    let [url, lobby] = args.as_slice() else {
        return Err(usage.into());
    };
    let address: LobbyAddress = lobby.parse()?;
    let session = Session::connect(url, options).await?;
    let room = session.join(&address).await?;
    println!("joined {} as {}", room.code, session.identity().name);

    // The room version last acted on: a state where it is our turn again is newer.
    let mut acted_on = 0;
    let mut games_told = 0;
    loop {
        let state = session
            .wait_for(|state| match &state.room {
                None => true,
                Some(room) => room.version > acted_on,
            })
            .await?;
        let Some(room) = &state.room else {
            println!("no longer in the lobby");
            break;
        };
        acted_on = room.version;
        let finished_games = room.series.wins.iter().sum::<u32>() + room.series.draws;
        if finished_games > games_told {
            games_told = finished_games;
            if let Some(result) = room.game.as_ref().and_then(|game| game.result) {
                println!("game over: {:?} ({})", result.winner, result.reason);
            }
        }
        match room.phase {
            Phase::Finished | Phase::Ended => {
                let result = room.series.result.as_ref();
                println!(
                    "series over: winner seat {:?} ({}), wins {:?}, draws {}",
                    result.and_then(|r| r.winner),
                    result.map_or("ended".to_owned(), |r| r.reason.to_string()),
                    room.series.wins,
                    room.series.draws
                );
                break;
            }
            Phase::Break => {
                let asked = state
                    .seat()
                    .is_some_and(|seat| room.next_round[usize::from(seat)]);
                if !asked {
                    ignore_lost_races(session.next_round().await)?;
                }
            }
            Phase::Playing if state.my_turn() => {
                let legal = state.legal_paths();
                let Some(path) = legal.choose(&mut rand::rng()).cloned() else {
                    continue;
                };
                println!("playing {}", path.join("-"));
                ignore_lost_races(session.play(path).await.map(|_| ()))?;
            }
            Phase::Waiting | Phase::Playing => {}
        }
    }
    session.leave().await.or_else(|err| match err.code() {
        Some(ErrorCode::NotInLobby) => Ok(()),
        _ => Err(err),
    })?;
    session.close().await;
    Ok(())
}

/// Passes refusals that only mean the room moved on before the request arrived (the
/// clock ran out, the break ended): the next state says what to do.
fn ignore_lost_races(answer: Result<(), SessionError>) -> Result<(), SessionError> {
    match answer {
        Err(err)
            if matches!(
                err.code(),
                Some(ErrorCode::NotYourTurn | ErrorCode::NoGameInProgress | ErrorCode::NotNow)
            ) =>
        {
            eprintln!("refused, carrying on: {err}");
            Ok(())
        }
        other => other,
    }
}
