//! Writes a simulated year into Redis: the sample rooms copied (`RESTORE`) under
//! fresh codes to the counts the mix gives, with the TTLs the policy gives; the
//! indexes that name them; and the wallets, records and leaderboards of the
//! simulated accounts, written with pipelined commands in the server's own formats
//! (`wallet/redis.rs`, `records.rs`, `leaderboard.rs`, `idempotency.rs`,
//! `store/redis.rs`).

use std::collections::{BTreeMap, HashMap, HashSet};

use redis::aio::MultiplexedConnection;
use serde::Serialize;

use super::DAY_MS;
use super::accounts::{Decided, Year};
use super::activity::{Rng, account_id, account_name, code_of, id_chars};
use super::ledger::month_name;
use super::mix::{MixArgs, RoomCounts, RoomKind};
use super::samples::Sample;
use crate::resume::fresh_codes;

/// Commands per pipeline, and fields per `HSET`/`SADD`/`ZADD`.
const PIPELINE: usize = 1_000;
const FIELDS: usize = 500;
/// How far ahead an unloaded correspondence lobby is due (its expiry, a week
/// after its last move, at the latest).
const DORMANT_AHEAD_MS: u64 = 7 * DAY_MS;

fn redis_error(e: redis::RedisError) -> String {
    format!("Redis: {e}")
}

/// Commands queued and sent in pipelines.
struct Batch {
    conn: MultiplexedConnection,
    pipe: redis::Pipeline,
    queued: usize,
    sent: u64,
}

impl Batch {
    fn new(conn: MultiplexedConnection) -> Batch {
        Batch {
            conn,
            pipe: redis::pipe(),
            queued: 0,
            sent: 0,
        }
    }

