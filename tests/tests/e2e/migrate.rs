//! `jumpgate migrate` with real processes: a data directory where lobbies
//! were played (several rule sets, a finished game, a series halfway, a
//! staked series holding its escrow, a settled one, a ranked result, an
//! unloaded correspondence lobby) is copied to an empty Redis, served from
//! there, and copied back into a new data directory and served again: the
//! players rejoin where they were, and the money, the records and the
//! leaderboard are what they were. And what it refuses: a destination that
//! is not empty, a directory a server runs on, a Redis an instance runs on.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Output;

use jumpgate_e2e::{
    DataDir, JumpgateProcess, PATIENCE, Player, RedisServer, account_token, free_port,
    jumpgate_binary, lobby_pair,
};
use jumpgate_protocol::{ClientMessage, Encoding, Pace, Phase, RoomState, RuleSet};

use crate::faults::staked_lobby;
use crate::persistence::play;

const ISSUER_SECRET: &[u8] = b"migrate-issuer-secret-0123456789abcdef";
const ADMIN: &str = "migrate-admin-token-0123456789abcdef";

fn token(sub: &str) -> String {
    account_token(ISSUER_SECRET, sub, &format!("Name {sub}"))
}

/// What every server of the test shares besides its store: accounts, the
/// operator API, short breaks, long clocks (no game ends on time while
/// the servers are down), and correspondence lobbies unloaded at once.
fn common_env(admin: SocketAddr) -> Vec<(&'static str, String)> {
    vec![
        ("JUMPGATE_JWT_ISSUER", "https://id.test".to_owned()),
        (
            "JUMPGATE_JWT_HS256",
            format!("k1={}", std::str::from_utf8(ISSUER_SECRET).unwrap()),
        ),
        ("JUMPGATE_ADMIN_TOKEN", ADMIN.to_owned()),
        ("JUMPGATE_ADMIN_LISTEN", admin.to_string()),
        ("JUMPGATE_BREAK_MS", "300".to_owned()),
        ("JUMPGATE_MOVE_CLOCK_MS", "120000".to_owned()),
        ("JUMPGATE_RESUME_GRACE_MS", "60000".to_owned()),
        ("JUMPGATE_HEARTBEAT_TTL_MS", "1000".to_owned()),
        ("JUMPGATE_CORRESPONDENCE_UNLOAD_SECS", "1".to_owned()),
        ("JUMPGATE_CORRESPONDENCE_CLAIM_SECS", "3600".to_owned()),
    ]
}

fn on_dir(dir: &DataDir, admin: SocketAddr) -> Vec<(&'static str, String)> {
    let mut env = dir.env();
    env.extend(common_env(admin));
    env
}

fn on_redis(redis: &RedisServer, admin: SocketAddr) -> Vec<(&'static str, String)> {
    let mut env = vec![("JUMPGATE_REDIS_URL", redis.url())];
    env.extend(common_env(admin));
    env
}

/// Runs `jumpgate migrate --from FROM --to TO`.
fn migrate(from: &str, to: &str) -> Output {
    migrate_with(from, to, &[])
}

fn migrate_with(from: &str, to: &str, env: &[(&str, &str)]) -> Output {
    std::process::Command::new(jumpgate_binary())
        .args(["migrate", "--from", from, "--to", to])
        .env_remove("JUMPGATE_TOKEN_SECRET")
        .envs(env.iter().copied())
        .output()
        .expect("jumpgate runs")
}

fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn dir_arg(dir: &Path) -> String {
    dir.display().to_string()
}

/// The JSON the operator API answers at `path`.
async fn admin_json(admin: SocketAddr, path: &str) -> serde_json::Value {
    let auth = format!("Bearer {ADMIN}");
    let (status, response) =
        jumpgate_e2e::http_get_with(admin, path, &[("Authorization", &auth)]).await;
    assert_eq!(status, 200, "{path}: {response}");
    body_json(&response)
}

fn body_json(response: &str) -> serde_json::Value {
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    let start = body.find('{').unwrap();
    let end = body.rfind('}').unwrap();
    serde_json::from_str(&body[start..=end]).unwrap()
}

