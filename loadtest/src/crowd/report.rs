//! What `bench --crowd` measured: the memory per crowd connection, the protocol 2
//! move round trip without and with the crowd, and the crowd's own counts; as JSON
//! (the report's `crowd`) and as a table under `bench`'s.

use serde::Serialize;

use super::{CONNECTS_IN_FLIGHT, CrowdPlan};
use crate::report::PhaseSummary;

/// Goal: the server's memory per crowd connection at most this, KiB.
pub const GOAL_KIB_PER_CONNECTION: f64 = 6.0;
/// Goal: the move round trip's p99 with the crowd at most this times without it.
pub const GOAL_P99_RATIO: f64 = 1.3;

/// One source address of the crowd.
#[derive(Debug, Clone, Serialize)]
pub struct CrowdSource {
    /// The loopback address the connections were bound to.
    pub address: String,
    /// Connections greeted from it.
    pub greeted: u64,
}

/// The crowd and the latency phases around it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CrowdSummary {
    /// Connections asked for (`--crowd`).
    pub asked: usize,
    /// Connections greeted (their `welcome` read).
    pub greeted: u64,
    /// Connections that could not be opened or greeted.
    pub errors: u64,
    /// The first of those failures.
    pub first_error: Option<String>,
    /// The source addresses, with the connections greeted from each.
    pub sources: Vec<CrowdSource>,
    /// Connections being set up at once.
    pub connects_in_flight: usize,
    /// Seconds from the first connect to the last `welcome`.
    pub open_seconds: f64,
    /// Greetings a second over that time.
    pub greeted_per_second: Option<f64>,
    /// Connections the host's listen queues dropped while the crowd opened
    /// (`ListenOverflows`, every listener of the host: should be 0).
    pub listen_overflows: Option<u64>,
    /// Seconds the crowd was held, from its first connect to the end of the latency
    /// phase with it or of `--crowd-hold` after it opened, whichever is later (pings
    /// come every 20 s; two unanswered close a connection).
    pub held_seconds: f64,
    /// `--crowd-hold`: seconds it stayed open at least after the last greeting.
    pub hold_seconds: f64,
    /// Greeted connections that ended while the crowd was held (should be 0).
    pub closed: u64,
    /// Why the first of them ended.
    pub first_close: Option<String>,
    /// Pings the server sent the crowd; each was answered with a pong.
    pub pings: u64,
    /// The server's `VmRSS` before opening the crowd, KiB.
    pub server_rss_before_kib: Option<u64>,
    /// The server's `VmRSS` with the crowd open, KiB.
    pub server_rss_after_kib: Option<u64>,
    /// The server's resident memory per greeted crowd connection, KiB.
    pub server_kib_per_connection: Option<f64>,
    /// The load tester's `VmRSS` before opening the crowd, KiB.
    pub client_rss_before_kib: Option<u64>,
    /// The load tester's `VmRSS` with the crowd open, KiB.
    pub client_rss_after_kib: Option<u64>,
    /// The load tester's resident memory per crowd connection, KiB.
    pub client_kib_per_connection: Option<f64>,
    /// The protocol 2 latency phase just before the crowd was opened.
    pub latency_without: Option<PhaseSummary>,
    /// The same phase with the crowd open.
    pub latency_with: Option<PhaseSummary>,
    /// p50 with the crowd / p50 without.
    pub p50_ratio: Option<f64>,
    /// p99 with the crowd / p99 without.
    pub p99_ratio: Option<f64>,
    /// Whether the memory goal (≤ 6 KiB a connection) is met.
    pub memory_goal_met: Option<bool>,
    /// Whether the latency goal (p99 with ≤ 1.3× without) is met.
    pub p99_goal_met: Option<bool>,
    /// Parts that could not run.
    pub failures: Vec<String>,
}

impl CrowdSummary {
    /// Nothing measured yet for `plan`.
    pub fn planned(plan: &CrowdPlan) -> CrowdSummary {
        CrowdSummary {
            asked: plan.count,
            sources: plan
                .sources
                .iter()
                .map(|ip| CrowdSource {
                    address: ip.to_string(),
                    greeted: 0,
                })
                .collect(),
            connects_in_flight: CONNECTS_IN_FLIGHT,
            hold_seconds: plan.hold.as_secs_f64(),
            ..CrowdSummary::default()
        }
    }

