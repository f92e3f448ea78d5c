//! `failover` and `ownership-cost` at their smallest size, through the
//! `jumpgate-loadtest` binary itself (so its command line and JSON report are
//! covered too): each starts its own `redis-server`, `jumpgate` instances and, for
//! `failover`, HAProxy with the deployed configuration, through the harness. The
//! assertions are on what the run counted (rooms recovered, nothing lost, commands
//! counted), never on time.

use std::path::PathBuf;
use std::process::Command;

use jumpgate_harness::jumpgate_binary;
use serde_json::Value;

/// Runs `jumpgate-loadtest ARGS --jumpgate … --out-json …` and returns the report.
fn run(name: &str, args: &[&str]) -> Value {
    let out: PathBuf = std::env::temp_dir().join(format!(
        "jumpgate-loadtest-smoke-{name}-{}.json",
        std::process::id()
    ));
    let output = Command::new(env!("CARGO_BIN_EXE_jumpgate-loadtest"))
        .args(args)
        .arg("--jumpgate")
        .arg(jumpgate_binary())
        .arg("--out-json")
        .arg(&out)
        .output()
        .expect("the load tester runs");
    assert!(
        output.status.success(),
        "{name} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(&out).expect("the report was written");
    let _ = std::fs::remove_file(&out);
    serde_json::from_str(&text).expect("the report is JSON")
}

fn count(report: &Value, path: &str) -> u64 {
    report
        .pointer(path)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no count at {path}: {report:#}"))
}

#[test]
fn tiny_failover_recovers_every_room_of_the_killed_instance() {
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/haproxy.cfg");
    let report = run(
        "failover",
        &[
            "failover",
            "--instances",
            "2",
            "--rooms",
            "6",
            "--heartbeat-ttl-ms",
            "1000",
            "--patience",
            "40",
            "--haproxy-config",
            config,
        ],
    );
    assert_eq!(count(&report, "/rooms_set_up"), 6, "{report:#}");
    assert_eq!(count(&report, "/set_up_failures"), 0, "{report:#}");
    let affected = count(&report, "/affected/rooms");
    assert!(affected > 0, "the victim owned rooms: {report:#}");
    assert_eq!(
        count(&report, "/affected/recovered"),
        affected,
        "{report:#}"
    );
    for group in ["affected", "control"] {
        assert_eq!(count(&report, &format!("/{group}/failed")), 0, "{report:#}");
        assert_eq!(
            count(&report, &format!("/{group}/mismatched")),
            0,
            "{group}: no acknowledged move lost, none played unasked: {report:#}"
        );
    }
}

#[test]
fn tiny_ownership_cost_counts_the_idle_commands() {
    let report = run(
        "ownership-cost",
        &[
            "ownership-cost",
            "--instances",
            "2",
            "--rooms",
            "2",
            "--window",
            "1",
            "--heartbeat-ttl-ms",
            "1000",
        ],
    );
    assert_eq!(count(&report, "/rooms_opened"), 2, "{report:#}");
    assert_eq!(count(&report, "/set_up_failures"), 0, "{report:#}");
    let windows = report["windows"].as_array().expect("windows");
    assert_eq!(windows.len(), 2, "{report:#}");
    for window in windows {
        let total = window["total_per_second"].as_f64().expect("a rate");
        assert!(total > 0.0, "heartbeats were counted: {window:#}");
    }
}