/// Each account's balance and ledger, as the operator API shows them.
async fn wallets(admin: SocketAddr, accounts: &[String]) -> Vec<serde_json::Value> {
    let mut seen = Vec::new();
    for account in accounts {
        let wallet = admin_json(admin, &format!("/api/admin/wallets/{account}")).await;
        seen.push(serde_json::json!({
            "account": account,
            "balance": wallet["balance"],
            "ledger": wallet["ledger"],
        }));
    }
    seen
}

/// The public leaderboard's first page (its JSON).
async fn board(server: &JumpgateProcess, rule_set: &str) -> serde_json::Value {
    let (status, response) =
        jumpgate_e2e::http_get(server.addr, &format!("/api/leaderboards/{rule_set}")).await;
    assert_eq!(status, 200, "{response}");
    body_json(&response)
}

/// What a player sees of a lobby that must survive the copy: its phase,
/// its series, the moves of its game, and the seated players' records.
fn position(state: &RoomState) -> String {
    let records: Vec<_> = state
        .players
        .iter()
        .map(|p| p.as_ref().map(|p| (&p.id, &p.record)))
        .collect();
    format!(
        "{:?} {:?} {:?} {:?} {records:?} {:?}",
        state.phase,
        state.series,
        state.stake,
        state.game.as_ref().map(|g| (&g.moves, g.ply, &g.fen)),
        state.head_to_head,
    )
}

/// A lobby that must come back, with the tokens of its two players.
struct Kept {
    code: String,
    tokens: [String; 2],
    seen: String,
}

/// Rejoins every kept lobby, checks it is where it was, and plays one move
/// in each game still in play (so the copy is written to, too); returns
/// what each looks like afterwards.
async fn rejoin_and_play(server: &JumpgateProcess, kept: &mut [Kept]) {
    for lobby in kept.iter_mut() {
        let mut a = Player::connect_to(server, Encoding::Json, Some(lobby.tokens[0].clone())).await;
        let mut b =
            Player::connect_to(server, Encoding::MsgPack, Some(lobby.tokens[1].clone())).await;
        let state = a.join(&lobby.code).await;
        b.join(&lobby.code).await;
        assert_eq!(
            position(&state),
            lobby.seen,
            "{} came back as it was",
            lobby.code
        );
        if state.phase == Phase::Playing {
            play(&mut a, &mut b, 1).await;
        }
        lobby.seen = position(a.state.as_ref().unwrap());
    }
}

/// Rejoins an unloaded correspondence lobby (it is loaded on request) and
/// checks its game.
async fn rejoin_dormant(server: &JumpgateProcess, kept: &Kept) {
    let mut a = Player::connect_to(server, Encoding::Json, Some(kept.tokens[0].clone())).await;
    let state = a.join(&kept.code).await;
    assert_eq!(position(&state), kept.seen, "the unloaded lobby came back");
}

