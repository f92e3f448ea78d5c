//! What an instance checks of its Redis before writing to it, and the ways
//! it reaches one: it refuses a Redis that may evict keys and one holding a
//! storage format newer than it reads, records the format it writes, and
//! connects with a password (ACL user) over TLS (`rediss://`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use jumpgate_e2e::{JumpgateProcess, PATIENCE, RedisServer, free_port, lobby_pair};
use jumpgate_protocol::RuleSet;

fn log_file(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "jumpgate-checks-{}-{}-{name}.log",
        std::process::id(),
        free_port()
    ))
}

/// Waits for the process to exit by itself; its status and log.
async fn refused(process: &mut JumpgateProcess, log: &Path) -> (i32, String) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(status) = process.try_wait() {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            return (status.code().unwrap_or(-1), text);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the instance did not refuse the Redis: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `/readyz` answers 200 (the checks passed, rooms resumed).
async fn ready(process: &JumpgateProcess) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while jumpgate_e2e::http_get(process.addr, "/readyz").await.0 != 200 {
        assert!(tokio::time::Instant::now() < deadline, "never ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn bulk(reply: &str) -> Option<&str> {
    // "$1\r\n2\r\n" -> "2"; "$-1" -> None
    reply
        .split("\r\n")
        .nth(1)
        .filter(|_| !reply.starts_with("$-1"))
}

/// With `maxmemory` set and an evicting policy, the instance stops at
/// start with an error naming the policy, before writing anything.
#[tokio::test]
async fn a_redis_that_may_evict_keys_is_refused() {
    let redis = RedisServer::start().await;
    assert!(
        redis
            .command(&["CONFIG", "SET", "maxmemory", "104857600"])
            .await
            .starts_with("+OK")
    );
    assert!(
        redis
            .command(&["CONFIG", "SET", "maxmemory-policy", "volatile-lru"])
            .await
            .starts_with("+OK")
    );
    let log = log_file("evict");
    let mut process = JumpgateProcess::launch_logging(&[("JUMPGATE_REDIS_URL", redis.url())], &log);
    let (code, text) = refused(&mut process, &log).await;
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("maxmemory-policy volatile-lru"), "{text}");
    assert!(
        bulk(&redis.command(&["GET", "jg:storage-format"]).await).is_none(),
        "nothing written"
    );
    // noeviction with the same maxmemory is fine.
    redis
        .command(&["CONFIG", "SET", "maxmemory-policy", "noeviction"])
        .await;
    let process = JumpgateProcess::start(&[("JUMPGATE_REDIS_URL", redis.url())]).await;
    ready(&process).await;
}

/// A fresh Redis gets the format the instance writes (1 with
/// `--compact-every 1`, 2 otherwise; never lowered); a format newer than
/// the build reads, or a value that is no number, stops the instance.
#[tokio::test]
async fn the_storage_format_is_recorded_and_a_newer_one_refused() {
    let redis = RedisServer::start().await;
    let url = redis.url();
    let compat = JumpgateProcess::start(&[
        ("JUMPGATE_REDIS_URL", url.clone()),
        ("JUMPGATE_COMPACT_EVERY", "1".to_owned()),
    ])
    .await;
    ready(&compat).await;
    let format =
        || async { bulk(&redis.command(&["GET", "jg:storage-format"]).await).map(str::to_owned) };
    assert_eq!(format().await.as_deref(), Some("1"));
    drop(compat);
    let current = JumpgateProcess::start(&[("JUMPGATE_REDIS_URL", url.clone())]).await;
    ready(&current).await;
    assert_eq!(format().await.as_deref(), Some("2"));
    drop(current);
    let compat = JumpgateProcess::start(&[
        ("JUMPGATE_REDIS_URL", url.clone()),
        ("JUMPGATE_COMPACT_EVERY", "1".to_owned()),
    ])
    .await;
    ready(&compat).await;
    assert_eq!(format().await.as_deref(), Some("2"), "never lowered");
    drop(compat);
    for (value, said) in [("3", "storage format 3"), ("two", "not a number")] {
        redis.command(&["SET", "jg:storage-format", value]).await;
        let log = log_file("format");
        let mut process =
            JumpgateProcess::launch_logging(&[("JUMPGATE_REDIS_URL", url.clone())], &log);
        let (code, text) = refused(&mut process, &log).await;
        assert_ne!(code, 0, "{text}");
        assert!(text.contains(said), "{text}");
        assert_eq!(format().await.as_deref(), Some(value), "left as it was");
    }
}

/// Redis stalls (`CLIENT PAUSE`, five times the command timeout) landing
/// at different moments of an instance's start, cutting the checks and the
/// storage-format write with their outcome unknown: the instance neither
/// refuses nor guesses, it checks again once Redis answers, records the
/// format once, and serves.
#[tokio::test]
async fn the_checks_at_start_ride_through_redis_stalls() {
    let redis = RedisServer::start().await;
    let env = [
        ("JUMPGATE_REDIS_URL", redis.url()),
        ("JUMPGATE_REDIS_TIMEOUT_MS", "300".to_owned()),
    ];
    for delay_ms in [0u64, 20, 60, 150] {
        redis.command(&["DEL", "jg:storage-format"]).await;
        let log = log_file("stalled");
        let mut process = JumpgateProcess::launch_logging(&env, &log);
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        redis.pause(1_500).await;
        let deadline = tokio::time::Instant::now() + PATIENCE;
        // Launched without waiting for its listener: ready once it listens
        // and its `/readyz` says so.
        while tokio::net::TcpStream::connect(process.addr).await.is_err()
            || jumpgate_e2e::http_get(process.addr, "/readyz").await.0 != 200
        {
            assert!(
                process.try_wait().is_none(),
                "stopped at a stall {delay_ms} ms in: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            assert!(tokio::time::Instant::now() < deadline, "never ready");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(
            bulk(&redis.command(&["GET", "jg:storage-format"]).await),
            Some("2"),
            "the format is recorded (stall {delay_ms} ms in)"
        );
        let (_host, _guest, _code) = lobby_pair(&process, RuleSet::American, 1).await;
        drop(process);
    }
}

/// Runs `openssl` with `args` in `dir`.
fn openssl(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl is installed (the test command installs it)");
    assert!(status.success(), "openssl {args:?}");
}

/// A Redis that takes only TLS connections and only an ACL user with a
/// password, allowed the documented keys, channels and commands: the
/// instance reaches it through `rediss://user:password@…`,
/// trusting the test's own CA through `SSL_CERT_FILE`, and plays a game
/// stored there; with a wrong password it stays not ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_over_tls_with_an_acl_user() {
    let dir = std::env::temp_dir().join(format!(
        "jumpgate-tls-{}-{}",
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    openssl(
        &dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=jumpgate test CA",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
        ],
    );
    openssl(
        &dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "redis.key",
            "-out",
            "redis.csr",
        ],
    );
    std::fs::write(
        dir.join("san.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .unwrap();
    openssl(
        &dir,
        &[
            "x509",
            "-req",
            "-in",
            "redis.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "san.ext",
            "-out",
            "redis.pem",
        ],
    );
    let port = free_port();
    let mut child = std::process::Command::new("redis-server")
        .current_dir(&dir)
        .args(["--port", "0", "--bind", "127.0.0.1"])
        .args(["--tls-port", &port.to_string()])
        .args([
            "--tls-cert-file",
            "redis.pem",
            "--tls-key-file",
            "redis.key",
        ])
        .args(["--tls-ca-cert-file", "ca.pem", "--tls-auth-clients", "no"])
        .args(["--dir", dir.to_str().unwrap(), "--save", ""])
        .args(["--user", "default", "off"])
        // The least deploy/README.md ("Redis security") says to grant.
        .args(["--user", "jumpgate", "on", ">s3cret-pass", "~jg*", "&jg:*"])
        .args(["+@all", "-@dangerous", "+config|get", "+info"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("redis-server is installed");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let ca = dir.join("ca.pem").to_string_lossy().into_owned();
    let url = format!("rediss://jumpgate:s3cret-pass@localhost:{port}/0");
    let server =
        JumpgateProcess::start(&[("JUMPGATE_REDIS_URL", url), ("SSL_CERT_FILE", ca.clone())]).await;
    ready(&server).await;
    let (mut host, _guest, code) = lobby_pair(&server, RuleSet::Russian, 1).await;
    if host.my_turn() {
        host.play_first_legal().await;
    }
    // The room is in that Redis (read with its own client, over TLS).
    let out = std::process::Command::new("redis-cli")
        .args([
            "--tls",
            "--cacert",
            &ca,
            "-h",
            "localhost",
            "-p",
            &port.to_string(),
        ])
        .args([
            "--user",
            "jumpgate",
            "--pass",
            "s3cret-pass",
            "--no-auth-warning",
        ])
        .args(["SISMEMBER", "jg:lobbies", &code])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    // A wrong password: never ready, and nothing served.
    let wrong = JumpgateProcess::start(&[
        (
            "JUMPGATE_REDIS_URL",
            format!("rediss://jumpgate:wrong@localhost:{port}/0"),
        ),
        ("SSL_CERT_FILE", ca),
    ])
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let not_ready = jumpgate_e2e::http_get(wrong.addr, "/readyz").await.0;
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(text, "1", "the lobby is stored in the TLS Redis: {out:?}");
    assert_eq!(not_ready, 503);
}
