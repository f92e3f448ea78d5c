//! The report: each protocol's figures side by side with the echo baseline, goals, the
//! table and JSON.

use serde::Serialize;

use crate::crowd::CrowdSummary;
use crate::driver::{IdleStats, Kind, PhaseStats};

/// What the run was asked to do.
#[derive(Debug, Clone, Serialize)]
pub struct RunConfig {
    /// Games (echo pairs) in the latency phase.
    pub games: usize,
    /// Open-loop rate of the latency phase, operations a second in total.
    pub rate: f64,
    /// Games (echo pairs) in the saturation phase.
    pub sat_games: usize,
    /// Length of each timed phase, seconds.
    pub duration_s: f64,
    /// Idle connections opened on each server.
    pub idle: usize,
    /// The rule set the games played.
    pub rule_set: String,
    /// Bytes of a `move` frame, and so of every echo frame.
    pub move_frame_bytes: usize,
    /// The highest rate Jumpgate's saturation phase can reach with the per-connection
    /// pacing, moves a second (echo pairs are not paced).
    pub saturation_cap: f64,
}

/// A point of a latency percentile distribution.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CurvePoint {
    /// Percentile, 0 to 100.
    pub percentile: f64,
    /// Latency at that percentile, microseconds.
    pub latency_us: u64,
}

/// A timed phase, summarised.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseSummary {
    /// The phase's name.
    pub label: String,
    /// Games (or echo pairs) that ran.
    pub games: usize,
    /// Operations answered in the window.
    pub ops: u64,
    /// The window, seconds.
    pub seconds: f64,
    /// Operations a second.
    pub per_second: f64,
    /// Games that failed.
    pub errors: u64,
    /// The first failure.
    pub first_error: Option<String>,
    /// Lobbies opened after games ended.
    pub lobbies: u64,
    /// Round-trip percentiles, microseconds.
    pub p50_us: u64,
    /// 90th percentile.
    pub p90_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// 99.9th percentile.
    pub p999_us: u64,
    /// Slowest.
    pub max_us: u64,
    /// Mean.
    pub mean_us: f64,
    /// The percentile distribution, for plots.
    pub curve: Vec<CurvePoint>,
    /// Moves whose frames were counted (Jumpgate only).
    pub metered_moves: u64,
    /// Bytes the server sent per move to each of the two players (its `ack` and the
    /// states or events, WebSocket headers included), averaged over both.
    pub bytes_in_per_move_per_member: Option<f64>,
    /// Frames the server sent per move to each player, likewise.
    pub frames_in_per_move_per_member: Option<f64>,
    /// Bytes of the `move` frame the mover sent, header and mask included.
    pub bytes_out_per_move: Option<f64>,
    /// Protocol 2: events that skipped a version (each answered with a `resync`).
    pub gaps: u64,
}

impl From<&PhaseStats> for PhaseSummary {
    fn from(stats: &PhaseStats) -> Self {
        let h = &stats.latency_us;
        let curve = if h.is_empty() {
            Vec::new()
        } else {
            // x = log10(1 / (1 - p)) from 0 (p = 0) to 5 (p = 99.999 %).
            (0..=100)
                .map(|i| {
                    let x = f64::from(i) * 0.05;
                    let quantile = 1.0 - 10f64.powf(-x);
                    CurvePoint {
                        percentile: quantile * 100.0,
                        latency_us: h.value_at_quantile(quantile),
                    }
                })
                .collect()
        };
        let moves = stats.metered_moves;
        let per_move =
            |count: u64, members: f64| (moves > 0).then(|| count as f64 / moves as f64 / members);
        let traffic = &stats.move_traffic;
        PhaseSummary {
            metered_moves: moves,
            bytes_in_per_move_per_member: per_move(traffic.bytes_in, 2.0),
            frames_in_per_move_per_member: per_move(traffic.frames_in, 2.0),
            bytes_out_per_move: per_move(traffic.bytes_out, 1.0),
            gaps: stats.gaps,
            label: stats.label.clone(),
            games: stats.games,
            ops: stats.ops,
            seconds: stats.seconds,
            per_second: stats.per_second(),
            errors: stats.errors,
            first_error: stats.first_error.clone(),
            lobbies: stats.lobbies,
            p50_us: h.value_at_quantile(0.5),
            p90_us: h.value_at_quantile(0.9),
            p99_us: h.value_at_quantile(0.99),
            p999_us: h.value_at_quantile(0.999),
            max_us: h.max(),
            mean_us: h.mean(),
            curve,
        }
    }
}

