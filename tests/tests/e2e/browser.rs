//! The web client in a real browser: headless Chromium, driven by the
//! Playwright scripts in `tests/browser/`, against a real server on port 0,
//! or against three on one Redis behind the deployed HAProxy configuration.
//!
//! Needs Debian's `chromium` and `npm ci --prefix tests/browser`; `.ci/test`
//! installs both. Without them these tests fail rather than skip, so a
//! missing browser can never pass for a working client.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use jumpgate_e2e::balancer::{Balancer, SERVERS};
use jumpgate_e2e::{JumpgateProcess, RedisServer, TestServer};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// Each scenario (a few browsers, a few games) normally takes seconds.
const SCENARIO_LIMIT: Duration = Duration::from_secs(300);

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
}

fn chromium() -> PathBuf {
    std::env::var_os("CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

/// Fails with a clear message when the browser tooling is not installed.
fn require_tooling(root: &Path) {
    let browser = chromium();
    assert!(
        browser.exists(),
        "{} is missing: the browser tests need Debian's `chromium`; run .ci/test, which installs it",
        browser.display()
    );
    for package in ["playwright-core", "axe-core"] {
        let path = root.join("tests/browser/node_modules").join(package);
        assert!(
            path.exists(),
            "{} is missing: run .ci/test (or `npm ci --prefix tests/browser`)",
            path.display()
        );
    }
}

/// The command that runs one Playwright script against `base`, its output
/// piped; fails clearly when the tooling is missing.
fn node(script: &str, base: &str, artifacts: &Path) -> tokio::process::Command {
    let root = workspace_root();
    require_tooling(&root);
    let mut command = tokio::process::Command::new("node");
    command
        .arg(root.join("tests/browser").join(script))
        .arg(base)
        .arg(artifacts)
        .env("CHROMIUM", chromium())
        .current_dir(&root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Runs one Playwright script against a fresh server; fails with its output
/// (and where its screenshots are) unless it passes.
async fn run_scenario(script: &str, artifacts: &Path) {
    let server = TestServer::start(|settings| {
        settings.break_time = Duration::from_secs(2);
    })
    .await;
    run_against(script, &server.http_url(""), artifacts).await;
}

/// Runs one Playwright script against the server at `base` (its HTTP root);
/// fails as [`run_scenario`] does.
async fn run_against(script: &str, base: &str, artifacts: &Path) {
    run_against_with(script, base, artifacts, &[]).await;
}

/// [`run_against`] with `env` added to the script's environment.
async fn run_against_with(script: &str, base: &str, artifacts: &Path, env: &[(&str, String)]) {
    let child = node(script, base, artifacts)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .spawn()
        .unwrap_or_else(|e| panic!("could not start node ({e}); run .ci/test"));
    let output = tokio::time::timeout(SCENARIO_LIMIT, child.wait_with_output())
        .await
        .expect("the browser scenario did not finish in time")
        .expect("node ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        output.status.success(),
        "browser scenario {script} failed ({}); screenshots in {}\n{stdout}\n{stderr}",
        output.status,
        artifacts.display()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn web_client_plays_a_match_in_chromium() {
    let artifacts = workspace_root().join("target/browser-artifacts");
    run_scenario("scenario.mjs", &artifacts).await;
    assert!(
        artifacts.join("game.png").exists(),
        "a game screenshot was saved"
    );
}

/// Issue 17's friend-game flow, a host at 1280×800 and a guest on a 390×844
/// phone: names, a series that waits for an absent host, board and clocks
/// in the window, the turn's tone, dragging, a declined draw, the move
/// list, the way back to a running game, the rules help, traditional
/// colours, and axe-core on the home, lobby, game, solo and leaderboard
/// screens.
#[tokio::test(flavor = "multi_thread")]
async fn web_client_friend_game_flow_in_chromium() {
    let artifacts = workspace_root().join("target/browser-artifacts/ux");
    run_scenario("ux.mjs", &artifacts).await;
    assert!(
        artifacts.join("game-desktop.png").exists() && artifacts.join("game-phone.png").exists(),
        "desktop and phone screenshots of the game were saved"
    );
}

/// Issue 18's correspondence games in the browser, on Redis (where idle
/// correspondence lobbies are kept): the pace on the create form, the
/// preview of an invite link before joining, "My games" on the home page
/// with the tab title's "(1) Your move", and a Claim win refused before the
/// claim window (2 s here) and granted after it; axe-core on the preview
/// and on the home page with its list. The lobby is unloaded while nobody
/// is in it, as idle correspondence lobbies are, before the friend opens it.
///
/// The server is a process of its own: the script reads its unload counter
/// from `/metrics`, which in this test binary's process every in-process
/// server shares.
#[tokio::test(flavor = "multi_thread")]
async fn web_client_plays_a_correspondence_game_in_chromium() {
    let artifacts = workspace_root().join("target/browser-artifacts/correspondence");
    let redis = RedisServer::start().await;
    let server = JumpgateProcess::start(&[
        ("JUMPGATE_REDIS_URL", redis.url()),
        ("JUMPGATE_CORRESPONDENCE_CLAIM_SECS", "2".to_owned()),
        ("JUMPGATE_CORRESPONDENCE_EXPIRY_SECS", "120".to_owned()),
        // Unloaded a second after its last page goes: the friend's preview
        // and join load it back from Redis.
        ("JUMPGATE_CORRESPONDENCE_UNLOAD_SECS", "1".to_owned()),
    ])
    .await;
    run_against(
        "correspondence.mjs",
        &format!("http://{}", server.addr),
        &artifacts,
    )
    .await;
    assert!(
        artifacts.join("preview.png").exists() && artifacts.join("claimed.png").exists(),
        "screenshots of the preview and the claimed game were saved"
    );
}

/// The computer under load, as a player sees it: a server with no
/// searcher at all (Redis, `--bot-threads 0`, no worker) refuses a game
/// and the page says the computer is not available; on a server with one
/// search thread, a game whose search waits behind another's says so and
/// how long, and a new game is refused with the wait it would mean.
#[tokio::test(flavor = "multi_thread")]
async fn web_client_tells_players_when_the_computer_is_busy_in_chromium() {
    let artifacts = workspace_root().join("target/browser-artifacts/computer");
    let redis = RedisServer::start().await;
    let no_searcher = JumpgateProcess::start(&[
        ("JUMPGATE_REDIS_URL", redis.url()),
        ("JUMPGATE_BOT_THREADS", "0".to_owned()),
    ])
    .await;
    let one_thread = JumpgateProcess::start(&[
        ("JUMPGATE_BOT_THREADS", "1".to_owned()),
        ("JUMPGATE_EXECUTIVE_MS", "10000".to_owned()),
        ("JUMPGATE_MAX_SEARCH_WAIT_SECS", "2".to_owned()),
    ])
    .await;
    run_against_with(
        "computer.mjs",
        &format!("http://{}", one_thread.addr),
        &artifacts,
        &[("NO_SEARCHER_BASE", format!("http://{}", no_searcher.addr))],
    )
    .await;
    assert!(
        artifacts.join("queued-phone.png").exists() && artifacts.join("busy.png").exists(),
        "screenshots of the queued game and the refusal were saved"
    );
}

/// Space Mode (wormholes, boosts) in a lobby and the orbit board in a
/// same-device game.
#[tokio::test(flavor = "multi_thread")]
async fn web_client_plays_the_space_rule_sets_in_chromium() {
    let artifacts = workspace_root().join("target/browser-artifacts/space");
    run_scenario("space.mjs", &artifacts).await;
    assert!(
        artifacts.join("space.png").exists() && artifacts.join("orbit.png").exists(),
        "screenshots of both boards were saved"
    );
}

/// The client's connection against a scripted socket and clock: a moved
/// room (4001) is rejoined at once, `room_unavailable` retried with a
/// bounded back-off, a restart waited out (what no real server does on
/// demand).
#[tokio::test(flavor = "multi_thread")]
async fn web_client_connection_comes_back_as_it_should_in_chromium() {
    let artifacts = workspace_root().join("target/browser-artifacts/reconnect");
    run_scenario("reconnect.mjs", &artifacts).await;
}

/// Three instances on one Redis behind the deployed HAProxy configuration.
/// Two pages play a lobby through the balancer; mid-game the instance the
/// balancer sends the lobby's code to shuts down, handing the lobby over and
/// closing their sockets with 4001. Both pages come back by themselves,
/// through the balancer, to another instance and play on.
///
/// The script prints `room CODE` when the lobby is under way and waits for
/// `stopped NAME` on its stdin, which this test writes once it has shut
/// that instance down.
#[tokio::test(flavor = "multi_thread")]
async fn web_client_follows_its_lobby_to_another_instance_in_chromium() {
    let artifacts = workspace_root().join("target/browser-artifacts/failover");
    let redis = RedisServer::start().await;
    let secret = b"one token secret for the three instances".to_vec();
    let mut servers = Vec::new();
    for _ in 0..SERVERS {
        let server = TestServer::start(|settings| {
            settings.redis_url = Some(redis.url());
            // A guest's token is good on every instance.
            settings.token_secret = secret.clone();
            // No side may lose on time while its lobby moves.
            settings.move_clock = Duration::from_secs(120);
        })
        .await;
        servers.push(Some(server));
    }
    let addrs: Vec<_> = servers.iter().flatten().map(|s| s.addr).collect();
    let balancer = Balancer::start(&addrs).await;

    let mut child = node(
        "failover.mjs",
        &format!("http://{}", balancer.addr),
        &artifacts,
    )
    .stdin(Stdio::piped())
    .spawn()
    .unwrap_or_else(|e| panic!("could not start node ({e}); run .ci/test"));
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let stderr = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });

    let mut transcript = String::new();
    let mut stopped = None;
    let status = tokio::time::timeout(SCENARIO_LIMIT, async {
        while let Some(line) = lines.next_line().await.expect("node's output is text") {
            println!("{line}");
            transcript.push_str(&line);
            transcript.push('\n');
            let Some(code) = line.strip_prefix("room ") else {
                continue;
            };
            let name = balancer
                .server_for(Some(code))
                .await
                .expect("the balancer names the instance for the lobby");
            let index: usize = name
                .strip_prefix("jumpgate")
                .and_then(|n| n.parse().ok())
                .expect("instances are named jumpgate1 to jumpgate3");
            // Dropping an instance shuts it down gracefully: it hands its
            // lobbies over, closing their members with 4001.
            drop(servers[index - 1].take().expect("each instance stops once"));
            stdin
                .write_all(format!("stopped {name}\n").as_bytes())
                .await
                .expect("the script reads its stdin");
            stopped = Some(name);
        }
        child.wait().await.expect("node ran")
    })
    .await
    .expect("the browser scenario did not finish in time");
    let stderr = stderr.await.unwrap_or_default();
    eprintln!("{stderr}");
    assert!(
        status.success(),
        "browser scenario failover.mjs failed ({status}); screenshots in {}\n{transcript}\n{stderr}",
        artifacts.display()
    );
    assert!(
        stopped.is_some(),
        "the script asked for the lobby's instance to stop"
    );
    assert!(
        artifacts.join("failover.png").exists(),
        "a screenshot of the game after the move was saved"
    );
}

/// Issue 35: the web client tells the truth when the server goes away. Three
/// `jumpgate serve` processes, one per store: memory (a restart loses the
/// lobby, and the page must say so), Redis and the embedded data directory
/// (a restart or a crash keeps it, and the page must play on in place).
///
/// The script drives them through its stdout and stdin: it prints
/// `do ACTION STORE` (ACTION `kill` for SIGKILL, `start` to start it again
/// on its address and store, `restart` for SIGTERM and a start, `freeze`
/// and `thaw` for SIGSTOP and SIGCONT; STORE `memory`, `redis` or `disk`)
/// and waits for `done ACTION STORE`.
#[tokio::test(flavor = "multi_thread")]
async fn web_client_tells_the_truth_when_the_server_goes_away_in_chromium() {
    let artifacts = workspace_root().join("target/browser-artifacts/truth");
    let redis = RedisServer::start().await;
    let disk = jumpgate_e2e::DataDir::new();
    let envs: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("memory", vec![]),
        ("redis", vec![("JUMPGATE_REDIS_URL", redis.url())]),
        ("disk", disk.env()),
    ];
    let mut servers = Vec::new();
    for (_, env) in &envs {
        servers.push(Some(JumpgateProcess::start(env).await));
    }
    let addrs: Vec<_> = servers.iter().flatten().map(|s| s.addr).collect();
    let base = |i: usize| format!("http://{}", addrs[i]);

    let mut child = node("truth.mjs", &base(0), &artifacts)
        .env("REDIS_BASE", base(1))
        .env("DISK_BASE", base(2))
        .stdin(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("could not start node ({e}); run .ci/test"));
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let stderr = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });

    let mut transcript = String::new();
    let status = tokio::time::timeout(SCENARIO_LIMIT, async {
        while let Some(line) = lines.next_line().await.expect("node's output is text") {
            println!("{line}");
            transcript.push_str(&line);
            transcript.push('\n');
            let Some(order) = line.strip_prefix("do ") else {
                continue;
            };
            let (action, store) = order.split_once(' ').expect("do ACTION STORE");
            let index = envs
                .iter()
                .position(|(name, _)| *name == store)
                .unwrap_or_else(|| panic!("no store named {store}"));
            if matches!(action, "freeze" | "thaw") {
                let server = servers[index].as_ref().expect("the server is running");
                server.signal(if action == "freeze" { "STOP" } else { "CONT" });
            }
            if matches!(action, "kill" | "restart") {
                let mut server = servers[index].take().expect("the server is running");
                if action == "kill" {
                    server.kill_9();
                } else {
                    server.terminate();
                }
            }
            if matches!(action, "start" | "restart") {
                assert!(servers[index].is_none(), "{store} is already running");
                servers[index] =
                    Some(JumpgateProcess::start_at(addrs[index], &envs[index].1).await);
            }
            stdin
                .write_all(format!("done {order}\n").as_bytes())
                .await
                .expect("the script reads its stdin");
        }
        child.wait().await.expect("node ran")
    })
    .await
    .expect("the browser scenario did not finish in time");
    let stderr = stderr.await.unwrap_or_default();
    eprintln!("{stderr}");
    assert!(
        status.success(),
        "browser scenario truth.mjs failed ({status}); screenshots in {}\n{transcript}\n{stderr}",
        artifacts.display()
    );
    assert!(
        artifacts.join("restart-gone.png").exists()
            && artifacts.join("offline-overlay.png").exists(),
        "screenshots of the lost game and of the offline overlay were saved"
    );
}

/// Issue 35's board and theme checks: axe-core in dark mode (chosen by the
/// system and by the page) on the home, lobby, game, solo and leaderboard
/// screens; the arrow keys on playing squares only and the board's live
/// region; coordinates and square numbers apart; a touch drag on a phone
/// drawing the piece above the fingertip.
#[tokio::test(flavor = "multi_thread")]
async fn web_client_board_and_dark_theme_in_chromium() {
    let artifacts = workspace_root().join("target/browser-artifacts/layout");
    run_scenario("layout.mjs", &artifacts).await;
    assert!(
        artifacts.join("phone-game.png").exists(),
        "a screenshot of the phone's game screen was saved"
    );
}

/// Issue 35's game-screen items: the seat bars' wins after a resignation,
/// the phone's seat bars (name, "you", score) in American, Space Mode and
/// orbit lobbies, the rematch line with Accept and Decline, the orbit
/// points explained, a spectator arriving mid-game looking at move 1 (from
/// `/r/{CODE}/positions`), the series named before resigning, a
/// same-device game's earlier positions and its device record below the
/// move list, and a series choice that fits a phone.
#[tokio::test(flavor = "multi_thread")]
async fn web_client_game_screen_in_chromium() {
    let artifacts = workspace_root().join("target/browser-artifacts/game-ux");
    run_scenario("game-ux.mjs", &artifacts).await;
    assert!(
        artifacts.join("seats-phone.png").exists() && artifacts.join("rematch-phone.png").exists(),
        "screenshots of the phone's seat bars and of the rematch line were saved"
    );
}
