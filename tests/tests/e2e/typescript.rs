//! The TypeScript client package (`clients/typescript/`): its own test suite,
//! run with Node's test runner, against the real `jumpgate` binary that this
//! test hands it (golden vectors, generated types, two sessions playing in
//! both encodings, and a server killed and restarted on a Redis of its own).
//!
//! Needs `npm ci --prefix clients/typescript`; `.ci/test` runs it. Without
//! the packages this test fails rather than skips.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// The whole suite normally takes seconds; this only stops a hang.
const SUITE_LIMIT: Duration = Duration::from_secs(600);

fn package_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .join("clients/typescript")
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_client_passes_its_tests_against_a_real_server() {
    let package = package_dir();
    for installed in [
        "@msgpack/msgpack",
        "typescript",
        "json-schema-to-typescript",
        "ws",
        "esbuild",
    ] {
        let path = package.join("node_modules").join(installed);
        assert!(
            path.exists(),
            "{} is missing: run .ci/test (or `npm ci --prefix clients/typescript`)",
            path.display()
        );
    }
    let child = tokio::process::Command::new("npm")
        .args(["test", "--prefix"])
        .arg(&package)
        .env("JUMPGATE_BIN", jumpgate_e2e::jumpgate_binary())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("could not start npm ({e}); run .ci/test"));
    let output = tokio::time::timeout(SUITE_LIMIT, child.wait_with_output())
        .await
        .expect("the TypeScript suite did not finish in time")
        .expect("npm ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "npm test in clients/typescript failed ({})\n{stdout}\n{stderr}",
        output.status
    );
    // The suite ran its tests, not nothing: Node's runner prints its counts
    // ("# pass N" in TAP, "ℹ pass N" in its spec reporter).
    let passed = stdout
        .lines()
        .find_map(|line| {
            line.strip_prefix("# pass ")
                .or_else(|| line.strip_prefix("ℹ pass "))
        })
        .and_then(|count| count.trim().parse::<u32>().ok())
        .unwrap_or(0);
    assert!(
        passed >= 60,
        "only {passed} TypeScript tests passed\n{stdout}"
    );
}
