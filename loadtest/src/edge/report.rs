//! The report of an `edge` run: its table rows and details.

use serde::Serialize;

use super::{
    CapSummary, DEFAULT_PER_ADDRESS_CAP, DeadlineSummary, EdgeConfig, FloodSummary, PlaySummary,
};

/// The deadline part: both kinds over many addresses, and one address's share.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DeadlinesSummary {
    /// Half-open connections over many addresses.
    pub half_open: Option<DeadlineSummary>,
    /// Un-greeted WebSockets over many addresses.
    pub ungreeted: Option<DeadlineSummary>,
    /// Half-open connections from one address.
    pub one_address: Option<DeadlineSummary>,
}

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct EdgeFigure {
    /// What is measured.
    pub figure: String,
    /// The measurement, in words and numbers.
    pub value: String,
    /// The goal.
    pub goal: String,
    /// Whether it is met; absent when there is no goal or nothing was measured.
    pub met: Option<bool>,
}

/// The whole `edge` run.
#[derive(Debug, Clone, Serialize)]
pub struct EdgeReport {
    /// The settings.
    pub config: EdgeConfig,
    /// The cap part.
    pub cap: Option<CapSummary>,
    /// The deadline part.
    pub deadlines: Option<DeadlinesSummary>,
    /// The flood part.
    pub flood: Option<FloodSummary>,
    /// Servers that could not start, and the like.
    pub failures: Vec<String>,
    /// Warnings and errors the servers logged (count, and the first lines).
    pub server_log: Vec<String>,
    /// The table rows.
    pub figures: Vec<EdgeFigure>,
}

fn us(v: Option<u64>) -> String {
    v.map_or("?".into(), |v| {
        if v >= 10_000 {
            format!("{:.1} ms", v as f64 / 1000.0)
        } else {
            format!("{v} µs")
        }
    })
}

fn kib(v: Option<f64>) -> String {
    v.map_or("?".into(), |v| format!("{v:.1} KiB"))
}

