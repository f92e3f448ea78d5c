//! The web client in a real browser: headless Chromium, driven by the
//! Playwright script in `tests/browser/`, against a real server on port 0.
//!
//! Needs Debian's `chromium` and `npm ci --prefix tests/browser`; `.ci/test`
//! installs both. Without them this test fails rather than skips, so a
//! missing browser can never pass for a working client.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use jumpgate_e2e::TestServer;

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
    let playwright = root.join("tests/browser/node_modules/playwright-core");
    assert!(
        playwright.exists(),
        "{} is missing: run .ci/test (or `npm ci --prefix tests/browser`)",
        playwright.display()
    );
}

/// Runs one Playwright script against a fresh server; fails with its output
/// (and where its screenshots are) unless it passes.
async fn run_scenario(script: &str, artifacts: &Path) {
    let root = workspace_root();
    require_tooling(&root);
    let server = TestServer::start(|settings| {
        settings.break_time = Duration::from_secs(2);
    })
    .await;
    let base = server.http_url("");

    let child = tokio::process::Command::new("node")
        .arg(root.join("tests/browser").join(script))
        .arg(&base)
        .arg(artifacts)
        .env("CHROMIUM", chromium())
        .current_dir(&root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
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