    /// Works out the figures derived from the readings.
    pub fn finish(&mut self) {
        let per_connection = |before: Option<u64>, after: Option<u64>| {
            let (before, after) = (before?, after?);
            (self.greeted > 0).then(|| after.saturating_sub(before) as f64 / self.greeted as f64)
        };
        self.server_kib_per_connection =
            per_connection(self.server_rss_before_kib, self.server_rss_after_kib);
        self.client_kib_per_connection =
            per_connection(self.client_rss_before_kib, self.client_rss_after_kib);
        self.greeted_per_second =
            (self.open_seconds > 0.0).then(|| self.greeted as f64 / self.open_seconds);
        let ratio = |pick: fn(&PhaseSummary) -> u64| {
            let without = self.latency_without.as_ref().filter(|p| p.ops > 0)?;
            let with = self.latency_with.as_ref().filter(|p| p.ops > 0)?;
            (pick(without) > 0).then(|| pick(with) as f64 / pick(without) as f64)
        };
        self.p50_ratio = ratio(|p| p.p50_us);
        self.p99_ratio = ratio(|p| p.p99_us);
        self.memory_goal_met = self
            .server_kib_per_connection
            .map(|kib| kib <= GOAL_KIB_PER_CONNECTION);
        self.p99_goal_met = self.p99_ratio.map(|r| r <= GOAL_P99_RATIO);
    }

    /// The crowd's table, Markdown.
    pub fn table(&self) -> String {
        let us = |phase: &Option<PhaseSummary>, pick: fn(&PhaseSummary) -> u64| {
            phase
                .as_ref()
                .filter(|p| p.ops > 0)
                .map_or("not measured".to_owned(), |p| format!("{} µs", pick(p)))
        };
        let ratio = |r: Option<f64>| r.map_or("—".to_owned(), |r| format!("{r:.2}×"));
        let met = |m: Option<bool>| match m {
            Some(true) => "yes",
            Some(false) => "no",
            None => "—",
        };
        let mut out = format!(
            "\n| crowd of {} (protocol 2) | without crowd | with crowd | ratio | met? | goal |\n\
             |---|---:|---:|---:|---|---|\n",
            self.asked
        );
        out.push_str(&format!(
            "| move round trip p50 | {} | {} | {} | — | — |\n",
            us(&self.latency_without, |p| p.p50_us),
            us(&self.latency_with, |p| p.p50_us),
            ratio(self.p50_ratio),
        ));
        out.push_str(&format!(
            "| move round trip p99 | {} | {} | {} | {} | ≤ {GOAL_P99_RATIO}× without |\n",
            us(&self.latency_without, |p| p.p99_us),
            us(&self.latency_with, |p| p.p99_us),
            ratio(self.p99_ratio),
            met(self.p99_goal_met),
        ));
        out.push_str(&format!(
            "| server memory per crowd connection | — | {} | — | {} | ≤ {GOAL_KIB_PER_CONNECTION} KiB |\n",
            self.server_kib_per_connection
                .map_or("not measured".to_owned(), |kib| format!("{kib:.2} KiB")),
            met(self.memory_goal_met),
        ));
        out.push_str(&format!(
            "| crowd connections closed while held | — | {} | — | {} | 0 |\n",
            self.closed,
            met(Some(self.closed == 0 && self.greeted > 0)),
        ));
        out
    }

    /// The crowd's details line.
    pub fn details(&self) -> String {
        let opt = |v: Option<u64>| v.map_or("?".to_owned(), |v| v.to_string());
        let sources: Vec<String> = self
            .sources
            .iter()
            .map(|s| format!("{} ({})", s.address, s.greeted))
            .collect();
        let mut out = format!(
            "crowd: {} of {} greeted from {} in {:.1} s ({:.0}/s, {} in flight), errors {}{}; \
             listen overflows {}; held {:.0} s, closed {}{}, pings answered {}; server VmRSS {} → {} KiB; load \
             tester VmRSS {} → {} KiB ({} KiB a connection)\n",
            self.greeted,
            self.asked,
            sources.join(", "),
            self.open_seconds,
            self.greeted_per_second.unwrap_or(0.0),
            self.connects_in_flight,
            self.errors,
            self.first_error
                .as_ref()
                .map_or(String::new(), |e| format!(" (first: {e})")),
            opt(self.listen_overflows),
            self.held_seconds,
            self.closed,
            self.first_close
                .as_ref()
                .map_or(String::new(), |e| format!(" (first: {e})")),
            self.pings,
            opt(self.server_rss_before_kib),
            opt(self.server_rss_after_kib),
            opt(self.client_rss_before_kib),
            opt(self.client_rss_after_kib),
            self.client_kib_per_connection
                .map_or("?".to_owned(), |kib| format!("{kib:.2}")),
        );
        for failure in &self.failures {
            out.push_str(&format!("crowd: {failure}\n"));
        }
        out
    }
}