impl EdgeReport {
    pub(super) fn figures(&mut self) {
        let mut rows = Vec::new();
        let mut row = |figure: String, value: String, goal: &str, met: Option<bool>| {
            rows.push(EdgeFigure {
                figure,
                value,
                goal: goal.into(),
                met,
            });
        };
        if let Some(c) = &self.cap {
            row(
                format!(
                    "greeted WebSockets held at `--max-connections {}`",
                    c.max_connections
                ),
                format!(
                    "{} (server gauge {}), {} addresses, {} errors",
                    c.greeted,
                    c.server_connections_open
                        .map_or("?".into(), |v| format!("{v:.0}")),
                    c.addresses,
                    c.errors
                ),
                "all",
                Some(c.greeted == c.max_connections),
            );
            row(
                "one more upgrade at the cap".into(),
                match (c.one_more_status, &c.one_more_error) {
                    (Some(s), _) => format!(
                        "HTTP {s}, Retry-After {}",
                        c.one_more_retry_after.as_deref().unwrap_or("none")
                    ),
                    (None, Some(e)) => format!("failed: {e}"),
                    (None, None) => "?".into(),
                },
                "HTTP 503",
                c.one_more_status.map(|s| s == 503),
            );
            for (name, probe) in [
                ("public", &c.healthz_public),
                ("internal", &c.healthz_internal),
            ] {
                row(
                    format!("`/healthz` at the cap, {name} listener: p50 / max"),
                    format!(
                        "{} / {} ({} of {} answered 200)",
                        us(probe.p50_us),
                        us(probe.max_us),
                        probe.ok,
                        probe.requests
                    ),
                    "every request 200",
                    (probe.requests > 0).then_some(probe.ok == probe.requests),
                );
            }
            row(
                "server RSS at the cap (per greeted connection)".into(),
                format!(
                    "{} MiB ({})",
                    c.rss_at_cap_kib
                        .map_or("?".into(), |v| format!("{:.1}", v as f64 / 1024.0)),
                    kib(c.kib_per_connection)
                ),
                "≤ 16 KiB per connection",
                c.kib_per_connection.map(|k| k <= 16.0),
            );
        }
        if let Some(d) = &self.deadlines {
            for (name, part) in [
                ("half-open connection", &d.half_open),
                ("WebSocket without `hello`", &d.ungreeted),
            ] {
                let Some(s) = part else { continue };
                row(
                    format!("memory per {name}"),
                    format!("{} ({} open)", kib(s.kib_per_connection), s.opened),
                    "",
                    None,
                );
                let ms = |v: Option<u64>| v.map_or("?".into(), |v| v.to_string());
                row(
                    format!("{name}s closed at the {} ms deadline", s.deadline_ms),
                    format!(
                        "{} of {} (after {}–{} ms, p50 {}); early {}, still open {}",
                        s.closed_at_deadline,
                        s.opened,
                        ms(s.closed_after_min_ms),
                        ms(s.closed_after_max_ms),
                        ms(s.closed_after_p50_ms),
                        s.closed_early,
                        s.still_open
                    ),
                    "all",
                    (s.opened > 0).then_some(s.closed_at_deadline == s.opened),
                );
            }
            if let Some(s) = &d.one_address {
                row(
                    format!("{} half-open connections from one address", s.connections),
                    format!(
                        "{} kept until the deadline, {} closed at accept, {} still open",
                        s.closed_at_deadline, s.closed_early, s.still_open
                    ),
                    "64 kept, the rest closed at accept",
                    Some(
                        s.closed_at_deadline == DEFAULT_PER_ADDRESS_CAP.min(s.opened)
                            && s.closed_early + s.closed_at_deadline == s.opened,
                    ),
                );
            }
        }
        if let Some(f) = &self.flood {
            if let (Some(q), Some(u)) = (&f.quiet, &f.flooded) {
                row(
                    "innocent move round trip p50: quiet / under flood".into(),
                    format!("{} / {}", us(Some(q.p50_us)), us(Some(u.p50_us))),
                    "",
                    None,
                );
                row(
                    "innocent move round trip p99: quiet / under flood".into(),
                    format!(
                        "{} / {} ({})",
                        us(Some(q.p99_us)),
                        us(Some(u.p99_us)),
                        f.p99_ratio.map_or("?".into(), |r| format!("{r:.2}×"))
                    ),
                    "≤ 1.5× quiet",
                    f.p99_ratio.map(|r| r <= 1.5),
                );
                row(
                    "innocent move round trip max: quiet / under flood".into(),
                    format!("{} / {}", us(Some(q.max_us)), us(Some(u.max_us))),
                    "",
                    None,
                );
                if let Some(a) = &f.quiet_after {
                    row(
                        "innocent move round trip p50 / p99, quiet again after the flood".into(),
                        format!("{} / {}", us(Some(a.p50_us)), us(Some(a.p99_us))),
                        "",
                        None,
                    );
                }
                row(
                    format!(
                        "flood messages answered ({} connections from {} address{})",
                        f.flood_greeted,
                        f.flood_addresses,
                        if f.flood_addresses == 1 { "" } else { "es" }
                    ),
                    format!(
                        "{:.0}/s ({} rate_limited)",
                        u.flood_answered_per_second(),
                        u.flood_refused
                    ),
                    "≈ 100/s per address (the address's rate)",
                    None,
                );
                let cpu = |p: &PlaySummary| {
                    p.server_cpu_share
                        .map_or("?".into(), |s| format!("{:.1}%", s * 100.0))
                };
                row(
                    "server CPU: quiet / under flood (share of one core)".into(),
                    format!("{} / {}", cpu(q), cpu(u)),
                    "",
                    None,
                );
            }
            for failure in &f.failures {
                row("flood part failed".into(), failure.clone(), "", Some(false));
            }
        }
        self.figures = rows;
    }

