use jumpgate_protocol::session::{LobbyAddress, Session, SessionOptions};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The server, and the lobby as people paste it: a room code or an invite link.
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "ws://127.0.0.1:8080/ws".to_owned());
    let lobby: LobbyAddress = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8080/r/K7QP2DXM".to_owned())
        .parse()?;
    let session = Session::connect(&url, SessionOptions::default()).await?;
    session.join(&lobby).await?;
    loop {
        // Our turn, or the series is over (or we are out of the lobby).
        let state = session.wait_for(|s| s.my_turn() || s.finished()).await?;
        if state.finished() {
            break;
        }
        let Some(path) = state.legal_paths().into_iter().next() else {
            break;
        };
        // Returns once the session's view shows the move, reconnections included.
        session.play(path).await?;
    }
    println!("series over");
    session.close().await;
    Ok(())
}
