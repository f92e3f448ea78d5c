//! The Rust blocks of CLIENTS.md ("The five steps") and of protocol/README.md ("A lobby's
//! pages"), in the order the documents give them, made into one program that runs.
//!
//! The protocol crate's tests check that every such block appears here word for word,
//! and the end-to-end tests run this against a real server, so a snippet in the
//! documents that no longer builds, hangs or fails breaks the test command.
//!
//! `doc_snippets URL CODE`: connects to `URL`, joins the waiting lobby `CODE`, plays
//! one move when its turn comes, reads the lobby's pages, and comes back with its token.
use jumpgate_protocol::session::{LobbyAddress, Session, SessionOptions};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(code)) = (args.next(), args.next()) else {
        return Err("usage: doc_snippets URL CODE".into());
    };
    let (url, code) = (url.as_str(), code.as_str());

    // CLIENTS.md, step 2.
    let session = Session::connect(url, SessionOptions::default()).await?;
    let token = session.state().token; // keep it to come back as the same player

    // CLIENTS.md, step 3.
    session.join(&code.parse()?).await?;

    // CLIENTS.md, step 4.
    let state = session.wait_for(|s| s.my_turn()).await?;
    let after = session.play(state.legal_paths()[0].clone()).await?; // the move is in `after`
    let ply = after
        .room
        .as_ref()
        .and_then(|room| room.game.as_ref())
        .map(|g| g.ply);
    println!("played; the game is at ply {}", ply.unwrap_or(0));

    // protocol/README.md, "A lobby's pages".
    let lobby: LobbyAddress = code.parse()?; // a room code or an invite link
    let pages = session.pages()?;
    println!("{:?}", pages.lobby_summary(&lobby).await?.phase);
    print!("{}", pages.finished_games_pdn(&lobby).await?); // the games it has finished

    // The token of step 2 brings the same player back.
    let id = session.state().identity.id;
    session.close().await;
    let again = SessionOptions {
        token: Some(token),
        ..SessionOptions::default()
    };
    let back = Session::connect(url, again).await?;
    assert_eq!(back.state().identity.id, id, "the token is the same player");
    println!("back as {id}");
    back.close().await;
    Ok(())
}
