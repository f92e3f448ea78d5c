//! `year`: Redis memory after a simulated year of operation (issue 19), generated
//! straight into a fresh Redis rather than played, then measured.
//!
//! **How.** A fresh `redis-server` and a `jumpgate serve` on its database 1 (with
//! short idle, unload and break times, a fast Executive and an account issuer whose
//! key the tool holds). WebSocket clients play `--samples` rooms of each kind the
//! year leaves behind through it, as players do, and leave them as the year does:
//! free live lobbies of two guests and of two accounts and staked ones, played for
//! `--series-per-lobby` series and left (the server closes them: finished TTL);
//! correspondence lobbies played to the end and left (closed), or `--plies-in-play`
//! plies in and unloaded (parked, in `jg:dormant`); practice and ranked games
//! against the computer, finished; a ranked game abandoned (kept open); a live lobby
//! and a solo game still in play. Their keys are read back with `DUMP` and the
//! server is stopped. The accounts' year is then simulated in memory
//! ([`accounts`]) and everything is written into database 0 ([`fill`]): each sample
//! room copied with `RESTORE` under fresh codes (every key of a copy under its own
//! `{CODE}`) to the count the mix gives, closed ones with a TTL spread evenly over
//! the finished TTL; the indexes naming them (`jg:lobbies`, `jg:dormant`,
//! `jg:mine:{ID}`, `jg:solo:{ID}`, instances); and the wallets (`bal`, `totals`,
//! ledgers of the last `--ledger-keep` entries, monthly archives), records (`won`,
//! `streak:RULES`, `best:RULES`, `h2h`, `draws`) and leaderboards (standings and
//! order per rule set) of every simulated account, with the idempotency keys
//! (`done`, `done:at`, `done:scan`) of the last `--idempotency-window-secs`, in
//! pipelined commands in the server's formats. Every non-room family is checked
//! against what the server wrote for the samples ([`measure::check_layout`]: type,
//! field names and separators); a difference fails the run. Database 1 is then
//! flushed and the figures are read: `INFO memory` and every key's
//! `MEMORY USAGE … SAMPLES 0`, summed by family ([`measure`]).
//!
//! **The default mix** (every figure is an option; see [`mix::MixArgs`]): 100,000
//! games a day for 365 days: 30% in free live lobbies of two guests, 22% in free
//! live lobbies of two accounts, 10% in staked live lobbies (50 points a player),
//! 3% in correspondence lobbies (accounts; one game, open 10 days on average, so
//! about 30,000 open at any time), 25% practice games against the computer (30% of
//! them by accounts) and 10% ranked games against the Executive (5% of them
//! abandoned unfinished; won 10%, drawn 10%). Live lobbies play 2 series (one
//! rematch) of best-of-1 and stay open 20 minutes; solo games take 10 minutes.
//! 200,000 distinct accounts play in the year and 20,000 on an average day; account
//! i plays on c / (i + 1) days (clamped to 1..365), so a few play daily and most a
//! handful of days. An account's next lobby is against someone it played before
//! half the time, else against anyone playing that day; 5% of series between
//! accounts are drawn. Each account has a favourite rule set among the eight (weight
//! 1 / rank) and plays 20% of its games in another. Account ids are `a_` and a
//! 28-character `sub`; names are `Player N`. Sample rooms are American checkers.
//!
//! **What the policy leaves** (ARCHITECTURE.md, "Retention"): closed rooms for the
//! finished TTL (a day: one day's closings), open rooms (in play, unloaded
//! correspondence, abandoned ranked games: at most one per account), indexes of open
//! rooms, solo notes of games closed within the TTL, idempotency keys for 30 days;
//! and, forever, one balance, one ledger (at most 100 entries) and one archive (at
//! most 8 fields per month of activity) per account that ever staked, records per
//! account, per account and rule set and per pair of opponents, and a standing per
//! account and rule set ranked.
//!
//! `--scale` generates a fraction of the year (games, accounts and daily accounts
//! alike) and multiplies the figures back; the default is the whole year.

mod accounts;
mod activity;
mod fill;
mod ledger;
mod measure;
mod mix;
mod samples;

