//! Part 1, the cap: greeted WebSockets held at `--max-connections`, one more
//! upgrade, and `/healthz` on both listeners meanwhile.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use jumpgate_protocol::client::Client;
use serde::Serialize;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep, timeout_at};

use super::socket::{crowd_address, open_ws, raw_upgrade};
use super::{EdgeConfig, OPEN_CONCURRENCY, Target, micros, per_connection_kib, quantile};
use crate::driver::PATIENCE;
use crate::net;

/// `/healthz` timed on one listener.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HealthProbe {
    /// Requests sent (one connection each).
    pub requests: usize,
    /// Answered `200`.
    pub ok: usize,
    /// Request to answer, microseconds.
    pub p50_us: Option<u64>,
    /// 99th percentile.
    pub p99_us: Option<u64>,
    /// Slowest.
    pub max_us: Option<u64>,
}

async fn probe_health(addr: SocketAddr, requests: usize) -> HealthProbe {
    let mut times = Vec::with_capacity(requests);
    let mut ok = 0;
    for _ in 0..requests {
        let started = Instant::now();
        let answer = net::http_get(addr, "/healthz").await;
        times.push(micros(started, Instant::now()));
        ok += usize::from(answer.is_some_and(|a| a.status == 200));
    }
    times.sort_unstable();
    HealthProbe {
        requests,
        ok,
        p50_us: quantile(&times, 0.5),
        p99_us: quantile(&times, 0.99),
        max_us: times.last().copied(),
    }
}

/// The cap part, measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CapSummary {
    /// The server's `--max-connections`.
    pub max_connections: usize,
    /// Source addresses the connections came from.
    pub addresses: usize,
    /// Connections opened and greeted.
    pub greeted: usize,
    /// Connections that failed.
    pub errors: u64,
    /// The first failure.
    pub first_error: Option<String>,
    /// Seconds it took to open and greet them all.
    pub open_seconds: f64,
    /// The server's `jumpgate_connections_open` at the cap.
    pub server_connections_open: Option<f64>,
    /// The status of one more upgrade, from another address.
    pub one_more_status: Option<u16>,
    /// Its `Retry-After`.
    pub one_more_retry_after: Option<String>,
    /// Why it could not be tried.
    pub one_more_error: Option<String>,
    /// `/healthz` on the public listener at the cap.
    pub healthz_public: HealthProbe,
    /// `/healthz` on the internal listener at the cap.
    pub healthz_internal: HealthProbe,
    /// The server's `VmRSS` before, KiB.
    pub rss_before_kib: Option<u64>,
    /// At the cap.
    pub rss_at_cap_kib: Option<u64>,
    /// (at the cap − before) / greeted.
    pub kib_per_connection: Option<f64>,
}

/// Opens `max_connections` greeted WebSockets, `per_address` from each crowd
/// address, then tries one more and times `/healthz` on both listeners.
pub async fn measure_cap(target: &Target, config: &EdgeConfig) -> CapSummary {
    let n = config.max_connections;
    let addresses = n.div_ceil(config.per_address);
    let mut summary = CapSummary {
        max_connections: n,
        addresses,
        rss_before_kib: target.rss(),
        ..CapSummary::default()
    };
    let started = Instant::now();
    let hard = started + Duration::from_secs(60) + Duration::from_millis(20) * n as u32;
    let permits = Arc::new(Semaphore::new(OPEN_CONCURRENCY));
    let mut tasks = JoinSet::new();
    for i in 0..n {
        let (permits, target) = (permits.clone(), *target);
        let from = crowd_address(i / config.per_address);
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await.map_err(|e| e.to_string())?;
            let limit = (Instant::now() + PATIENCE).min(hard);
            let mut client = open_ws(from, &target, limit).await?;
            timeout_at(limit, client.greet(None, "jumpgate-loadtest edge"))
                .await
                .map_err(|_| format!("no welcome from {from} in time"))?
                .map_err(|e| format!("hello from {from}: {e}"))?;
            Ok::<Client, String>(client)
        });
    }
    let mut held = Vec::with_capacity(n);
    while let Some(joined) = tasks.join_next().await {
        match joined.map_err(|e| e.to_string()).and_then(|r| r) {
            Ok(client) => held.push(client),
            Err(e) => {
                summary.errors += 1;
                summary.first_error.get_or_insert(e);
            }
        }
    }
    summary.greeted = held.len();
    summary.open_seconds = started.elapsed().as_secs_f64();
    eprintln!(
        "  cap: {} of {n} greeted in {:.1} s from {addresses} addresses, {} errors",
        held.len(),
        summary.open_seconds,
        summary.errors
    );
    sleep(Duration::from_millis(500)).await;
    summary.rss_at_cap_kib = target.rss();
    summary.kib_per_connection =
        per_connection_kib(summary.rss_before_kib, summary.rss_at_cap_kib, held.len());
    summary.server_connections_open = target.metric("jumpgate_connections_open").await;
    match raw_upgrade(crowd_address(addresses), target.addr).await {
        Ok((status, head)) => {
            summary.one_more_status = Some(status);
            summary.one_more_retry_after = head.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case("retry-after")
                    .then(|| v.trim().to_owned())
            });
        }
        Err(e) => summary.one_more_error = Some(e),
    }
    summary.healthz_public = probe_health(target.addr, config.healthz_requests).await;
    if let Some(internal) = target.metrics {
        summary.healthz_internal = probe_health(internal, config.healthz_requests).await;
    }
    drop(held);
    summary
}
