//! Two sharded instances behind HAProxy running `deploy/haproxy.cfg` (only its
//! addresses changed): lobbies and solo games are created on whichever instance a
//! fresh connection lands on, and a later connection that names the lobby or the
//! solo game reaches that same instance.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jumpgate_e2e::{Endpoint, PATIENCE, Player, TestServer, free_port, http_get};
use jumpgate_protocol::{BotLevel, ClientMessage, Encoding, RuleSet, SoloMode};
use jumpgate_server::code::RoomCode;

/// Rounds per check. Each round's first connection is spread round robin, so
/// both instances create games; if naming a game did not lead back to its
/// instance, a round would fail half the time and 6 rounds would all pass with
/// odds of 1 in 64.
const ROUNDS: usize = 6;

/// HAProxy in the foreground; killed on drop.
#[derive(Debug)]
struct Balancer {
    addr: SocketAddr,
    dir: PathBuf,
    child: std::process::Child,
}

impl Balancer {
    /// Starts HAProxy with the deployment's configuration, pointed at `servers`.
    async fn start(servers: [SocketAddr; 2]) -> Balancer {
        let deployed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/haproxy.cfg");
        let config = std::fs::read_to_string(&deployed).unwrap();
        let port = free_port();
        let config = local_config(&config, port, servers);
        let dir =
            std::env::temp_dir().join(format!("jumpgate-haproxy-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("haproxy.cfg");
        std::fs::write(&file, config).unwrap();
        let child = std::process::Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&file)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("haproxy is installed (the test command installs it)");
        let balancer = Balancer {
            addr: format!("127.0.0.1:{port}").parse().unwrap(),
            dir,
            child,
        };
        // Ready once it answers for both instances (round robin).
        let deadline = tokio::time::Instant::now() + PATIENCE;
        let mut answered = 0;
        while answered < 2 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "haproxy did not start"
            );
            if tokio::net::TcpStream::connect(balancer.addr).await.is_ok()
                && http_get(balancer.addr, "/readyz").await.0 == 200
            {
                answered += 1;
            } else {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        balancer
    }

    /// The WebSocket address, naming a lobby or solo game when given.
    fn ws(&self, room: Option<&str>) -> Via {
        Via(match room {
            Some(room) => format!("ws://{}/ws?room={room}", self.addr),
            None => format!("ws://{}/ws", self.addr),
        })
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A WebSocket URL through the balancer.
struct Via(String);

impl Endpoint for Via {
    fn ws(&self) -> String {
        self.0.clone()
    }
}

/// `deploy/haproxy.cfg` with loopback addresses instead of compose's (the bind
/// port, the two servers, no Docker DNS resolver) and fewer connections. Fails loudly if the file no
/// longer has what is replaced.
fn local_config(config: &str, port: u16, servers: [SocketAddr; 2]) -> String {
    let mut out = String::new();
    let mut in_resolvers = false;
    for line in config.lines() {
        if line.starts_with("resolvers ") {
            in_resolvers = true;
            continue;
        }
        if in_resolvers {
            if line.starts_with(' ') {
                continue;
            }
            in_resolvers = false;
        }
        out.push_str(line);
        out.push('\n');
    }
    let replacements = [
        ("bind :8080".to_owned(), format!("bind 127.0.0.1:{port}")),
        // 20,000 connections need more file descriptors than a test may open.
        ("maxconn 20000".to_owned(), "maxconn 1000".to_owned()),
        (
            " resolvers docker init-addr last,libc,none".to_owned(),
            String::new(),
        ),
        (
            "server jumpgate1 jumpgate1:8080".to_owned(),
            format!("server jumpgate1 {}", servers[0]),
        ),
        (
            "server jumpgate2 jumpgate2:8080".to_owned(),
            format!("server jumpgate2 {}", servers[1]),
        ),
    ];
    for (from, to) in replacements {
        assert!(
            out.contains(&from),
            "deploy/haproxy.cfg no longer has {from:?}"
        );
        out = out.replace(&from, &to);
    }
    out
}

/// Instance `index` of two, with the token secret both share.
async fn instance(index: u32) -> TestServer {
    TestServer::start(|s| {
        s.shard = Some((index, 2));
        s.token_secret = b"balancer-test-secret-0123456789".to_vec();
    })
    .await
}

/// The instance the shard rule gives a code (`crc32(CODE) mod 2`).
fn owner(code: &str) -> usize {
    let code = RoomCode::parse(code).expect("a room code");
    usize::from(!code.in_shard(Some((0, 2))))
}

#[tokio::test]
async fn a_lobby_is_reached_through_the_balancer_by_its_code() {
    let servers = [instance(0).await, instance(1).await];
    let balancer = Balancer::start([servers[0].addr, servers[1].addr]).await;
    let mut created_on = [0; 2];
    for _ in 0..ROUNDS {
        let mut host = Player::connect_to(&balancer.ws(None), Encoding::MsgPack, None).await;
        host.request(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set: RuleSet::American,
            series_length: 1,
            invite_only: false,
            stake: None,
        })
        .await
        .unwrap();
        let code = host.state_until(|_| true).await.code;
        // The instance that created it is the one the balancer sends the code to,
        // and only it knows the lobby.
        let home = owner(&code);
        created_on[home] += 1;
        let path = format!("/r/{code}");
        assert_eq!(http_get(servers[home].addr, &path).await.0, 200, "{code}");
        assert_eq!(
            http_get(servers[1 - home].addr, &path).await.0,
            404,
            "{code}"
        );
        assert_eq!(
            http_get(balancer.addr, &path).await.0,
            200,
            "{code} by link"
        );

        let mut guest =
            Player::connect_to(&balancer.ws(Some(&code)), Encoding::MsgPack, None).await;
        let state = guest.join(&code).await;
        assert!(
            state.players.iter().all(Option::is_some),
            "{code}: both seated"
        );
    }
    assert!(
        created_on.iter().all(|&n| n > 0),
        "round robin spread the new lobbies over both instances: {created_on:?}"
    );
}

#[tokio::test]
async fn a_solo_game_is_resumed_through_the_balancer_by_its_id() {
    let servers = [instance(0).await, instance(1).await];
    let balancer = Balancer::start([servers[0].addr, servers[1].addr]).await;
    let mut created_on = [0; 2];
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
        let code = id.strip_prefix('S').expect("solo ids are S + a code");
        created_on[owner(code)] += 1;
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
    assert!(
        created_on.iter().all(|&n| n > 0),
        "round robin spread the new games over both instances: {created_on:?}"
    );
}