/// The idle phase, summarised.
#[derive(Debug, Clone, Serialize)]
pub struct IdleSummary {
    /// What was measured.
    #[serde(flatten)]
    pub stats: IdleStats,
    /// Resident bytes per connection, when the server's process was known.
    pub bytes_per_connection: Option<f64>,
}

impl From<IdleStats> for IdleSummary {
    fn from(stats: IdleStats) -> Self {
        IdleSummary {
            bytes_per_connection: stats.bytes_per_connection(),
            stats,
        }
    }
}

/// Everything measured on one server.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Side {
    /// The open-loop phase.
    pub latency: Option<PhaseSummary>,
    /// The closed-loop phase.
    pub saturated: Option<PhaseSummary>,
    /// The idle connections.
    pub idle: Option<IdleSummary>,
    /// Phases that could not run at all.
    pub failures: Vec<String>,
}

/// The Redis comparison.
#[derive(Debug, Clone, Serialize)]
pub struct RedisSide {
    /// "measured", or why not.
    pub status: String,
    /// The saturation phase against the server with Redis on.
    pub saturated: Option<PhaseSummary>,
}

/// Everything measured on Jumpgate with players of one protocol.
#[derive(Debug, Clone, Serialize)]
pub struct ProtocolRun {
    /// The protocol's number: 1 or 2 (MessagePack in both).
    pub protocol: u32,
    /// Jumpgate, in-memory store.
    pub jumpgate: Side,
    /// Jumpgate with Redis.
    pub redis: RedisSide,
}

/// One protocol's value in a row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// The protocol's number.
    pub protocol: u32,
    /// Its value.
    pub value: Option<f64>,
    /// What it is compared with (echo's value, or this protocol's in-memory rate for
    /// the Redis row).
    pub baseline: Option<f64>,
    /// value / baseline.
    pub ratio: Option<f64>,
    /// Whether the goal is met; absent when not measured.
    pub met: Option<bool>,
}

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    /// What is measured.
    pub figure: String,
    /// Unit of the values.
    pub unit: String,
    /// What the baseline column holds.
    pub baseline_name: String,
    /// The baseline shared by every protocol (echo), if there is one.
    pub baseline: Option<f64>,
    /// One cell per protocol run, in run order.
    pub cells: Vec<Cell>,
    /// The goal, in words.
    pub goal: String,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The run's settings.
    pub config: RunConfig,
    /// Jumpgate, once per protocol asked for.
    pub runs: Vec<ProtocolRun>,
    /// The echo baseline.
    pub echo: Side,
    /// The table rows.
    pub figures: Vec<Figure>,
    /// `--crowd`: the protocol 2 latency phase without and with that many more
    /// greeted connections open, and their memory; absent without `--crowd`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crowd: Option<CrowdSummary>,
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// A row's goal: what is compared, and the test.
enum Goal {
    /// value / baseline at most this.
    RatioAtMost(f64),
    /// value / baseline at least this.
    RatioAtLeast(f64),
    /// The value itself at most this.
    ValueAtMost(f64),
}

impl Goal {
    fn met(&self, value: Option<f64>, ratio: Option<f64>) -> Option<bool> {
        match *self {
            Goal::RatioAtMost(bound) => ratio.map(|r| r <= bound),
            Goal::RatioAtLeast(bound) => ratio.map(|r| r >= bound),
            Goal::ValueAtMost(bound) => value.map(|v| v <= bound),
        }
    }
}

fn latency(side: &Side, pick: fn(&PhaseSummary) -> u64) -> Option<f64> {
    side.latency
        .as_ref()
        .filter(|p| p.ops > 0)
        .map(|p| pick(p) as f64)
}

fn saturated(phase: Option<&PhaseSummary>) -> Option<f64> {
    phase.filter(|p| p.ops > 0).map(|p| p.per_second)
}

fn memory_kib(side: &Side) -> Option<f64> {
    side.idle
        .as_ref()
        .and_then(|i| i.bytes_per_connection)
        .map(|b| b / 1024.0)
}

