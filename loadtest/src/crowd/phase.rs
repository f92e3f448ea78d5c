//! The crowd's part of `bench`: the protocol 2 latency phase without the crowd, the
//! crowd opened (the server's and the load tester's memory read around it), the same
//! latency phase with the crowd held, and the crowd closed.

use std::time::Duration;

use tokio::time::Instant;

use super::{CrowdPlan, CrowdSummary, open_crowd};
use crate::driver::{self, Games, Kind, Pace};
use crate::net::vm_rss_kib;
use crate::report::PhaseSummary;

/// The latency phase the crowd is measured against.
#[derive(Debug, Clone, Copy)]
pub struct CrowdLatency {
    /// The games, protocol 2.
    pub games: Games,
    /// Moves a second over all games, open loop.
    pub rate: f64,
    /// The phase's length.
    pub duration: Duration,
    /// The pause before each of the two phases (`--settle`), so that neither
    /// measures what the phase before it left running on the server.
    pub settle: Duration,
}

/// Runs the latency phase, opens the crowd of `plan` on the server at `url` (process
/// `pid`, for its memory), runs the latency phase again with the crowd held, and
/// closes the crowd.
pub async fn run_crowd(
    url: &str,
    pid: Option<u32>,
    plan: &CrowdPlan,
    latency: CrowdLatency,
) -> CrowdSummary {
    let mut summary = CrowdSummary::planned(plan);
    let phase = |label: &'static str| {
        driver::run_phase(
            label,
            Kind::Jumpgate,
            url,
            latency.games,
            Pace::Open { rate: latency.rate },
            latency.duration,
        )
    };
    tokio::time::sleep(latency.settle).await;
    eprintln!(
        "phase: latency jumpgate v2 without crowd: {} games, {:?}",
        latency.games.count, latency.duration
    );
    match phase("latency jumpgate v2 without crowd").await {
        Ok(stats) => summary.latency_without = Some(PhaseSummary::from(&stats)),
        Err(e) => summary.failures.push(e),
    }
    eprintln!(
        "phase: crowd: {} greeted v2 connections from {} source addresses",
        plan.count,
        plan.sources.len()
    );
    let own_pid = std::process::id();
    summary.server_rss_before_kib = pid.and_then(vm_rss_kib);
    summary.client_rss_before_kib = vm_rss_kib(own_pid);
    let overflows_before = crate::edge::socket::listen_overflows();
    let crowd = match open_crowd(url, plan).await {
        Ok(crowd) => crowd,
        Err(e) => {
            summary.failures.push(format!("the crowd: {e}"));
            summary.finish();
            return summary;
        }
    };
    // Let the server finish the work the greetings caused before reading its memory.
    tokio::time::sleep(Duration::from_secs(1)).await;
    summary.server_rss_after_kib = pid.and_then(vm_rss_kib);
    summary.client_rss_after_kib = vm_rss_kib(own_pid);
    summary.listen_overflows = crate::edge::socket::listen_overflows()
        .zip(overflows_before)
        .map(|(after, before)| after.saturating_sub(before));
    summary.open_seconds = crowd.open_time.as_secs_f64();
    summary.greeted = crowd.greeted();
    summary.errors = crowd.failed();
    summary.first_error = crowd.first_error();
    tokio::time::sleep(latency.settle.saturating_sub(Duration::from_secs(1))).await;
    eprintln!(
        "phase: latency jumpgate v2 with crowd: {} games, {:?}, {} crowd connections open",
        latency.games.count,
        latency.duration,
        crowd.greeted() - crowd.closed()
    );
    match phase("latency jumpgate v2 with crowd").await {
        Ok(stats) => summary.latency_with = Some(PhaseSummary::from(&stats)),
        Err(e) => summary.failures.push(e),
    }
    let open_until = crowd.started + crowd.open_time + plan.hold;
    if Instant::now() < open_until {
        eprintln!(
            "  crowd: held until {:.0}s after it opened (--crowd-hold)",
            plan.hold.as_secs_f64()
        );
        tokio::time::sleep_until(open_until).await;
    }
    summary.closed = crowd.closed();
    summary.first_close = crowd.first_close();
    summary.pings = crowd.pings();
    summary.held_seconds = crowd.started.elapsed().as_secs_f64();
    summary.sources = crowd.per_source();
    eprintln!(
        "  crowd: held {:.0}s, {} closed by the server, {} pings answered; closing",
        summary.held_seconds, summary.closed, summary.pings
    );
    let closing = Instant::now();
    crowd.close().await;
    // The server's clean-up of the closed connections, before the next phase.
    tokio::time::sleep(settle_time(plan.count)).await;
    eprintln!("  crowd: closed in {:.1}s", closing.elapsed().as_secs_f64());
    summary.finish();
    summary
}

/// How long to leave the server after the crowd closes: a second, and a second more
/// for every 20,000 connections.
fn settle_time(count: usize) -> Duration {
    Duration::from_secs(1) + Duration::from_secs_f64(count as f64 / 20_000.0)
}
