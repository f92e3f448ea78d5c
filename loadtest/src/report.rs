//! The report: figures side by side with the echo baseline, goals, the table and JSON.

use serde::Serialize;

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
        PhaseSummary {
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

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    /// What is measured.
    pub figure: String,
    /// Unit of the two values.
    pub unit: String,
    /// Jumpgate's value.
    pub jumpgate: Option<f64>,
    /// The baseline's value (echo, or in-memory for the Redis row).
    pub baseline: Option<f64>,
    /// jumpgate / baseline.
    pub ratio: Option<f64>,
    /// The goal, in words.
    pub goal: String,
    /// Whether the goal is met; absent when not measured.
    pub met: Option<bool>,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The run's settings.
    pub config: RunConfig,
    /// Jumpgate, in-memory store.
    pub jumpgate: Side,
    /// The echo baseline.
    pub echo: Side,
    /// Jumpgate with Redis.
    pub redis: RedisSide,
    /// The table rows.
    pub figures: Vec<Figure>,
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

impl Report {
    /// Fills in the figures from the phases.
    pub fn new(config: RunConfig, jumpgate: Side, echo: Side, redis: RedisSide) -> Report {
        let lat = |side: &Side, pick: fn(&PhaseSummary) -> u64| {
            side.latency
                .as_ref()
                .filter(|p| p.ops > 0)
                .map(|p| pick(p) as f64)
        };
        let sat = |side: Option<&PhaseSummary>| side.filter(|p| p.ops > 0).map(|p| p.per_second);
        let mem = |side: &Side| {
            side.idle
                .as_ref()
                .and_then(|i| i.bytes_per_connection)
                .map(|b| b / 1024.0)
        };
        let mut figures = Vec::new();
        let (j, e) = (lat(&jumpgate, |p| p.p50_us), lat(&echo, |p| p.p50_us));
        let r = ratio(j, e);
        figures.push(Figure {
            figure: "move round trip p50".into(),
            unit: "µs".into(),
            jumpgate: j,
            baseline: e,
            ratio: r,
            goal: "≤ 1.5× echo".into(),
            met: r.map(|r| r <= 1.5),
        });
        let (j, e) = (lat(&jumpgate, |p| p.p99_us), lat(&echo, |p| p.p99_us));
        let r = ratio(j, e);
        figures.push(Figure {
            figure: "move round trip p99".into(),
            unit: "µs".into(),
            jumpgate: j,
            baseline: e,
            ratio: r,
            goal: "≤ 2× echo".into(),
            met: r.map(|r| r <= 2.0),
        });
        let (j, e) = (
            sat(jumpgate.saturated.as_ref()),
            sat(echo.saturated.as_ref()),
        );
        let r = ratio(j, e);
        figures.push(Figure {
            figure: "saturated moves/s (echo: messages/s)".into(),
            unit: "/s".into(),
            jumpgate: j,
            baseline: e,
            ratio: r,
            goal: "≥ 0.5× echo".into(),
            met: r.map(|r| r >= 0.5),
        });
        let (j, e) = (mem(&jumpgate), mem(&echo));
        figures.push(Figure {
            figure: "memory per idle connection".into(),
            unit: "KiB".into(),
            jumpgate: j,
            baseline: e,
            ratio: ratio(j, e),
            goal: "≤ 16 KiB".into(),
            met: j.map(|j| j <= 16.0),
        });
        let (j, e) = (
            sat(redis.saturated.as_ref()),
            sat(jumpgate.saturated.as_ref()),
        );
        let r = ratio(j, e);
        figures.push(Figure {
            figure: "saturated moves/s, Redis on (echo column: in-memory)".into(),
            unit: "/s".into(),
            jumpgate: j,
            baseline: e.filter(|_| j.is_some()),
            ratio: r,
            goal: "≥ 0.8× in-memory".into(),
            met: r.map(|r| r >= 0.8),
        });
        Report {
            config,
            jumpgate,
            echo,
            redis,
            figures,
        }
    }

    /// The table, as Markdown.
    pub fn table(&self) -> String {
        let mut out = String::from(
            "| figure | jumpgate | echo | ratio | goal | met? |\n|---|---:|---:|---:|---|---|\n",
        );
        for f in &self.figures {
            let value = |v: Option<f64>| match v {
                Some(v) => format_value(v, &f.unit),
                None => "not measured".into(),
            };
            let ratio = f.ratio.map_or("—".into(), |r| format!("{r:.2}×"));
            let met = match f.met {
                Some(true) => "yes",
                Some(false) => "no",
                None => "—",
            };
            out.push_str(&format!(
                "| {} | {} | {} | {ratio} | {} | {met} |\n",
                f.figure,
                value(f.jumpgate),
                value(f.baseline),
                f.goal
            ));
        }
        out
    }

    /// Details under the table: rates reached, percentiles, errors, caveats.
    pub fn details(&self) -> String {
        let mut out = String::new();
        let c = &self.config;
        out.push_str(&format!(
            "frames: {} bytes (a MessagePack move); phases of {} s; latency: {} games at \
             {} moves/s open loop; saturation: {} games closed loop (jumpgate capped at \
             {:.0}/s by the per-connection pacing; echo not paced)\n",
            c.move_frame_bytes, c.duration_s, c.games, c.rate, c.sat_games, c.saturation_cap
        ));
        let sides = [
            ("jumpgate", &self.jumpgate, Kind::Jumpgate),
            ("echo", &self.echo, Kind::Echo),
        ];
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
        match &self.redis.saturated {
            Some(phase) => out.push_str(&phase_line(Kind::Jumpgate, phase)),
            None => out.push_str(&format!("redis: {}\n", self.redis.status)),
        }
        if let Some(sat) = &self.jumpgate.saturated
            && sat.per_second >= 0.9 * c.saturation_cap
        {
            out.push_str(
                "note: jumpgate's saturated rate is near the pacing cap; raise --sat-games \
                 to find the server's limit\n",
            );
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
         p99 {} p99.9 {} max {}; lobbies {}; errors {}{}\n",
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
    )
}

fn format_value(v: f64, unit: &str) -> String {
    match unit {
        "µs" => format!("{v:.0} µs"),
        "KiB" => format!("{v:.1} KiB"),
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
