//! Three instances on one Redis behind HAProxy running `deploy/haproxy.cfg`
//! (only its addresses changed): lobbies and solo games are created on
//! whichever instance a fresh connection lands on, and a later connection
//! that names them is served wherever the balancer's hash sends it — the
//! room is handed over to that instance if another one held it.

use jumpgate_e2e::balancer::Balancer;
use jumpgate_e2e::{Player, RedisServer, TestServer, http_get};
use jumpgate_protocol::{BotLevel, ClientMessage, Encoding, RuleSet, ServerMessage, SoloMode};

/// Rounds per check: new lobbies land round robin, so about two in three are
/// created away from the instance their code hashes to.
const ROUNDS: usize = 6;

/// An instance on the shared Redis, with the token secret all share.
async fn instance(redis: &RedisServer) -> TestServer {
    let url = redis.url();
    TestServer::start(move |s| {
        s.redis_url = Some(url);
        s.token_secret = b"balancer-test-secret-0123456789abcdef".to_vec();
    })
    .await
}

async fn three(redis: &RedisServer) -> [TestServer; 3] {
    [
        instance(redis).await,
        instance(redis).await,
        instance(redis).await,
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lobby_is_reached_through_the_balancer_by_its_code() {
    let redis = RedisServer::start().await;
    let servers = three(&redis).await;
    let balancer = Balancer::start(&servers.iter().map(|s| s.addr).collect::<Vec<_>>()).await;
    let mut moved = 0;
    for _ in 0..ROUNDS {
        let mut host = Player::connect_to(&balancer.ws(None), Encoding::MsgPack, None).await;
        host.request(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set: RuleSet::American,
            series_length: 1,
            invite_only: false,
            stake: None,
            pace: None,
            draw_rules: None,
        })
        .await
        .unwrap();
        let code = host.state_until(|_| true).await.code;
        assert_eq!(
            http_get(balancer.addr, &format!("/r/{code}?format=json"))
                .await
                .0,
            200,
            "{code} by link"
        );
        // The guest names the code, so it reaches the instance the hash
        // picks; the lobby is handed over there if it was created elsewhere.
        let mut guest =
            Player::connect_to(&balancer.ws(Some(&code)), Encoding::MsgPack, None).await;
        let state = guest.join(&code).await;
        assert!(
            state.players.iter().all(Option::is_some),
            "{code}: both seated"
        );
        // The host either stayed with the lobby or was told it moved; then
        // it comes back by naming the code, to its seat.
        let host_moved = loop {
            match tokio::time::timeout(std::time::Duration::from_millis(300), host.recv()).await {
                Ok(ServerMessage::Shutdown { .. }) => break true,
                Ok(_) => continue,
                Err(_) => break false,
            }
        };
        if host_moved {
            moved += 1;
            let token = host.token.clone();
            host =
                Player::connect_to(&balancer.ws(Some(&code)), Encoding::MsgPack, Some(token)).await;
            let back = host.join(&code).await;
            assert_eq!(back.players.iter().flatten().count(), 2, "{code}");
        }
        // The game is played where the lobby now is.
        let mover = if host.my_turn() {
            &mut host
        } else {
            &mut guest
        };
        mover.play_first_legal().await;
        let other = guest
            .state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 1))
            .await;
        assert_eq!(other.code, code);
    }
    eprintln!("{moved} of {ROUNDS} lobbies were handed over to the instance their code hashes to");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_solo_game_is_resumed_through_the_balancer_by_its_id() {
    let redis = RedisServer::start().await;
    let servers = three(&redis).await;
    let balancer = Balancer::start(&servers.iter().map(|s| s.addr).collect::<Vec<_>>()).await;
    for _ in 0..ROUNDS {
        let mut player = Player::connect_to(&balancer.ws(None), Encoding::MsgPack, None).await;
        player
            .request(|seq| ClientMessage::StartSolo {
                seq,
                rule_set: RuleSet::American,
                mode: SoloMode::Computer,
                level: Some(BotLevel::Tamer),
                ranked: false,
            })
            .await
            .unwrap();
        let id = player.solo_until(|_| true).await.id;
        let token = player.token.clone();
        drop(player);

        // A new connection, as after a reload or a dropped network.
        let mut back =
            Player::connect_to(&balancer.ws(Some(&id)), Encoding::MsgPack, Some(token)).await;
        back.request(|seq| ClientMessage::ResumeSolo { seq })
            .await
            .unwrap_or_else(|code| panic!("{id}: resume_solo refused: {code:?}"));
        let resumed = back.solo_until(|_| true).await;
        assert_eq!(resumed.id, id);
    }
}