/// A day in milliseconds.
const DAY_MS: u64 = 86_400_000;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;
use tokio::time::Instant;

use crate::bench::start_jumpgate_logging;
use crate::cluster::RedisServer;
use accounts::YearStats;
use measure::{FamilyFigure, Kept, Measured};
use mix::{GamesPerSeries, RoomCounts};
pub use mix::{MixArgs, RoomKind};
use samples::SampleSummary;

/// Options of `jumpgate-loadtest year`.
#[derive(Debug, Clone, clap::Args)]
pub struct YearArgs {
    /// The `jumpgate` server binary that plays the sample rooms.
    #[arg(
        long,
        env = "JUMPGATE_LOADTEST_JUMPGATE",
        default_value = "target/release/jumpgate"
    )]
    pub jumpgate: PathBuf,
    /// The `redis-server` binary.
    #[arg(long, default_value = "redis-server")]
    pub redis_server: PathBuf,
    /// Sample rooms played through the server for each kind of room.
    #[arg(long, default_value_t = 3)]
    pub samples: usize,
    /// Write the report as JSON here.
    #[arg(long)]
    pub out_json: Option<PathBuf>,
    #[command(flatten)]
    pub mix: MixArgs,
}

/// What grows without bound, per year of the mix.
#[derive(Debug, Clone, Serialize)]
pub struct Growth {
    /// Bytes of the families kept forever after this year.
    pub forever_bytes: f64,
    pub wallets: f64,
    pub ledger_entries_kept: f64,
    pub archive_fields: f64,
    pub won_fields: f64,
    pub streak_fields: f64,
    pub best_fields: f64,
    pub h2h_fields: f64,
    pub draws_fields: f64,
    pub board_players: f64,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct YearReport {
    pub mix: MixArgs,
    pub samples: Vec<SampleSummary>,
    pub games_per_series: GamesPerSeries,
    pub room_counts: RoomCounts,
    pub rooms_written: BTreeMap<RoomKind, u64>,
    pub stats: YearStats,
    pub growth: Growth,
    pub measured: Measured,
    /// `used_memory` of the fresh Redis before anything was written.
    pub empty_used_memory: u64,
    pub layout_notes: Vec<String>,
    pub fill_commands: u64,
    pub seconds_samples: f64,
    pub seconds_simulate: f64,
    pub seconds_fill: f64,
    pub seconds_measure: f64,
    pub seconds_total: f64,
}

const GB: f64 = 1e9;
const MB: f64 = 1e6;

impl YearReport {
    /// Measured figures times this give the whole year.
    fn factor(&self) -> f64 {
        1.0 / self.mix.scale
    }

    fn group_bytes(&self, pick: impl Fn(&FamilyFigure) -> bool) -> f64 {
        self.measured
            .families
            .iter()
            .filter(|f| pick(f))
            .map(|f| f.bytes as f64)
            .sum::<f64>()
            * self.factor()
    }

