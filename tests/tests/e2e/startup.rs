//! The start-up resume, read and claimed in batches, cut in the middle: a
//! second instance starting on the same Redis while the first is half way
//! through (both claim from the same batches), and Redis stalled for longer
//! than the command timeout while a batch is under way. Each runs on one
//! Redis and on a three-master Redis Cluster, with thousands of stored
//! lobbies: a few opened by players, the rest copies of those written
//! through the store (each its own room, owned by an instance that never
//! had a heartbeat).

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use jumpgate_e2e::{
    JumpgateProcess, PATIENCE, Player, RedisCluster, RedisServer, http_get, lobby_pair,
};
use jumpgate_protocol::{Encoding, RuleSet};
use jumpgate_server::store::prelude::*;
use jumpgate_server::store::{OwnerEpoch, RedisStore, RoomWrite};

/// Lobbies opened by players; the others copy them.
const TEMPLATES: usize = 6;
/// Copies read at once by a starting instance (small, so that a start is
/// many batches).
const BATCH: &str = "32";
/// The owner of every copy: an instance that never had a heartbeat.
const NEVER_ALIVE: &str = "e2e-never-alive";

/// A lobby two players opened and played a few moves in.
struct Template {
    code: String,
    tokens: [String; 2],
    moves: Vec<String>,
}

fn env(url: &str, timeout_ms: u64) -> Vec<(&'static str, String)> {
    vec![
        ("JUMPGATE_REDIS_URL", url.to_owned()),
        ("JUMPGATE_REDIS_TIMEOUT_MS", timeout_ms.to_string()),
        ("JUMPGATE_RESUME_BATCH", BATCH.to_owned()),
        // The seed's heartbeat runs out soon after it is killed.
        ("JUMPGATE_HEARTBEAT_TTL_MS", "1000".to_owned()),
        ("JUMPGATE_MOVE_CLOCK_MS", "60000".to_owned()),
    ]
}

fn instance_id(process: &JumpgateProcess) -> String {
    format!("test-{}", process.addr.port())
}

/// Opens the templates on a seed instance, kills it (kill -9) and waits
/// for its heartbeat to run out, so a new instance takes them over.
async fn open_templates(env: &[(&str, String)]) -> Vec<Template> {
    let mut seed = JumpgateProcess::start(env).await;
    let mut templates = Vec::new();
    for i in 0..TEMPLATES {
        let (mut host, mut guest, code) = lobby_pair(&seed, RuleSet::American, 1).await;
        let moves = crate::persistence::play(&mut host, &mut guest, 1 + i as u32 % 3).await;
        templates.push(Template {
            code,
            tokens: [host.token.clone(), guest.token.clone()],
            moves,
        });
    }
    seed.kill_9();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    templates
}

/// Fresh room codes (8 characters of the room-code alphabet), none of
/// them `taken`.
fn fresh_codes(n: usize, taken: &HashSet<String>) -> Vec<String> {
    const ALPHABET: &[u8] = b"23456789ABCDEFGHJKLMNPQRSTUVWXYZ";
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut seen = taken.clone();
    let mut codes = Vec::with_capacity(n);
    while codes.len() < n {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let code: String = (0..8)
            .map(|i| char::from(ALPHABET[((state >> (5 * i)) & 31) as usize]))
            .collect();
        if seen.insert(code.clone()) {
            codes.push(code);
        }
    }
    codes
}

/// Stores copies of the templates until `total` lobbies are open: each
/// copy's first write, through the store, with the template's record (its
/// code replaced) and moves, owned by [`NEVER_ALIVE`]. Returns every
/// lobby's code with the index of its template, templates first.
async fn copy_templates(url: &str, templates: &[Template], total: usize) -> Vec<(String, usize)> {
    let store = RedisStore::open(url, Duration::from_secs(5)).unwrap();
    let mut stored = Vec::new();
    for t in templates {
        stored.push(store.load(&t.code).await.unwrap().expect("template stored"));
    }
    let taken: HashSet<String> = templates.iter().map(|t| t.code.clone()).collect();
    let codes = fresh_codes(total - templates.len(), &taken);
    let mut lobbies: Vec<(String, usize)> = templates
        .iter()
        .enumerate()
        .map(|(i, t)| (t.code.clone(), i))
        .collect();
    lobbies.extend(
        codes
            .into_iter()
            .enumerate()
            .map(|(i, code)| (code, i % templates.len())),
    );
    let stored = Arc::new(stored);
    let never_alive: Arc<str> = Arc::from(NEVER_ALIVE);
    let copies: Vec<(String, usize)> = lobbies[templates.len()..].to_vec();
    let mut writers = tokio::task::JoinSet::new();
    for chunk in copies.chunks(copies.len().div_ceil(16)) {
        let (store, stored, owner, chunk) = (
            store.clone(),
            stored.clone(),
            never_alive.clone(),
            chunk.to_vec(),
        );
        writers.spawn(async move {
            for (code, template) in chunk {
                let room = &stored[template];
                let record: serde_json::Value = serde_json::from_str(&room.record).unwrap();
                let version = record["version"].as_u64().expect("a version");
                store
                    .write(&RoomWrite {
                        code: code.clone(),
                        owner: OwnerEpoch {
                            instance: owner.clone(),
                            epoch: 1,
                        },
                        expected_version: 0,
                        version,
                        record: room.record.replace(&room.code, &code),
                        moves: room.moves.clone(),
                        finished_games: Vec::new(),
                        open: true,
                        expire_after: None,
                        seated: Vec::new(),
                        unseated: Vec::new(),
                    })
                    .await
                    .unwrap();
            }
        });
    }
    while let Some(done) = writers.join_next().await {
        done.unwrap();
    }
    lobbies
}