/// Played on the first server (on a data directory): everything the copy
/// must carry. Returns the lobbies to come back to, the correspondence one
/// apart, and the accounts whose money is compared.
async fn play_everything(server: &JumpgateProcess) -> (Vec<Kept>, Kept, Vec<String>) {
    let mut kept = Vec::new();
    // Games in progress in three rule sets.
    for (rule_set, plies) in [
        (RuleSet::Russian, 6),
        (RuleSet::Brazilian, 5),
        (RuleSet::Italian, 3),
    ] {
        let (mut a, mut b, code) = lobby_pair(server, rule_set, 1).await;
        play(&mut a, &mut b, plies).await;
        kept.push(Kept {
            code,
            tokens: [a.token.clone(), b.token.clone()],
            seen: position(a.state.as_ref().unwrap()),
        });
    }
    // A best of three: the first game finished (its PDN stored), the second
    // under way.
    let (mut a, mut b, code) = lobby_pair(server, RuleSet::American, 3).await;
    play(&mut a, &mut b, 2).await;
    // Drawn by agreement: the round ends, the series goes on.
    {
        let (offers, accepts) = if a.my_turn() {
            (&mut a, &mut b)
        } else {
            (&mut b, &mut a)
        };
        offers
            .request(|seq| ClientMessage::OfferDraw { seq })
            .await
            .unwrap();
        accepts
            .request(|seq| ClientMessage::AcceptDraw { seq })
            .await
            .unwrap();
    }
    a.state_until(|s| s.phase == Phase::Playing && s.game.as_ref().is_some_and(|g| g.ply == 0))
        .await;
    b.state_until(|s| s.phase == Phase::Playing && s.game.as_ref().is_some_and(|g| g.ply == 0))
        .await;
    play(&mut a, &mut b, 2).await;
    kept.push(Kept {
        code,
        tokens: [a.token.clone(), b.token.clone()],
        seen: position(a.state.as_ref().unwrap()),
    });

    // A staked series under way (600 held) and one settled.
    let mut host = Player::connect_to(server, Encoding::Json, Some(token("ann"))).await;
    let code = staked_lobby(&mut host, 300).await;
    let mut guest = Player::connect_to(server, Encoding::MsgPack, Some(token("bob"))).await;
    guest.join(&code).await;
    host.phase(Phase::Playing).await;
    play(&mut host, &mut guest, 2).await;
    kept.push(Kept {
        code,
        tokens: [host.token.clone(), guest.token.clone()],
        seen: position(host.state.as_ref().unwrap()),
    });
    let mut cy = Player::connect_to(server, Encoding::Json, Some(token("cy"))).await;
    let code = staked_lobby(&mut cy, 200).await;
    let mut dee = Player::connect_to(server, Encoding::Json, Some(token("dee"))).await;
    dee.join(&code).await;
    cy.phase(Phase::Playing).await;
    cy.request(|seq| ClientMessage::Resign { seq })
        .await
        .unwrap();
    cy.phase(Phase::Finished).await;
    // The series is recorded once it ended; a rejoin shows the record.
    let cy_token = cy.token.clone();
    let finished = jumpgate_e2e::probe_while(
        PATIENCE,
        || async {
            let mut again =
                Player::connect_to(server, Encoding::Json, Some(cy_token.clone())).await;
            again.join(&code).await
        },
        |s| s.head_to_head.as_ref().is_none_or(|h| h.wins != [0, 1]),
    )
    .await;
    assert_eq!(
        finished.head_to_head.as_ref().map(|h| h.wins.clone()),
        Some(vec![0, 1]),
        "dee's series won is recorded"
    );
    kept.push(Kept {
        code,
        tokens: [cy.token.clone(), dee.token.clone()],
        seen: position(&finished),
    });

    // A ranked solo game against the Executive, resigned: a board entry.
    let mut eve = Player::connect_to(server, Encoding::Json, Some(token("eve"))).await;
    eve.request(|seq| ClientMessage::StartSolo {
        seq,
        rule_set: RuleSet::American,
        mode: jumpgate_protocol::SoloMode::Computer,
        level: Some(jumpgate_protocol::BotLevel::Executive),
        ranked: true,
    })
    .await
    .unwrap();
    eve.request(|seq| ClientMessage::Resign { seq })
        .await
        .unwrap();
    // Its result is scored before the next request is read.
    eve.request(|seq| ClientMessage::Resync { seq, since: 0 })
        .await
        .unwrap();

    // A correspondence lobby with one move, left alone: it is unloaded.
    let mut fay = Player::connect_to(server, Encoding::Json, Some(token("fay"))).await;
    let seq = fay
        .send(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set: RuleSet::Russian,
            series_length: 1,
            invite_only: false,
            stake: None,
            pace: Some(Pace::Correspondence),
            draw_rules: None,
        })
        .await;
    fay.expect_ack(seq).await;
    let code = fay.state_until(|_| true).await.code;
    let mut gus = Player::connect_to(server, Encoding::Json, Some(token("gus"))).await;
    gus.join(&code).await;
    fay.state_until(|s| s.game.is_some()).await;
    let mover = if fay.my_turn() { &mut fay } else { &mut gus };
    mover.play_first_legal().await;
    let seen = gus
        .state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 1))
        .await;
    let dormant = Kept {
        code,
        tokens: [fay.token.clone(), gus.token.clone()],
        seen: position(&seen),
    };
    let before = lobbies_live(server).await;
    drop((fay, gus));
    // Unloaded once nobody is connected (a second or so).
    let after =
        jumpgate_e2e::probe_while(PATIENCE, || lobbies_live(server), |n| *n >= before).await;
    assert_eq!(after, before - 1, "the correspondence lobby left memory");
    let accounts = ["ann", "bob", "cy", "dee", "eve", "fay", "gus"]
        .map(|a| format!("a_{a}"))
        .to_vec();
    (kept, dormant, accounts)
}