    pub fn table(&self) -> String {
        let m = &self.measured;
        let x = self.factor();
        let scale = if self.mix.scale < 1.0 {
            format!(
                "; generated at {:.1}% and multiplied by {x:.1}",
                self.mix.scale * 100.0
            )
        } else {
            "; full scale".to_owned()
        };
        // The empty Redis's own memory is there once, whatever the scale.
        let whole = |bytes: u64| {
            (bytes.saturating_sub(self.empty_used_memory) as f64 * x
                + self.empty_used_memory as f64)
                / GB
        };
        let rss = if self.mix.scale < 1.0 {
            "RSS not extrapolated".to_owned()
        } else {
            format!("RSS {:.2} GB", m.used_memory_rss as f64 / GB)
        };
        let mut out = format!(
            "Redis after {} simulated days at {:.0} games a day{scale}\n\
             used_memory {:.2} GB, used_memory_dataset {:.2} GB ({:.0} keys; an empty Redis: \
             {:.1} MB; {rss})\n\n\
             | group | family | kept | keys | MB | bytes per key |\n\
             |---|---|---|---:|---:|---:|\n",
            self.mix.days,
            self.mix.games_per_day,
            whole(m.used_memory),
            m.used_memory_dataset as f64 * x / GB,
            (m.keys as f64 * x).round(),
            self.empty_used_memory as f64 / MB,
        );
        let mut families = m.families.clone();
        families.sort_by(|a, b| a.group.cmp(&b.group).then(b.bytes.cmp(&a.bytes)));
        for f in &families {
            out.push_str(&format!(
                "| {} | {} | {} | {:.0} | {:.1} | {:.0} |\n",
                f.group,
                f.family,
                match f.kept {
                    Kept::Bounded => "bounded",
                    Kept::Forever => "forever",
                },
                // A family of a few keys (one per rule set or instance) has as
                // many at any scale.
                if f.keys <= 16 {
                    f.keys as f64
                } else {
                    f.keys as f64 * x
                },
                f.bytes as f64 * x / MB,
                f.bytes as f64 / f.keys.max(1) as f64,
            ));
        }
        let bounded = self.group_bytes(|f| f.kept == Kept::Bounded);
        let forever = self.group_bytes(|f| f.kept == Kept::Forever);
        out.push_str(&format!(
            "\nsum of MEMORY USAGE {:.2} GB: bounded by the policy {:.2} GB (rooms {:.2}, \
             idempotency windows {:.2}, indexes {:.2}, other {:.2}); kept forever {:.2} GB \
             (wallets {:.2}, records {:.2}, leaderboards {:.2})\n",
            m.family_bytes as f64 * x / GB,
            bounded / GB,
            self.group_bytes(|f| f.group == "rooms") / GB,
            self.group_bytes(|f| f.group == "idempotency windows") / GB,
            self.group_bytes(|f| f.group == "indexes") / GB,
            self.group_bytes(|f| f.kept == Kept::Bounded
                && !["rooms", "idempotency windows", "indexes"].contains(&f.group.as_str()))
                / GB,
            forever / GB,
            self.group_bytes(|f| f.kept == Kept::Forever && f.group == "wallets") / GB,
            self.group_bytes(|f| f.group == "records") / GB,
            self.group_bytes(|f| f.group == "leaderboards") / GB,
        ));
        out
    }

