//! What `resume` reports: per count of lobbies, how Redis was filled, how the
//! start went (time, CPU, commands, memory), and the check of a sample; as
//! a table and as details.

use serde::Serialize;

/// What filling Redis took.
#[derive(Debug, Clone, Serialize)]
pub struct Filled {
    /// Lobbies stored in all (templates included).
    pub lobbies: usize,
    pub templates: usize,
    /// Seconds the copies took.
    pub copy_seconds: f64,
    /// Bytes of the first template's record, and how often its code occurs in it.
    pub record_bytes: usize,
    pub code_occurrences: usize,
    /// `SCARD jg:lobbies`, `DBSIZE` and `used_memory` once filled.
    pub open_set: u64,
    pub redis_keys: u64,
    pub redis_used_memory: u64,
}

/// The server's start.
#[derive(Debug, Clone, Serialize)]
pub struct Resumed {
    /// Seconds from the spawn until `/readyz` answered 200.
    pub ready_seconds: f64,
    /// The server's `jumpgate_resume_seconds`.
    pub resume_seconds_metric: f64,
    /// `jumpgate_resume_rooms_left` at ready.
    pub rooms_left: f64,
    /// `jumpgate_lobbies_live` at ready: summed over rule sets, and of the run's.
    pub lobbies_live_sum: f64,
    pub lobbies_live: f64,
    /// `jumpgate_games_live` summed, at ready.
    pub games_live_sum: f64,
    /// `jumpgate_room_takeovers_total` at ready.
    pub takeovers: f64,
    /// The server's CPU seconds at ready (the start and the resume, from
    /// `/proc`), and Redis's from the spawn until ready, with
    /// the commands it ran meanwhile (those inside scripts included): what
    /// the resume costs, less sensitive than its time to other load on the
    /// machine.
    pub server_cpu_seconds: f64,
    pub redis_cpu_seconds: f64,
    pub redis_commands: u64,
    /// Resident set, KiB: at ready and after the settle (`None` in-process).
    pub rss_kib_at_ready: Option<u64>,
    pub rss_kib_settled: Option<u64>,
}

/// The check of a sample of resumed lobbies.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    /// Lobbies checked.
    pub lobbies: usize,
    /// Guests back in their seat of a game in play.
    pub seated: usize,
    /// Of those, the ones to move whose move was stored and acknowledged.
    pub moved: usize,
    /// New guests that could watch.
    pub watched: usize,
    /// Seat retakes timed (`join_lobby` until ack and state): p50, p99, max, µs.
    pub join_p50_us: u64,
    pub join_p99_us: u64,
    pub join_max_us: u64,
    /// The first failures.
    pub failures: Vec<String>,
}

/// One N.
#[derive(Debug, Clone, Serialize)]
pub struct ResumeRun {
    pub lobbies: usize,
    /// The median of 50 `PING`s on the resuming server's way to Redis
    /// (through the proxy with `--redis-rtt-ms`), ms.
    pub redis_rtt_measured_ms: f64,
    pub filled: Filled,
    pub resumed: Resumed,
    pub checked: Checked,
    /// Server memory per resumed lobby, settled, KiB: (RSS − the RSS of the same
    /// server on an empty Redis) ÷ lobbies.
    pub kib_per_lobby: Option<f64>,
    /// ERROR lines the server logged.
    pub server_errors: usize,
    pub first_server_errors: Vec<String>,
}

/// Every run.
#[derive(Debug, Clone, Serialize)]
pub struct ResumeReport {
    pub rule_set: String,
    /// The round trip added between the resuming server and Redis, ms.
    pub redis_rtt_ms: f64,
    pub templates: usize,
    pub sample: usize,
    /// RSS of the same server started on an empty Redis, KiB.
    pub empty_rss_kib: Option<u64>,
    pub runs: Vec<ResumeRun>,
}

impl ResumeReport {
    pub fn table(&self) -> String {
        let mib =
            |v: Option<u64>| v.map_or("—".to_owned(), |k| format!("{:.1}", k as f64 / 1024.0));
        let mut out = String::from(
            "| open lobbies | spawn → /readyz 200 | jumpgate_resume_seconds | lobbies live | \
             CPU server / Redis | Redis commands | RSS at ready MiB | RSS settled MiB | \
             KiB per lobby | Redis MiB | checked: seated / moved / watched | seat retake p50 / p99 ms |\n\
             |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n",
        );
        for run in &self.runs {
            let r = &run.resumed;
            let c = &run.checked;
            out.push_str(&format!(
                "| {} | {:.2} s | {:.2} s | {} | {:.2} / {:.2} s | {} | {} | {} | {} | {:.0} | \
                 {} of {}: {} / {} / {} | {:.2} / {:.2} |\n",
                run.lobbies,
                r.ready_seconds,
                r.resume_seconds_metric,
                r.lobbies_live_sum,
                r.server_cpu_seconds,
                r.redis_cpu_seconds,
                r.redis_commands,
                mib(r.rss_kib_at_ready),
                mib(r.rss_kib_settled),
                run.kib_per_lobby
                    .map_or("—".to_owned(), |k| format!("{k:.1}")),
                run.filled.redis_used_memory as f64 / 1_048_576.0,
                c.lobbies,
                c.lobbies,
                c.seated,
                c.moved,
                c.watched,
                c.join_p50_us as f64 / 1000.0,
                c.join_p99_us as f64 / 1000.0,
            ));
        }
        out
    }

    pub fn details(&self) -> String {
        let mut out = format!(
            "{} template lobbies ({}) opened through a server, the rest copied in Redis; \
             round trip added between the resuming server and Redis: {} ms; \
             the server on an empty Redis: RSS {} KiB\n",
            self.templates,
            self.rule_set,
            self.redis_rtt_ms,
            self.empty_rss_kib.map_or("—".to_owned(), |k| k.to_string())
        );
        for run in &self.runs {
            let f = &run.filled;
            let r = &run.resumed;
            out.push_str(&format!(
                "{}: copied in {:.1} s; record {} bytes ({} × its code); Redis {} keys, \
                 {} in jg:lobbies; PING from the server's side {:.2} ms (median); at ready: \
                 {} rooms left, {} games live, {} takeovers; server errors {}{}\n",
                run.lobbies,
                f.copy_seconds,
                f.record_bytes,
                f.code_occurrences,
                f.redis_keys,
                f.open_set,
                run.redis_rtt_measured_ms,
                r.rooms_left,
                r.games_live_sum,
                r.takeovers,
                run.server_errors,
                if run.first_server_errors.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", run.first_server_errors.join(" / "))
                }
            ));
            for failure in &run.checked.failures {
                out.push_str(&format!("{}: check failed: {failure}\n", run.lobbies));
            }
        }
        out
    }
}