/// The sum of every sample whose series starts with `series`.
async fn metric(addr: SocketAddr, series: &str) -> f64 {
    let (_, page) = http_get(addr, "/metrics").await;
    page.lines()
        .filter(|l| l.starts_with(series))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn wait_ready(process: &JumpgateProcess) {
    let deadline = tokio::time::Instant::now() + PATIENCE * 6;
    while http_get(process.addr, "/readyz").await.0 != 200 {
        assert!(tokio::time::Instant::now() < deadline, "never ready");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `process` is in the middle of its resume: it has listed
/// the stored lobbies, taken some, and has at least `ahead` still to look
/// at. `false` if it became ready first.
async fn mid_resume(process: &JumpgateProcess, total: usize, ahead: usize) -> bool {
    let deadline = tokio::time::Instant::now() + PATIENCE * 6;
    loop {
        let left = metric(process.addr, "jumpgate_resume_rooms_left ").await as usize;
        if left >= ahead && left < total {
            return true;
        }
        if http_get(process.addr, "/readyz").await.0 == 200 {
            return false;
        }
        assert!(tokio::time::Instant::now() < deadline, "never started");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Every lobby has one owner among `instances`, which runs it, and no
/// other runs it: the owners' fences cover every lobby, and the lobbies
/// live on the instances add up to the number stored. Then the players of
/// every template and of a sample of copies come back to its owner: every
/// acknowledged move is there, and a new one is stored.
async fn one_owner_and_every_move(
    url: &str,
    instances: &[&JumpgateProcess],
    templates: &[Template],
    lobbies: &[(String, usize)],
) {
    let store = RedisStore::open(url, Duration::from_secs(5)).unwrap();
    let codes: Vec<String> = lobbies.iter().map(|(code, _)| code.clone()).collect();
    let fences = store.fences(&codes).await.unwrap();
    // A resumed lobby counts itself live when its task first runs, which
    // can be just after the instance says it is ready: wait for the count
    // to reach the stored number (more would be two owners).
    let live = jumpgate_e2e::probe_while(
        PATIENCE,
        || async {
            let mut live = 0.0;
            for process in instances {
                live += metric(process.addr, "jumpgate_lobbies_live{").await;
            }
            live
        },
        |live| (*live as usize) < lobbies.len(),
    )
    .await;
    assert_eq!(
        live as usize,
        lobbies.len(),
        "every lobby runs, on one instance"
    );
    let mut holders = Vec::new();
    for ((code, _), fence) in lobbies.iter().zip(fences) {
        let owner = fence.unwrap().expect("open").owner.expect("an owner");
        let holder = instances
            .iter()
            .position(|p| instance_id(p) == owner)
            .unwrap_or_else(|| panic!("{code}: owned by {owner}, not a live instance"));
        holders.push(holder);
    }
    let sample = lobbies
        .iter()
        .zip(&holders)
        .enumerate()
        .filter(|(i, _)| *i < templates.len() || i % (lobbies.len() / 12) == 0);
    for (_, ((code, template), &holder)) in sample {
        let t = &templates[*template];
        let endpoint = instances[holder];
        let mut host =
            Player::connect_to(endpoint, Encoding::MsgPack, Some(t.tokens[0].clone())).await;
        let state = host.join(code).await;
        let game = state.game.expect("the game resumed");
        assert_eq!(game.moves, t.moves, "{code}: every acknowledged move");
        let mut guest =
            Player::connect_to(endpoint, Encoding::Json, Some(t.tokens[1].clone())).await;
        guest.join(code).await;
        let new = crate::persistence::play(&mut host, &mut guest, 1).await;
        let stored: Vec<String> = store
            .load(code)
            .await
            .unwrap()
            .expect("stored")
            .moves
            .into_iter()
            .map(|m| m.text)
            .collect();
        assert_eq!(stored, [t.moves.clone(), new].concat(), "{code}: stored");
    }
}

/// A second instance starts on the same Redis while the first is half way
/// through its resume: both read the same batches and race to claim the
/// same rooms. Every room ends with exactly one owner, which runs it, and
/// every acknowledged move is there.
async fn two_starts_race_for_the_same_batches(url: String) {
    const LOBBIES: usize = 2_000;
    let env = env(&url, 2_000);
    let templates = open_templates(&env).await;
    let lobbies = copy_templates(&url, &templates, LOBBIES).await;
    let a = JumpgateProcess::start(&env).await;
    let overlapped = mid_resume(&a, LOBBIES, 1).await;
    let b = JumpgateProcess::start(&env).await;
    wait_ready(&a).await;
    wait_ready(&b).await;
    let taken =
        |p| async move { metric(p, r#"jumpgate_resume_rooms_total{outcome="taken"}"#).await };
    let elsewhere =
        |p| async move { metric(p, r#"jumpgate_resume_rooms_total{outcome="elsewhere"}"#).await };
    eprintln!(
        "two starts (B started {} A's resume): A took {}, B took {}; A left {} and B {} to the other",
        if overlapped { "during" } else { "after" },
        taken(a.addr).await,
        taken(b.addr).await,
        elsewhere(a.addr).await,
        elsewhere(b.addr).await,
    );
    one_owner_and_every_move(&url, &[&a, &b], &templates, &lobbies).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_starting_together_claim_each_room_once() {
    let redis = RedisServer::start().await;
    two_starts_race_for_the_same_batches(redis.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_starting_together_claim_each_room_once_on_a_redis_cluster() {
    let cluster = RedisCluster::start().await;
    two_starts_race_for_the_same_batches(cluster.url()).await;
}

/// Redis stalls (`CLIENT PAUSE`) for longer than the command timeout while
/// an instance is half way through its resume: the batches under way time
/// out with their claims' outcome unknown (the paused commands run when
/// the stall ends). The start does not guess: it looks at those rooms
/// again from their fences and claims them, and becomes ready with every
/// room running, once, every acknowledged move there.
async fn a_stall_in_the_middle_of_a_batch(url: String, pause: impl AsyncFnOnce(u64)) {
    const LOBBIES: usize = 3_000;
    let env = env(&url, 300);
    let templates = open_templates(&env).await;
    let lobbies = copy_templates(&url, &templates, LOBBIES).await;
    let a = JumpgateProcess::start(&env).await;
    assert!(
        mid_resume(&a, LOBBIES, 400).await,
        "the resume was over before the stall"
    );
    pause(800).await;
    wait_ready(&a).await;
    let failed = metric(a.addr, r#"jumpgate_redis_errors_total{op="resume"}"#).await;
    // Every lobby was at epoch 1 when the start began: a claim whose answer
    // the stall cut, and which landed all the same, shows as epoch 3 (the
    // fence read again named this instance, which claimed once more).
    let store = RedisStore::open(&url, Duration::from_secs(5)).unwrap();
    let codes: Vec<String> = lobbies.iter().map(|(code, _)| code.clone()).collect();
    let reclaimed = store
        .fences(&codes)
        .await
        .unwrap()
        .into_iter()
        .filter(|f| {
            f.as_ref()
                .is_ok_and(|f| f.as_ref().is_some_and(|f| f.epoch > 2))
        })
        .count();
    eprintln!(
        "a stall in the middle of the resume: {failed} batch round trips failed; {} rooms taken, \
         {reclaimed} of them claimed again after a claim whose answer was lost had landed",
        metric(a.addr, r#"jumpgate_resume_rooms_total{outcome="taken"}"#).await
    );
    assert!(failed >= 1.0, "the stall cut a batch");
    assert_eq!(
        metric(a.addr, r#"jumpgate_resume_rooms_total{outcome="deferred"}"#).await,
        0.0,
        "nothing left for later"
    );
    one_owner_and_every_move(&url, &[&a], &templates, &lobbies).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_stall_in_the_middle_of_a_batched_resume_is_resolved_not_guessed() {
    let redis = RedisServer::start().await;
    a_stall_in_the_middle_of_a_batch(redis.url(), async |ms| redis.pause(ms).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_stall_in_the_middle_of_a_batched_resume_is_resolved_not_guessed() {
    let cluster = RedisCluster::start().await;
    a_stall_in_the_middle_of_a_batch(cluster.url(), async |ms| cluster.pause(ms).await).await;
}