    async fn add(&mut self, cmd: redis::Cmd) -> Result<(), String> {
        self.pipe.add_command(cmd).ignore();
        self.queued += 1;
        if self.queued >= PIPELINE {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), String> {
        if self.queued == 0 {
            return Ok(());
        }
        self.pipe
            .query_async::<()>(&mut self.conn)
            .await
            .map_err(redis_error)?;
        self.sent += self.queued as u64;
        self.pipe = redis::pipe();
        self.queued = 0;
        Ok(())
    }

    /// `COMMAND key item…` over every item, `FIELDS` items a command (an
    /// item may be a pair, written as two arguments).
    async fn chunked<A: redis::ToRedisArgs>(
        &mut self,
        command: &str,
        key: &str,
        items: impl IntoIterator<Item = A>,
    ) -> Result<(), String> {
        let mut cmd = redis::cmd(command);
        cmd.arg(key);
        let mut n = 0;
        for item in items {
            cmd.arg(item);
            n += 1;
            if n == FIELDS {
                self.add(std::mem::replace(&mut cmd, redis::cmd(command)))
                    .await?;
                cmd.arg(key);
                n = 0;
            }
        }
        if n > 0 {
            self.add(cmd).await?;
        }
        Ok(())
    }

    /// `HSET key` of every (field, value).
    async fn hset<F: redis::ToRedisArgs, V: redis::ToRedisArgs>(
        &mut self,
        key: &str,
        pairs: impl IntoIterator<Item = (F, V)>,
    ) -> Result<(), String> {
        self.chunked("HSET", key, pairs).await
    }

    /// `SADD key` of every member.
    async fn sadd(
        &mut self,
        key: &str,
        members: impl IntoIterator<Item = String>,
    ) -> Result<(), String> {
        self.chunked("SADD", key, members).await
    }

    /// `ZADD key` of every (score, member).
    async fn zadd(
        &mut self,
        key: &str,
        members: impl IntoIterator<Item = (u64, String)>,
    ) -> Result<(), String> {
        self.chunked("ZADD", key, members).await
    }

    /// An idempotency family: `done`, `done:at` (key → decision time) and
    /// `done:scan` (the backfill, finished long ago).
    async fn done(&mut self, prefix: &str, keys: &[Decided]) -> Result<(), String> {
        let done = format!("{prefix}:done");
        self.sadd(&done, keys.iter().map(|(k, _)| k.clone()))
            .await?;
        self.zadd(
            &format!("{done}:at"),
            keys.iter().map(|(k, at)| (*at, k.clone())),
        )
        .await?;
        let mut cmd = redis::cmd("SET");
        cmd.arg(format!("{done}:scan")).arg("complete");
        self.add(cmd).await
    }
}

/// What was written.
#[derive(Debug, Clone, Serialize)]
pub struct Filled {
    /// Rooms written, per kind.
    pub rooms: BTreeMap<RoomKind, u64>,
    /// Commands sent (a `HSET` of 500 fields counts once).
    pub commands: u64,
    pub seconds: f64,
    #[serde(skip)]
    pub kinds: HashMap<String, RoomKind>,
}

/// Writes the year into the Redis `conn` is connected to (which must be empty).
pub async fn fill(
    conn: MultiplexedConnection,
    mix: &MixArgs,
    year: &Year,
    samples: &[Sample],
    counts: &RoomCounts,
) -> Result<Filled, String> {
    let started = std::time::Instant::now();
    let mut batch = Batch::new(conn);
    let mut rng = Rng::new(mix.seed ^ 0x6669_6c6c);
    let rooms = copy_rooms(&mut batch, mix, year, samples, counts, &mut rng).await?;
    eprintln!(
        "year: {} rooms copied ({:.0} s)",
        rooms.by_kind.values().map(Vec::len).sum::<usize>(),
        started.elapsed().as_secs_f64()
    );
    indexes(&mut batch, mix, year, &rooms, &mut rng).await?;
    wallets(&mut batch, mix, year, &rooms, &mut rng).await?;
    eprintln!(
        "year: wallets written ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    records(&mut batch, mix, year).await?;
    boards(&mut batch, mix, year).await?;
    batch.flush().await?;
    eprintln!(
        "year: records and leaderboards written ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    let mut kinds = HashMap::new();
    for (kind, ids) in &rooms.by_kind {
        for id in ids {
            kinds.insert(id.clone(), *kind);
        }
    }
    for s in samples {
        kinds.insert(s.id.clone(), s.kind);
    }
    Ok(Filled {
        rooms: rooms
            .by_kind
            .iter()
            .map(|(k, v)| (*k, v.len() as u64))
            .collect(),
        commands: batch.sent,
        seconds: started.elapsed().as_secs_f64(),
        kinds,
    })
}

/// The copies' ids, by kind.
struct Rooms {
    by_kind: BTreeMap<RoomKind, Vec<String>>,
}

impl Rooms {
    fn of(&self, kind: RoomKind) -> &[String] {
        self.by_kind.get(&kind).map_or(&[], Vec::as_slice)
    }
}

async fn copy_rooms(
    batch: &mut Batch,
    mix: &MixArgs,
    year: &Year,
    samples: &[Sample],
    counts: &RoomCounts,
    rng: &mut Rng,
) -> Result<Rooms, String> {
    let wanted: Vec<(RoomKind, usize)> = RoomKind::ALL
        .iter()
        .map(|&kind| {
            let n = match kind {
                RoomKind::RankedAbandoned => year.stats.ranked_abandoned as usize,
                RoomKind::CorrespondenceOpen => year.correspondence_open.len(),
                _ => counts.of(kind).round() as usize,
            };
            (kind, n)
        })
        .collect();
    let total: usize = wanted.iter().map(|(_, n)| n).sum();
    let taken: HashSet<String> = samples
        .iter()
        .map(|s| s.id.trim_start_matches('S').to_owned())
        .collect();
    let mut codes = fresh_codes(total, &taken, mix.seed ^ 0x636f_7079).into_iter();
    let ttl_ms = mix.finished_ttl_secs * 1000;
    let mut by_kind = BTreeMap::new();
    for (kind, n) in wanted {
        let mine: Vec<&Sample> = samples.iter().filter(|s| s.kind == kind).collect();
        if mine.is_empty() && n > 0 {
            return Err(format!("no sample of {kind:?} to copy"));
        }
        let mut ids = Vec::with_capacity(n);
        for i in 0..n {
            let code = codes.next().ok_or("ran out of codes")?;
            let id = if kind.is_solo() {
                format!("S{code}")
            } else {
                code
            };
            // Closed rooms closed at any moment of the last TTL: what is left of
            // their TTL is spread evenly over it.
            let ttl = if kind.is_open() {
                0
            } else {
                1 + rng.below(ttl_ms)
            };
            for (suffix, payload) in &mine[i % mine.len()].keys {
                let mut cmd = redis::cmd("RESTORE");
                cmd.arg(format!("jg:{{{id}}}:{suffix}"))
                    .arg(ttl)
                    .arg(payload.as_slice());
                batch.add(cmd).await?;
            }
            ids.push(id);
        }
        by_kind.insert(kind, ids);
    }
    batch.flush().await?;
    Ok(Rooms { by_kind })
}

/// A guest's id (`g_` and 16 characters).
fn guest_id(rng: &mut Rng) -> String {
    format!("g_{}", id_chars(rng.next_u64(), 16))
}

async fn indexes(
    batch: &mut Batch,
    mix: &MixArgs,
    year: &Year,
    rooms: &Rooms,
    rng: &mut Rng,
) -> Result<(), String> {
    let sub = mix.account_sub_len;
    let open: Vec<String> = RoomKind::ALL
        .iter()
        .filter(|k| k.is_open())
        .flat_map(|&k| rooms.of(k).iter().cloned())
        .collect();
    batch.sadd("jg:lobbies", open).await?;
    let end = year.end_ms;
    let dormant: Vec<(u64, String)> = rooms
        .of(RoomKind::CorrespondenceOpen)
        .iter()
        .map(|code| (end + 1 + rng.below(DORMANT_AHEAD_MS), code.clone()))
        .collect();
    batch.zadd("jg:dormant", dormant).await?;

    // "My games": every seat holder of an open lobby.
    let mut mine: HashMap<String, Vec<String>> = HashMap::new();
    for (code, pair) in rooms
        .of(RoomKind::CorrespondenceOpen)
        .iter()
        .zip(&year.correspondence_open)
    {
        for &a in pair {
            mine.entry(account_id(a, sub))
                .or_default()
                .push(code.clone());
        }
    }
    let d = mix.daily();
    let guest_share = d.guest_free / (d.guest_free + d.account_free + d.staked);
    let recent = &year.last_day_accounts;
    let someone = |guest: bool, rng: &mut Rng| {
        if guest || recent.is_empty() {
            guest_id(rng)
        } else {
            account_id(recent[rng.below(recent.len() as u64) as usize], sub)
        }
    };
    for code in rooms.of(RoomKind::LiveInPlay) {
        let guest = rng.chance(guest_share);
        for _ in 0..2 {
            let id = someone(guest, rng);
            mine.entry(id).or_default().push(code.clone());
        }
    }
    for (id, codes) in mine {
        batch.sadd(&format!("jg:mine:{{{id}}}"), codes).await?;
    }

    // Solo notes: the open games' (no TTL), then those of games closed within
    // the finished TTL (the game's TTL).
    let ttl_ms = mix.finished_ttl_secs * 1000;
    let note = |id: String, game: &str, ttl: u64| {
        let mut cmd = redis::cmd("SET");
        cmd.arg(format!("jg:solo:{{{id}}}")).arg(game);
        if ttl > 0 {
            cmd.arg("PX").arg(ttl);
        }
        cmd
    };
    let abandoned = year
        .accounts
        .iter()
        .enumerate()
        .filter(|(_, a)| a.open_ranked)
        .map(|(i, _)| i as u32);
    let noted: Vec<(u32, &String)> = abandoned.zip(rooms.of(RoomKind::RankedAbandoned)).collect();
    for &(a, game) in &noted {
        batch.add(note(account_id(a, sub), game, 0)).await?;
    }
    let guest_practice = d.practice_guest / (d.practice_guest + d.practice_account + d.ranked);
    for game in rooms.of(RoomKind::SoloInPlay) {
        let id = someone(rng.chance(guest_practice), rng);
        batch.add(note(id, game, 0)).await?;
    }
    let finished: Vec<&String> = rooms
        .of(RoomKind::PracticeFinished)
        .iter()
        .chain(rooms.of(RoomKind::RankedFinished))
        .collect();
    if !finished.is_empty() {
        for (i, a) in year.accounts.iter().enumerate() {
            if a.open_ranked || a.last_solo + ttl_ms <= end || a.last_solo == 0 {
                continue;
            }
            let game = finished[rng.below(finished.len() as u64) as usize];
            let ttl = (a.last_solo + ttl_ms - end).min(ttl_ms);
            batch
                .add(note(account_id(i as u32, sub), game, ttl))
                .await?;
        }
        let guests = (d.practice_guest * mix.ttl_days() / mix.solo_games_per_guest).round() as u64;
        for _ in 0..guests {
            let game = finished[rng.below(finished.len() as u64) as usize];
            let id = guest_id(rng);
            batch.add(note(id, game, 1 + rng.below(ttl_ms))).await?;
        }
    }

    // Ownership: instances, their heartbeats (renewed every second; written
    // with an hour's TTL so they are still there to be measured), and the
    // open rooms each has loaded.
    let instances: Vec<String> = (0..mix.instances)
        .map(|i| id_chars(0x696e_7374_0000 + u64::from(i), 12))
        .collect();
    batch.sadd("jg:instances", instances.clone()).await?;
    for id in &instances {
        let mut cmd = redis::cmd("SET");
        cmd.arg(format!("jg:alive:{{{id}}}"))
            .arg(id_chars(rng.next_u64(), 16))
            .arg("PX")
            .arg(3_600_000);
        batch.add(cmd).await?;
    }
    let loaded: Vec<&String> = [
        RoomKind::LiveInPlay,
        RoomKind::SoloInPlay,
        RoomKind::RankedAbandoned,
    ]
    .iter()
    .flat_map(|&k| rooms.of(k))
    .collect();
    for (i, id) in instances.iter().enumerate() {
        let owned = loaded
            .iter()
            .skip(i)
            .step_by(instances.len())
            .map(|c| (*c).clone());
        batch.sadd(&format!("jg:owned:{{{id}}}"), owned).await?;
    }
    Ok(())
}

const W: &str = "jgw:{wallets}";

async fn wallets(
    batch: &mut Batch,
    mix: &MixArgs,
    year: &Year,
    rooms: &Rooms,
    rng: &mut Rng,
) -> Result<(), String> {
    let sub = mix.account_sub_len;
    let with_wallet = || {
        year.accounts
            .iter()
            .enumerate()
            .filter_map(|(i, a)| a.wallet.as_ref().map(|w| (i as u32, w)))
    };
    batch
        .hset(
            &format!("{W}:bal"),
            with_wallet().map(|(i, w)| (account_id(i, sub), w.balance)),
        )
        .await?;
    for (i, w) in with_wallet() {
        let id = account_id(i, sub);
        let mut push = redis::cmd("RPUSH");
        push.arg(format!("{W}:ledger:{id}"));
        for e in &w.ledger {
            // The fields the script's `cjson.encode` writes (in its own order;
            // the bytes are as many).
            let json = serde_json::json!({
                "key": e.key(), "kind": e.kind.name(), "amount": e.amount, "at": e.at,
            });
            push.arg(json.to_string());
        }
        batch.add(push).await?;
        if !w.archive.is_empty() {
            let fields = w.archive.iter().flat_map(|a| {
                let period = format!("{}:{}", month_name(a.month), a.kind.name());
                [
                    (format!("{period}:count"), a.count as i64),
                    (format!("{period}:amount"), a.amount),
                ]
            });
            batch.hset(&format!("{W}:archive:{id}"), fields).await?;
        }
    }
    batch.done(W, &year.wallet_done).await?;
    // The daily cap's tallies of the last two days (each kept two days after
    // its last settlement).
    for (day, won) in &year.won_days {
        let key = format!("{W}:won:{day}");
        batch
            .hset(&key, won.iter().map(|(a, v)| (account_id(*a, sub), *v)))
            .await?;
        let left = ((day + 3) * DAY_MS)
            .saturating_sub(year.end_ms)
            .min(2 * DAY_MS);
        let mut cmd = redis::cmd("PEXPIRE");
        cmd.arg(&key).arg(left.max(1));
        batch.add(cmd).await?;
    }
    // Escrow held by the staked series in play at the end.
    let d = mix.daily();
    let staked_share = d.staked / (d.guest_free + d.account_free + d.staked);
    let in_play = (rooms.of(RoomKind::LiveInPlay).len() as f64 * staked_share).round() as u64;
    let recent = &year.last_day_accounts;
    let mut held = 0i64;
    if !recent.is_empty() {
        for _ in 0..in_play {
            let a = recent[rng.below(recent.len() as u64) as usize];
            let b = recent[rng.below(recent.len() as u64) as usize];
            let series = format!(
                "{}:1:{:08x}",
                code_of(rng.next_u64()),
                rng.next_u64() as u32 | 1
            );
            let stake = i64::from(mix.stake);
            batch
                .hset(
                    &format!("{W}:escrow:{series}"),
                    [(account_id(a, sub), stake), (account_id(b, sub), stake)],
                )
                .await?;
            held += 2 * stake;
        }
    }
    batch
        .hset(
            &format!("{W}:totals"),
            [("granted", year.granted), ("escrow", held)],
        )
        .await
}

const R: &str = "jgr:{records}";

async fn records(batch: &mut Batch, mix: &MixArgs, year: &Year) -> Result<(), String> {
    let sub = mix.account_sub_len;
    let ids: Vec<String> = (0..year.accounts.len() as u32)
        .map(|i| account_id(i, sub))
        .collect();
    batch.done(R, &year.records_done).await?;
    batch
        .hset(
            &format!("{R}:won"),
            year.accounts
                .iter()
                .enumerate()
                .filter(|(_, a)| a.won > 0)
                .map(|(i, a)| (ids[i].as_str(), a.won)),
        )
        .await?;
    let n = year.rule_sets.len();
    for (r, rule) in year.rule_sets.iter().enumerate() {
        let of_rule = || {
            year.rules
                .iter()
                .enumerate()
                .filter(move |(i, _)| i % n == r)
                .map(|(i, rec)| (ids[i / n].as_str(), rec))
        };
        batch
            .hset(
                &format!("{R}:streak:{rule}"),
                of_rule()
                    .filter(|(_, rec)| rec.played)
                    .map(|(id, rec)| (id, rec.streak)),
            )
            .await?;
        batch
            .hset(
                &format!("{R}:best:{rule}"),
                of_rule()
                    .filter(|(_, rec)| rec.best > 0)
                    .map(|(id, rec)| (id, rec.best)),
            )
            .await?;
    }
    batch
        .hset(
            &format!("{R}:h2h"),
            year.h2h
                .iter()
                .map(|((w, l), c)| (format!("{}|{}", ids[*w as usize], ids[*l as usize]), *c)),
        )
        .await?;
    batch
        .hset(
            &format!("{R}:draws"),
            year.draws.iter().map(|((a, b), c)| {
                let (x, y) = (&ids[*a as usize], &ids[*b as usize]);
                let (x, y) = if x <= y { (x, y) } else { (y, x) };
                (format!("{x}|{y}"), *c)
            }),
        )
        .await
}

/// A player's place key (`PlaceKey::new` in the server's `leaderboard.rs`).
fn place_key(account: &str, name: &str, points: u32, wins: u32, games: u32) -> String {
    format!(
        "{:010}{:010}{:010}{name}\0{account}",
        u32::MAX - points,
        u32::MAX - wins,
        games
    )
}

async fn boards(batch: &mut Batch, mix: &MixArgs, year: &Year) -> Result<(), String> {
    let sub = mix.account_sub_len;
    batch.done("jgl:{boards}", &year.boards_done).await?;
    let n = year.rule_sets.len();
    for (r, rule) in year.rule_sets.iter().enumerate() {
        let board = format!("jgl:{{boards}}:{rule}");
        let players: Vec<(String, String, [u32; 3])> = year
            .rules
            .iter()
            .enumerate()
            .filter(|(i, rec)| i % n == r && rec.ranked.iter().any(|&g| g > 0))
            .map(|(i, rec)| {
                let a = (i / n) as u32;
                (account_id(a, sub), account_name(a), rec.ranked)
            })
            .collect();
        if players.is_empty() {
            continue;
        }
        batch
            .hset(
                &board,
                players.iter().map(|(id, name, [w, d, l])| {
                    // What the script's `cjson.encode` of the standing holds.
                    let json = serde_json::json!({
                        "name": name, "points": 3 * w + d, "wins": w, "draws": d,
                        "losses": l, "games": w + d + l,
                    });
                    (id.as_str(), json.to_string())
                }),
            )
            .await?;
        batch
            .zadd(
                &format!("{board}:order"),
                players.iter().map(|(id, name, [w, d, l])| {
                    (0, place_key(id, name, 3 * w + d, *w, w + d + l))
                }),
            )
            .await?;
        let mut cmd = redis::cmd("SET");
        cmd.arg(format!("{board}:ordered")).arg(1);
        batch.add(cmd).await?;
    }
    Ok(())
}