/// The lobbies a process holds in memory, from its `/metrics`.
async fn lobbies_live(server: &JumpgateProcess) -> i64 {
    let (_, text) = jumpgate_e2e::http_get(server.addr, "/metrics").await;
    text.lines()
        .filter(|l| l.starts_with("jumpgate_lobbies_live{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<i64>().ok())
        .sum()
}

/// A Redis reply as its value (an integer, a status or a bulk string).
async fn redis_value(redis: &RedisServer, args: &[&str]) -> String {
    let raw = redis.command(args).await;
    let raw = raw.trim_end();
    match raw.as_bytes().first() {
        Some(b':' | b'+') => raw[1..].to_owned(),
        Some(b'$') => raw.split("\r\n").nth(1).unwrap_or_default().to_owned(),
        _ => raw.to_owned(),
    }
}

/// Waits until `count` rooms are listed as unloaded in a Redis.
async fn until_dormant_in_redis(redis: &RedisServer, count: usize) {
    let listed = jumpgate_e2e::probe_while(
        PATIENCE,
        || redis_value(redis, &["ZCARD", "jg:dormant"]),
        |n| *n != count.to_string(),
    )
    .await;
    assert_eq!(listed, count.to_string());
}

/// A data directory's lobbies, money and leaderboard survive a copy to
/// Redis and a copy back, each served by a real `jumpgate serve`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_directory_moves_to_redis_and_back_with_every_game_and_point() {
    let admin = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let first_dir = DataDir::new();
    let mut first = JumpgateProcess::start(&on_dir(&first_dir, admin)).await;
    let (mut kept, dormant, accounts) = play_everything(&first).await;
    let money = wallets(admin, &accounts).await;
    let leaders = board(&first, "american").await;
    assert_eq!(
        leaders["entries"].as_array().map(Vec::len),
        Some(1),
        "{leaders}"
    );
    assert!(first.terminate().success());
    let balance = |account: &str| {
        money
            .iter()
            .find(|w| w["account"] == account)
            .and_then(|w| w["balance"].as_i64())
    };
    assert_eq!(balance("a_ann"), Some(700), "300 held in escrow");
    assert_eq!(balance("a_bob"), Some(700), "300 held in escrow");
    assert_eq!(balance("a_dee"), Some(1_200), "won the settled series");

    // To an empty Redis.
    let redis = RedisServer::start().await;
    let out = migrate(&dir_arg(first_dir.path()), &redis.url());
    assert!(out.status.success(), "{}", said(&out));
    eprintln!("{}", said(&out));
    assert!(
        said(&out).contains("every count, the totals and every balance match"),
        "{}",
        said(&out)
    );
    until_dormant_in_redis(&redis, 1).await;
    assert_eq!(
        redis_value(&redis, &["GET", "jg:storage-format"]).await,
        "2"
    );
    let held = redis_value(&redis, &["HGET", "jgw:{wallets}:totals", "escrow"]).await;
    assert_eq!(held, "600", "the series under way holds both stakes");
    let mut second = JumpgateProcess::start(&on_redis(&redis, admin)).await;
    rejoin_and_play(&second, &mut kept).await;
    rejoin_dormant(&second, &dormant).await;
    assert_eq!(
        wallets(admin, &accounts).await,
        money,
        "every balance and ledger"
    );
    assert_eq!(board(&second, "american").await, leaders);
    assert!(second.terminate().success());

    // And back, into a new data directory.
    let back = DataDir::new();
    let out = migrate(&redis.url(), &dir_arg(back.path()));
    assert!(out.status.success(), "{}", said(&out));
    eprintln!("{}", said(&out));
    let third = JumpgateProcess::start(&on_dir(&back, admin)).await;
    rejoin_and_play(&third, &mut kept).await;
    rejoin_dormant(&third, &dormant).await;
    assert_eq!(wallets(admin, &accounts).await, money);
    assert_eq!(board(&third, "american").await, leaders);
}

/// Refused, each leaving everything as it was: a Redis or a data
/// directory that is not empty, a data directory a server runs on, and a
/// Redis an instance runs on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_refuses_a_full_destination_and_a_source_in_use() {
    let admin = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let dir = DataDir::new();
    let server = JumpgateProcess::start(&on_dir(&dir, admin)).await;
    let (mut a, mut b, _) = lobby_pair(&server, RuleSet::Russian, 1).await;
    play(&mut a, &mut b, 2).await;

    // The directory is in use: refused, and the Redis stays empty.
    let redis = RedisServer::start().await;
    let out = migrate(&dir_arg(dir.path()), &redis.url());
    assert!(!out.status.success());
    assert!(
        said(&out).contains("in use by a running Jumpgate server; stop it first"),
        "{}",
        said(&out)
    );
    assert_eq!(redis_value(&redis, &["DBSIZE"]).await, "0");
    drop((a, b));
    let mut server = server;
    assert!(server.terminate().success());

    // A Redis holding a key of ours is not empty: refused, left as it was.
    redis.command(&["SET", "jg:someone-else", "x"]).await;
    let out = migrate(&dir_arg(dir.path()), &redis.url());
    assert!(!out.status.success());
    assert!(said(&out).contains("is not empty"), "{}", said(&out));
    assert_eq!(redis_value(&redis, &["DBSIZE"]).await, "1");
    redis.command(&["DEL", "jg:someone-else"]).await;

    // A mistyped URL is not taken for a directory of that name.
    let cwd = tempfile::tempdir().unwrap();
    for typo in ["http://127.0.0.1:1/0", "redis:/127.0.0.1:1/0"] {
        let out = std::process::Command::new(jumpgate_binary())
            .args(["migrate", "--from", &dir_arg(dir.path()), "--to", typo])
            .current_dir(cwd.path())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{typo}: {}", said(&out));
        assert!(said(&out).contains("neither a Redis URL"), "{}", said(&out));
    }
    assert_eq!(
        std::fs::read_dir(cwd.path()).unwrap().count(),
        0,
        "no directory made"
    );

    // A data directory with rows is not empty either. The copy says how
    // guests keep their seats: the secret their tokens are signed with is
    // not in the store.
    let out = migrate(&dir_arg(dir.path()), &redis.url());
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains("--token-secret") && said(&out).contains("guests lose their seats"),
        "{}",
        said(&out)
    );
    let secret = "the-instances-guest-token-secret-0123456789";
    let back = DataDir::new();
    let into = back.path().join("copy");
    let out = migrate_with(
        &redis.url(),
        &dir_arg(&into),
        &[("JUMPGATE_TOKEN_SECRET", secret)],
    );
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(
        std::fs::read_to_string(into.join("token-secret")).unwrap(),
        secret,
        "the instances' secret is kept for the server on the copy"
    );
    let out = migrate(&redis.url(), &dir_arg(dir.path()));
    assert!(!out.status.success());
    assert!(said(&out).contains("is not empty"), "{}", said(&out));

    // A Redis an instance runs on: refused, and nothing is created.
    let live = JumpgateProcess::start(&on_redis(&redis, admin)).await;
    let fresh = DataDir::new();
    let target = fresh.path().join("copy");
    let out = migrate(&redis.url(), &dir_arg(&target));
    assert!(!out.status.success());
    assert!(
        said(&out).contains("have a current heartbeat"),
        "{}",
        said(&out)
    );
    assert!(!target.exists(), "nothing was written");
    drop(live);
}