    pub fn details(&self) -> String {
        let s = &self.stats;
        let g = &self.growth;
        let x = self.factor();
        let mut out = String::from("rooms (count at the end, bytes per room):\n");
        for (kind, n) in &self.rooms_written {
            let bytes = self
                .measured
                .families
                .iter()
                .find(|f| f.family == kind.label())
                .map_or(0, |f| f.bytes);
            out.push_str(&format!(
                "  {}: {:.0} rooms, {:.0} bytes each\n",
                kind.label(),
                *n as f64 * x,
                bytes as f64 / (*n).max(1) as f64
            ));
        }
        out.push_str("samples played through the server (mean per sample):\n");
        for sample in &self.samples {
            out.push_str(&format!(
                "  {}: {} samples, {:.1} series, {:.1} games, {:.0} plies in the last, {:.0} \
                 DUMP bytes in keys {}\n",
                sample.kind.label(),
                sample.samples,
                sample.series,
                sample.games,
                sample.plies,
                sample.dump_bytes,
                sample.keys.join(", ")
            ));
        }
        out.push_str(&format!(
            "accounts: {:.0} played, {:.0} on an average day; {:.0} lobbies between \
             accounts, {:.0} series recorded ({:.0} staked), {:.0} ranked games counted, \
             {:.0} abandoned ranked games still open; {:.0} distinct opponent pairs\n\
             staked lobbies: {:.0} reseated because a player could not cover the stake, {:.0} \
             found nobody, {:.0} series not played for a short balance\n",
            s.accounts_played as f64 * x,
            s.mean_daily_accounts * x,
            s.lobbies as f64 * x,
            s.series_recorded as f64 * x,
            s.staked_series as f64 * x,
            s.ranked_games as f64 * x,
            s.ranked_abandoned as f64 * x,
            s.distinct_pairs as f64 * x,
            s.staked_reseated as f64 * x,
            s.staked_lobbies_skipped as f64 * x,
            s.staked_series_short as f64 * x,
        ));
        let largest = |name: &str| {
            self.measured
                .families
                .iter()
                .find(|f| f.family.starts_with(name))
                .map_or(0, |f| f.largest)
        };
        out.push_str(&format!(
            "largest per-account keys: a ledger {} bytes, an archive {} bytes\n",
            largest("jgw ledger"),
            largest("jgw archive"),
        ));
        out.push_str(&format!(
            "kept forever after these days: {:.2} GB — {:.0} wallets ({:.0} ledger entries \
             kept, {:.0} archive fields), {:.0} won, {:.0} streak and {:.0} best fields, {:.0} \
             h2h and {:.0} draws pairs, {:.0} leaderboard players (account × rule set)\n",
            g.forever_bytes / GB,
            g.wallets,
            g.ledger_entries_kept,
            g.archive_fields,
            g.won_fields,
            g.streak_fields,
            g.best_fields,
            g.h2h_fields,
            g.draws_fields,
            g.board_players,
        ));
        out.push_str(&format!(
            "time: samples {:.0} s, simulation {:.0} s, writing {:.0} s ({} commands), \
             measuring {:.0} s; {:.0} s in all\n",
            self.seconds_samples,
            self.seconds_simulate,
            self.seconds_fill,
            self.fill_commands,
            self.seconds_measure,
            self.seconds_total,
        ));
        for note in &self.layout_notes {
            out.push_str(&format!("layout note: {note}\n"));
        }
        out
    }
}

/// The server that plays the samples, on database 1 of `redis`.
async fn sample_server(args: &YearArgs, redis_url: &str) -> Result<crate::procs::Spawned, String> {
    let mix = &args.mix;
    let extra: Vec<String> = [
        "--redis-url",
        redis_url,
        "--idle-lobby-secs",
        "1",
        "--correspondence-unload-secs",
        "1",
        "--break-ms",
        "300",
        "--executive-ms",
        "20",
        "--bot-threads",
        "1",
        "--jwt-issuer",
        samples::ISSUER,
        "--jwt-hs256",
        &format!("{}={}", samples::KID, samples::SECRET),
        // A short ledger, so the samples' staked series roll entries into the
        // archive and its layout is checked too.
        "--ledger-keep",
        "2",
        "--finished-ttl-secs",
        &mix.finished_ttl_secs.to_string(),
        "--idempotency-window-secs",
        &mix.idempotency_window_secs.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    start_jumpgate_logging("jumpgate (samples)", &args.jumpgate, None, &extra, "warn").await
}

async fn connect(url: &str) -> Result<redis::aio::MultiplexedConnection, String> {
    let client = redis::Client::open(url).map_err(|e| format!("Redis: {e}"))?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(std::time::Duration::from_secs(5)))
        .set_response_timeout(Some(std::time::Duration::from_secs(300)));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(|e| format!("Redis: {e}"))
}

async fn used_memory(
    conn: &mut redis::aio::MultiplexedConnection,
) -> Result<(u64, u64, u64, u64), String> {
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(conn)
        .await
        .map_err(|e| format!("Redis: {e}"))?;
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    Ok((
        field("used_memory"),
        field("used_memory_dataset"),
        field("used_memory_overhead"),
        field("used_memory_rss"),
    ))
}

/// The whole `year` command.
pub async fn year(args: &YearArgs) -> Result<YearReport, String> {
    let mix = args.mix.clone();
    mix.check()?;
    if !(1..=20).contains(&args.samples) {
        return Err("--samples must be 1 to 20".into());
    }
    if !args.jumpgate.is_file() {
        return Err(format!("{}: no such binary", args.jumpgate.display()));
    }
    let started = Instant::now();
    let redis = RedisServer::start(&args.redis_server, false, None).await?;
    let filled_url = redis.url.clone();
    let sample_url = filled_url
        .strip_suffix("/0")
        .map(|base| format!("{base}/1"))
        .ok_or("unexpected Redis URL")?;
    let mut db0 = connect(&filled_url).await?;
    let mut db1 = connect(&sample_url).await?;
    let empty_used_memory = used_memory(&mut db0).await?.0;

    eprintln!(
        "year: playing {} samples of each kind of room",
        args.samples
    );
    let server = sample_server(args, &sample_url).await?;
    let played = samples::play_samples(&server.ws_url(), &sample_url, &mix, args.samples).await;
    let transcript = server.transcript();
    server.stop().await;
    let samples = played?;
    if transcript.errors > 0 {
        return Err(format!(
            "the sample server logged {} errors: {}",
            transcript.errors,
            transcript.first_notable.join(" / ")
        ));
    }
    let seconds_samples = started.elapsed().as_secs_f64();
    let per_series = samples::games_per_series(&samples);

    eprintln!("year: simulating {} days of accounts", mix.days);
    let simulated = Instant::now();
    let end_ms = now_ms();
    let sim_mix = mix.clone();
    let gps = [
        per_series.account,
        per_series.staked,
        per_series.correspondence,
    ];
    let year = tokio::task::spawn_blocking(move || accounts::simulate(&sim_mix, gps, end_ms))
        .await
        .map_err(|e| format!("simulation: {e}"))?;
    let seconds_simulate = simulated.elapsed().as_secs_f64();

    let counts = mix.room_counts(&per_series);
    let filled = fill::fill(db0.clone(), &mix, &year, &samples, &counts).await?;

    eprintln!("year: measuring");
    let measuring = Instant::now();
    let mut measured = measure::measure(&mut db0, &filled.kinds).await?;
    let sample_kinds = samples.iter().map(|s| (s.id.clone(), s.kind)).collect();
    let layout_notes =
        measure::check_layout(&mut db1, &mut db0, &sample_kinds, &measured.examples).await?;
    let () = redis::cmd("FLUSHDB")
        .query_async(&mut db1)
        .await
        .map_err(|e| format!("Redis: {e}"))?;
    let (used, dataset, overhead, rss) = used_memory(&mut db0).await?;
    measured.used_memory = used;
    measured.used_memory_dataset = dataset;
    measured.used_memory_overhead = overhead;
    measured.used_memory_rss = rss;
    let seconds_measure = measuring.elapsed().as_secs_f64();
    redis.stop().await;

    let x = 1.0 / mix.scale;
    let forever_bytes = measured
        .families
        .iter()
        .filter(|f| f.kept == Kept::Forever)
        .map(|f| f.bytes as f64)
        .sum::<f64>()
        * x;
    let wallets: Vec<&ledger::Wallet> = year
        .accounts
        .iter()
        .filter_map(|a| a.wallet.as_deref())
        .collect();
    let count = |n: usize| n as f64 * x;
    let growth = Growth {
        forever_bytes,
        wallets: count(wallets.len()),
        ledger_entries_kept: count(wallets.iter().map(|w| w.ledger.len()).sum()),
        archive_fields: count(wallets.iter().map(|w| 2 * w.archive.len()).sum()),
        won_fields: count(year.accounts.iter().filter(|a| a.won > 0).count()),
        streak_fields: count(year.rules.iter().filter(|r| r.played).count()),
        best_fields: count(year.rules.iter().filter(|r| r.best > 0).count()),
        h2h_fields: count(year.h2h.len()),
        draws_fields: count(year.draws.len()),
        board_players: count(
            year.rules
                .iter()
                .filter(|r| r.ranked.iter().any(|&g| g > 0))
                .count(),
        ),
    };
    Ok(YearReport {
        samples: samples::summarise(&samples),
        games_per_series: per_series,
        room_counts: counts,
        rooms_written: filled.rooms.clone(),
        stats: year.stats.clone(),
        growth,
        measured,
        empty_used_memory,
        layout_notes,
        fill_commands: filled.commands,
        seconds_samples,
        seconds_simulate,
        seconds_fill: filled.seconds,
        seconds_measure,
        seconds_total: started.elapsed().as_secs_f64(),
        mix,
    })
}

/// This process's clock, Unix milliseconds.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