    /// The table, as Markdown.
    pub fn table(&self) -> String {
        let mut out = String::from("| figure | measured | goal | met? |\n|---|---|---|---|\n");
        for f in &self.figures {
            let met = match f.met {
                Some(true) => "yes",
                Some(false) => "no",
                None => "—",
            };
            let goal = if f.goal.is_empty() { "—" } else { &f.goal };
            out.push_str(&format!(
                "| {} | {} | {goal} | {met} |\n",
                f.figure, f.value
            ));
        }
        out
    }

    /// Details under the table.
    pub fn details(&self) -> String {
        let mut out = String::new();
        let opt = |v: Option<u64>| v.map_or("?".into(), |v| v.to_string());
        if let Some(c) = &self.cap {
            out.push_str(&format!(
                "cap: {} greeted in {:.1} s from {} addresses; VmRSS {} → {} KiB; errors {}{}; \
                 healthz µs public p50 {} p99 {} max {}, internal p50 {} p99 {} max {}\n",
                c.greeted,
                c.open_seconds,
                c.addresses,
                opt(c.rss_before_kib),
                opt(c.rss_at_cap_kib),
                c.errors,
                c.first_error
                    .as_ref()
                    .map_or(String::new(), |e| format!(" (first: {e})")),
                opt(c.healthz_public.p50_us),
                opt(c.healthz_public.p99_us),
                opt(c.healthz_public.max_us),
                opt(c.healthz_internal.p50_us),
                opt(c.healthz_internal.p99_us),
                opt(c.healthz_internal.max_us),
            ));
        }
        if let Some(d) = &self.deadlines {
            for s in [&d.half_open, &d.ungreeted, &d.one_address]
                .into_iter()
                .flatten()
            {
                out.push_str(&format!(
                    "{}: {} of {} opened in {:.1} s from {} addresses (errors {}{}; listen queue \
                     overflows {}); VmRSS {} → {} KiB{}; endings {:?}\n",
                    s.what,
                    s.opened,
                    s.connections,
                    s.open_seconds,
                    s.addresses,
                    s.errors,
                    s.first_error
                        .as_ref()
                        .map_or(String::new(), |e| format!(", first: {e}")),
                    opt(s.listen_overflows),
                    opt(s.rss_before_kib),
                    opt(s.rss_after_kib),
                    if s.rss_read_before_deadline {
                        ""
                    } else {
                        " (read after the first deadline: some had closed)"
                    },
                    s.endings,
                ));
            }
        }
        if let Some(f) = &self.flood {
            for p in [&f.quiet, &f.flooded, &f.quiet_after].into_iter().flatten() {
                out.push_str(&format!(
                    "{}: {} moves in {:.1} s ({} rematches); round trip µs p50 {} p90 {} p99 {} \
                     max {}; server CPU {} ms, load tester CPU {} ms; flood answered {} ({} \
                     rate_limited), throttled {}\n",
                    p.label,
                    p.moves,
                    p.seconds,
                    p.rematches,
                    p.p50_us,
                    p.p90_us,
                    p.p99_us,
                    p.max_us,
                    opt(p.server_cpu_ms),
                    opt(p.client_cpu_ms),
                    p.flood_answered,
                    p.flood_refused,
                    p.throttled.map_or("?".into(), |t| format!("{t:.0}")),
                ));
            }
            out.push_str(&format!(
                "flooder: {} of {} connections greeted{}; warm-up {:.1} s; pings taken by its \
                 sockets: {} before the phase, {} after; kernel TCP memory {} → {} KiB; \
                 endings {:?}\n",
                f.flood_greeted,
                f.flood_connections,
                f.flood_open_error
                    .as_ref()
                    .map_or(String::new(), |e| format!(" (first failure: {e})")),
                f.warm_up_s,
                f.sent_before_phase,
                f.sent_after_phase,
                opt(f.tcp_memory_before_kib),
                opt(f.tcp_memory_during_kib),
                f.flood_endings,
            ));
        }
        for line in &self.server_log {
            out.push_str(&format!("server log: {line}\n"));
        }
        for failure in &self.failures {
            out.push_str(&format!("failed: {failure}\n"));
        }
        out
    }
}