impl Report {
    /// Fills in the figures from the phases.
    pub fn new(config: RunConfig, runs: Vec<ProtocolRun>, echo: Side) -> Report {
        let row = |figure: &str,
                   unit: &str,
                   goal: &str,
                   test: Goal,
                   baseline: Option<f64>,
                   value: &dyn Fn(&ProtocolRun) -> Option<f64>| {
            let cells = runs
                .iter()
                .map(|run| {
                    let value = value(run);
                    let ratio = ratio(value, baseline);
                    Cell {
                        protocol: run.protocol,
                        value,
                        baseline,
                        ratio,
                        met: test.met(value, ratio),
                    }
                })
                .collect();
            Figure {
                figure: figure.into(),
                unit: unit.into(),
                baseline_name: "echo".into(),
                baseline,
                cells,
                goal: goal.into(),
            }
        };
        let mut figures = vec![
            row(
                "move round trip p50",
                "µs",
                "≤ 1.3× echo",
                Goal::RatioAtMost(1.3),
                latency(&echo, |p| p.p50_us),
                &|run| latency(&run.jumpgate, |p| p.p50_us),
            ),
            row(
                "move round trip p99",
                "µs",
                "≤ 1.6× echo",
                Goal::RatioAtMost(1.6),
                latency(&echo, |p| p.p99_us),
                &|run| latency(&run.jumpgate, |p| p.p99_us),
            ),
            row(
                "saturated moves/s (echo: messages/s)",
                "/s",
                "≥ 0.5× echo",
                Goal::RatioAtLeast(0.5),
                saturated(echo.saturated.as_ref()),
                &|run| saturated(run.jumpgate.saturated.as_ref()),
            ),
            row(
                "bytes sent per move per member (echo: per message)",
                "B",
                "≤ 200 B (MessagePack)",
                Goal::ValueAtMost(200.0),
                echo.saturated.as_ref().map(|_| {
                    jumpgate_protocol::client::frame_bytes(config.move_frame_bytes, false) as f64
                }),
                &|run| {
                    run.jumpgate
                        .saturated
                        .as_ref()
                        .and_then(|p| p.bytes_in_per_move_per_member)
                },
            ),
            row(
                "memory per idle connection",
                "KiB",
                "≤ 8 KiB",
                Goal::ValueAtMost(8.0),
                memory_kib(&echo),
                &|run| memory_kib(&run.jumpgate),
            ),
        ];
        // Redis against each protocol's own in-memory rate.
        let goal = Goal::RatioAtLeast(0.85);
        let cells = runs
            .iter()
            .map(|run| {
                let value = saturated(run.redis.saturated.as_ref());
                let baseline =
                    saturated(run.jumpgate.saturated.as_ref()).filter(|_| value.is_some());
                let ratio = ratio(value, baseline);
                Cell {
                    protocol: run.protocol,
                    value,
                    baseline,
                    ratio,
                    met: goal.met(value, ratio),
                }
            })
            .collect();
        figures.push(Figure {
            figure: "saturated moves/s, Redis on".into(),
            unit: "/s".into(),
            baseline_name: "in-memory, same protocol".into(),
            baseline: None,
            cells,
            goal: "≥ 0.85× in-memory".into(),
        });
        Report {
            config,
            runs,
            echo,
            figures,
            crowd: None,
        }
    }

    /// The table, as Markdown: one column per protocol, each value with its ratio to
    /// the baseline and whether it meets the goal.
    pub fn table(&self) -> String {
        let mut out = String::from("| figure | echo |");
        let mut rule = String::from("|---|---:|");
        for run in &self.runs {
            out.push_str(&format!(" protocol {} | ratio | met? |", run.protocol));
            rule.push_str("---:|---:|---|");
        }
        out.push_str(" goal |\n");
        out.push_str(&rule);
        out.push_str("---|\n");
        for f in &self.figures {
            let value = |v: Option<f64>| match v {
                Some(v) => format_value(v, &f.unit),
                None => "not measured".into(),
            };
            let baseline = match (f.baseline, f.cells.is_empty()) {
                (Some(b), _) => value(Some(b)),
                (None, false) if f.baseline_name != "echo" => f.baseline_name.clone(),
                _ => "—".into(),
            };
            out.push_str(&format!("| {} | {baseline} |", f.figure));
            for cell in &f.cells {
                let ratio = cell.ratio.map_or("—".into(), |r| format!("{r:.2}×"));
                let met = match cell.met {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "—",
                };
                out.push_str(&format!(" {} | {ratio} | {met} |", value(cell.value)));
            }
            out.push_str(&format!(" {} |\n", f.goal));
        }
        if let Some(crowd) = &self.crowd {
            out.push_str(&crowd.table());
        }
        out
    }

    /// Details under the table: rates reached, percentiles, bytes, errors, caveats.
    pub fn details(&self) -> String {
        let mut out = String::new();
        let c = &self.config;
        out.push_str(&format!(
            "frames: {} bytes (a MessagePack v1 move); phases of {} s; latency: {} games at \
             {} moves/s open loop; saturation: {} games closed loop (jumpgate capped at \
             {:.0}/s by the per-connection pacing; echo not paced)\n",
            c.move_frame_bytes, c.duration_s, c.games, c.rate, c.sat_games, c.saturation_cap
        ));
        let mut sides: Vec<(String, &Side, Kind)> = self
            .runs
            .iter()
            .map(|run| {
                (
                    format!("jumpgate v{}", run.protocol),
                    &run.jumpgate,
                    Kind::Jumpgate,
                )
            })
            .collect();
        sides.push(("echo".into(), &self.echo, Kind::Echo));
        for (name, side, kind) in sides {
            for phase in [&side.latency, &side.saturated].into_iter().flatten() {
                out.push_str(&phase_line(kind, phase));
            }
            if let Some(idle) = &side.idle {
                out.push_str(&format!(
                    "{name} idle: {} connections, VmRSS {} → {} KiB, errors {}{}\n",
                    idle.stats.connections,
                    opt(idle.stats.rss_before_kib),
                    opt(idle.stats.rss_after_kib),
                    idle.stats.errors,
                    idle.stats
                        .first_error
                        .as_ref()
                        .map_or(String::new(), |e| format!(" (first: {e})")),
                ));
            }
            for failure in &side.failures {
                out.push_str(&format!("{name}: {failure}\n"));
            }
        }
        for run in &self.runs {
            match &run.redis.saturated {
                Some(phase) => out.push_str(&phase_line(Kind::Jumpgate, phase)),
                None => out.push_str(&format!("redis v{}: {}\n", run.protocol, run.redis.status)),
            }
            if let Some(sat) = &run.jumpgate.saturated
                && sat.per_second >= 0.9 * c.saturation_cap
            {
                out.push_str(&format!(
                    "note: jumpgate v{}'s saturated rate is near the pacing cap; raise \
                     --sat-games to find the server's limit\n",
                    run.protocol
                ));
            }
        }
        if let Some(crowd) = &self.crowd {
            for phase in [&crowd.latency_without, &crowd.latency_with]
                .into_iter()
                .flatten()
            {
                out.push_str(&phase_line(Kind::Jumpgate, phase));
            }
            out.push_str(&crowd.details());
        }
        out
    }
}

fn opt(v: Option<u64>) -> String {
    v.map_or("?".into(), |v| v.to_string())
}

fn phase_line(kind: Kind, p: &PhaseSummary) -> String {
    format!(
        "{}: {} {} in {:.1} s = {:.0}/s over {} games; round trip µs p50 {} p90 {} \
         p99 {} p99.9 {} max {}; lobbies {}; errors {}{}{}\n",
        p.label,
        p.ops,
        kind.unit(),
        p.seconds,
        p.per_second,
        p.games,
        p.p50_us,
        p.p90_us,
        p.p99_us,
        p.p999_us,
        p.max_us,
        p.lobbies,
        p.errors,
        p.first_error
            .as_ref()
            .map_or(String::new(), |e| format!(" (first: {e})")),
        match (
            p.bytes_in_per_move_per_member,
            p.frames_in_per_move_per_member
        ) {
            (Some(bytes), Some(frames)) => format!(
                "; per move per member {bytes:.1} B in {frames:.2} frames (move sent: {:.0} B, \
                 {} moves counted); gaps {}",
                p.bytes_out_per_move.unwrap_or(0.0),
                p.metered_moves,
                p.gaps
            ),
            _ => String::new(),
        },
    )
}

fn format_value(v: f64, unit: &str) -> String {
    match unit {
        "µs" => format!("{v:.0} µs"),
        "KiB" => format!("{v:.1} KiB"),
        "B" => format!("{v:.0} B"),
        "/s" => format!("{}/s", thousands(v.round() as u64)),
        _ => format!("{v:.2} {unit}"),
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
