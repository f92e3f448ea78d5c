//! Several Jumpgate instances on one Redis, for the benchmarks of fenced ownership:
//! `jumpgate serve` instances named as `deploy/haproxy.cfg` names its servers, started
//! by the shared harness (which also starts their Redis and HAProxy).
//!
//! [`RedisProbe`] reads what the benchmarks need from that Redis: who owns each room,
//! how many moves each room has stored, the command counters (`INFO commandstats`) and a
//! `MONITOR` sample sorted by what each command is for.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::StreamExt;
use jumpgate_harness::{AppendOnly, JumpgateProcess, RedisOptions, RedisServer};
use tokio::time::Instant;

use crate::bench::start_jumpgate_logging;

/// Starts a `redis-server` of our own (`program`), nothing saved, with an append-only
/// file fsynced every second (Redis's default) when `append_only`; pinned to `cpus`
/// when given.
pub async fn start_redis(
    program: &Path,
    append_only: bool,
    cpus: Option<&str>,
) -> Result<RedisServer, String> {
    RedisServer::start_with(&RedisOptions {
        program: program.to_owned(),
        append_only: if append_only {
            AppendOnly::EverySecond
        } else {
            AppendOnly::Off
        },
        cpus: cpus.map(str::to_owned),
    })
    .await
}

/// Refuses a Redis URL that is not on loopback.
pub fn require_loopback_redis(url: &str) -> Result<(), String> {
    let info = redis::IntoConnectionInfo::into_connection_info(url)
        .map_err(|e| format!("bad Redis URL {url}: {e}"))?;
    let host = match info.addr() {
        redis::ConnectionAddr::Tcp(host, _) => host.clone(),
        other => {
            return Err(format!(
                "{url}: only redis:// over TCP is supported ({other})"
            ));
        }
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if loopback {
        Ok(())
    } else {
        Err(format!(
            "refusing non-loopback Redis {url}: the load tester stays on loopback"
        ))
    }
}

/// One `jumpgate serve` of the cluster.
#[derive(Debug)]
pub struct Instance {
    /// Its `--instance-id`, which is also its server name in HAProxy.
    pub id: String,
    /// The process.
    pub process: JumpgateProcess,
}

impl Instance {
    /// `ws://ADDR/ws` of this instance itself.
    pub fn ws_url(&self) -> String {
        self.process.ws_url()
    }
}

/// How to start the instances.
#[derive(Debug, Clone)]
pub struct InstanceOptions {
    /// The `jumpgate` binary.
    pub program: PathBuf,
    /// How many.
    pub count: usize,
    /// `--redis-url`.
    pub redis_url: String,
    /// `--heartbeat-ttl-ms`.
    pub heartbeat_ttl_ms: u64,
    /// The servers' `RUST_LOG`.
    pub log: String,
}

/// Starts `jumpgate1`, `jumpgate2`… one after the other (the names HAProxy's
/// configuration gives its servers), each on its own free port.
pub async fn start_instances(options: &InstanceOptions) -> Result<Vec<Instance>, String> {
    let mut instances = Vec::with_capacity(options.count);
    for n in 1..=options.count {
        let id = format!("jumpgate{n}");
        let extra = [
            "--redis-url".to_owned(),
            options.redis_url.clone(),
            "--instance-id".to_owned(),
            id.clone(),
            "--heartbeat-ttl-ms".to_owned(),
            options.heartbeat_ttl_ms.to_string(),
        ];
        let process =
            start_jumpgate_logging(&id, &options.program, None, &extra, &options.log).await?;
        instances.push(Instance { id, process });
    }
    Ok(instances)
}

/// A room's ownership as stored: `jg:{CODE}:fence`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFence {
    /// The owning instance; empty once released.
    pub owner: String,
    /// Its epoch.
    pub epoch: u64,
    /// The stored version of the room.
    pub version: u64,
}

/// Reads from the benchmark's Redis.
#[derive(Clone)]
pub struct RedisProbe {
    client: redis::Client,
    conn: redis::aio::MultiplexedConnection,
}

impl std::fmt::Debug for RedisProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RedisProbe { .. }")
    }
}

fn redis_error(e: redis::RedisError) -> String {
    format!("Redis: {e}")
}

impl RedisProbe {
    /// Connects to `url`.
    pub async fn open(url: &str) -> Result<RedisProbe, String> {
        let client = redis::Client::open(url).map_err(redis_error)?;
        // The load tester's own runtime is busy during a failover, so an answer may
        // be read long after it came: more patience than the default half second.
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(5)))
            .set_response_timeout(Some(Duration::from_secs(10)));
        let conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(redis_error)?;
        Ok(RedisProbe { client, conn })
    }

    /// `PING`: one round trip.
    pub async fn ping(&mut self) -> Result<(), String> {
        redis::cmd("PING")
            .query_async::<String>(&mut self.conn)
            .await
            .map(|_| ())
            .map_err(redis_error)
    }

    /// How many keys the database holds.
    pub async fn db_size(&mut self) -> Result<u64, String> {
        redis::cmd("DBSIZE")
            .query_async(&mut self.conn)
            .await
            .map_err(redis_error)
    }

    /// How long instance `id`'s heartbeat key has left to live (`PTTL
    /// jg:alive:{ID}`); `None` if it has none.
    pub async fn heartbeat_left(&mut self, id: &str) -> Result<Option<Duration>, String> {
        let ms: i64 = redis::cmd("PTTL")
            .arg(jumpgate_store::keys::alive_key(id))
            .query_async(&mut self.conn)
            .await
            .map_err(redis_error)?;
        Ok(u64::try_from(ms).ok().map(Duration::from_millis))
    }

    /// The fence of each room, in order (`None` where there is none).
    pub async fn fences(&mut self, codes: &[String]) -> Result<Vec<Option<StoredFence>>, String> {
        let mut fences = Vec::with_capacity(codes.len());
        for chunk in codes.chunks(500) {
            let mut pipe = redis::pipe();
            for code in chunk {
                let [_, _, _, fence] = jumpgate_store::keys::room_keys(code);
                pipe.cmd("HMGET")
                    .arg(fence)
                    .arg("owner")
                    .arg("epoch")
                    .arg("version");
            }
            let rows: Vec<(Option<String>, Option<u64>, Option<u64>)> = pipe
                .query_async(&mut self.conn)
                .await
                .map_err(redis_error)?;
            fences.extend(rows.into_iter().map(|(owner, epoch, version)| {
                owner.map(|owner| StoredFence {
                    owner,
                    epoch: epoch.unwrap_or(0),
                    version: version.unwrap_or(0),
                })
            }));
        }
        Ok(fences)
    }

    /// How many moves each room's log holds (`XLEN jg:{CODE}:moves`), in order.
    pub async fn stored_moves(&mut self, codes: &[String]) -> Result<Vec<u64>, String> {
        let mut counts = Vec::with_capacity(codes.len());
        for chunk in codes.chunks(500) {
            let mut pipe = redis::pipe();
            for code in chunk {
                let [_, moves, _, _] = jumpgate_store::keys::room_keys(code);
                pipe.cmd("XLEN").arg(moves);
            }
            let rows: Vec<u64> = pipe
                .query_async(&mut self.conn)
                .await
                .map_err(redis_error)?;
            counts.extend(rows);
        }
        Ok(counts)
    }

    /// Calls so far of every command (`INFO commandstats`), by lower-case name.
    /// Commands run inside Lua scripts are counted under their own names too.
    pub async fn command_calls(&mut self) -> Result<BTreeMap<String, u64>, String> {
        let text: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut self.conn)
            .await
            .map_err(redis_error)?;
        Ok(parse_commandstats(&text))
    }

    /// Microseconds Redis has spent in every command so far (`INFO commandstats`),
    /// by lower-case name.
    pub async fn command_usec(&mut self) -> Result<BTreeMap<String, u64>, String> {
        let text: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut self.conn)
            .await
            .map_err(redis_error)?;
        Ok(commandstats_field(&text, "usec="))
    }

    /// How many members the sorted set `key` has (`ZCARD`).
    pub async fn zcard(&mut self, key: &str) -> Result<u64, String> {
        redis::cmd("ZCARD")
            .arg(key)
            .query_async(&mut self.conn)
            .await
            .map_err(redis_error)
    }

    /// Bytes Redis uses (`used_memory` in `INFO memory`).
    pub async fn used_memory(&mut self) -> Result<u64, String> {
        let text: String = redis::cmd("INFO")
            .arg("memory")
            .query_async(&mut self.conn)
            .await
            .map_err(redis_error)?;
        text.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| "no used_memory in INFO memory".to_owned())
    }

    /// Seconds of CPU Redis has used so far (`used_cpu_sys` plus
    /// `used_cpu_user` in `INFO cpu`).
    pub async fn cpu_seconds(&mut self) -> Result<f64, String> {
        let text: String = redis::cmd("INFO")
            .arg("cpu")
            .query_async(&mut self.conn)
            .await
            .map_err(redis_error)?;
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .ok_or_else(|| format!("no {name} in INFO cpu"))
        };
        Ok(field("used_cpu_sys:")? + field("used_cpu_user:")?)
    }

    /// Runs a pipeline whose replies are all ignored.
    pub async fn query(&mut self, pipe: &redis::Pipeline) -> Result<(), String> {
        pipe.query_async::<()>(&mut self.conn)
            .await
            .map_err(redis_error)
    }

    /// Every command Redis runs for `window`, by [`command_class`], from `MONITOR`.
    pub async fn monitor(&self, window: Duration) -> Result<BTreeMap<String, u64>, String> {
        let monitor = self.client.get_async_monitor().await.map_err(redis_error)?;
        let mut lines = monitor.into_on_message::<String>();
        let mut classes = BTreeMap::new();
        let end = Instant::now() + window;
        while let Ok(Some(line)) = tokio::time::timeout_at(end, lines.next()).await {
            if let Some(class) = command_class(&line) {
                *classes.entry(class).or_insert(0) += 1;
            }
        }
        Ok(classes)
    }
}

fn parse_commandstats(text: &str) -> BTreeMap<String, u64> {
    commandstats_field(text, "calls=")
}

/// One field (`calls=`, `usec=`…) of every command in `INFO commandstats`.
fn commandstats_field(text: &str, field: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let value = rest
                .split(',')
                .find_map(|f| f.strip_prefix(field))?
                .parse()
                .ok()?;
            Some((name.to_owned(), value))
        })
        .collect()
}

/// What a `MONITOR` line is for: the command, where it came from (`lua` for a
/// command inside a script), and its key with instance ids and room codes replaced by
/// `ID` and `CODE`; for `EVALSHA`, which script by its keys. `None` for lines that
/// are not commands, and for the probe's own `INFO`.
pub fn command_class(line: &str) -> Option<String> {
    let line = line.strip_prefix('+').unwrap_or(line);
    let (source, rest) = line.split_once(" [")?.1.split_once("] ")?;
    let from_lua = source.ends_with(" lua");
    let args = quoted_args(rest);
    let command = args.first()?.to_ascii_uppercase();
    if command == "INFO" {
        return None;
    }
    let key = match command.as_str() {
        "EVALSHA" | "EVAL" => {
            let keys: usize = args.get(2)?.parse().ok()?;
            let script = match (keys, args.get(3).map(|k| k.as_str())) {
                (2, Some(k)) if k.ends_with(":room") => "claim script",
                (1, Some(k)) if k.ends_with(":fence") => "release script",
                (4, _) => "room write script",
                _ => "other script",
            };
            script.to_owned()
        }
        _ => args.get(1).map_or(String::new(), |k| key_shape(k)),
    };
    let source = if from_lua { " (in a script)" } else { "" };
    Some(format!("{command} {key}{source}").trim_end().to_owned())
}

/// `jg:alive:{jumpgate1}` → `jg:alive:{ID}`, `jg:{ABCD2345}:fence` → `jg:{CODE}:fence`,
/// `jg:handover:jumpgate2` → `jg:handover:ID`.
fn key_shape(key: &str) -> String {
    if let Some(rest) = key.strip_prefix("jg:handover:") {
        return if rest.is_empty() {
            key.to_owned()
        } else {
            "jg:handover:ID".to_owned()
        };
    }
    match (key.find('{'), key.find('}')) {
        (Some(open), Some(close)) if open < close => {
            let inner = if key[..open].ends_with("alive:") || key[..open].ends_with("owned:") {
                "ID"
            } else if key[..open].ends_with("solo:") {
                "IDENTITY"
            } else {
                "CODE"
            };
            format!("{}{{{inner}}}{}", &key[..open], &key[close + 1..])
        }
        _ => key.to_owned(),
    }
}

/// The double-quoted arguments of a `MONITOR` line, unescaped enough to read keys.
fn quoted_args(text: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut arg = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    if let Some(escaped) = chars.next() {
                        arg.push(escaped);
                    }
                }
                '"' => break,
                c => arg.push(c),
            }
        }
        args.push(arg);
    }
    args
}

/// Sums the samples of the Prometheus counter `name` (over all its labels) in a
/// `/metrics` page.
pub fn metric_total(page: &str, name: &str) -> f64 {
    page.lines()
        .filter(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .fold(0.0, |sum, v| sum + v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_commandstats() {
        let text = "# Commandstats\r\ncmdstat_set:calls=12,usec=30,usec_per_call=2.50,\
                    rejected_calls=0,failed_calls=0\r\ncmdstat_client|setinfo:calls=2,usec=1\r\n";
        let calls = parse_commandstats(text);
        assert_eq!(calls.get("set"), Some(&12));
        assert_eq!(calls.get("client|setinfo"), Some(&2));
    }

    #[test]
    fn sorts_monitor_lines() {
        let line =
            r#"1732999999.123456 [0 127.0.0.1:4321] "SET" "jg:alive:{jumpgate1}" "1" "PX" "3000""#;
        assert_eq!(command_class(line).unwrap(), "SET jg:alive:{ID}");
        let line = r#"1732999999.1 [0 127.0.0.1:4321] "EVALSHA" "abc" "2" "jg:{ABCD2345}:room" "jg:{ABCD2345}:fence" "jumpgate2" "" "0""#;
        assert_eq!(command_class(line).unwrap(), "EVALSHA claim script");
        let line = r#"1732999999.1 [0 lua] "HGET" "jg:{ABCD2345}:fence" "owner""#;
        assert_eq!(
            command_class(line).unwrap(),
            "HGET jg:{CODE}:fence (in a script)"
        );
        let line = r#"1732999999.1 [0 127.0.0.1:1] "PUBLISH" "jg:handover:jumpgate3" "ABCD2345""#;
        assert_eq!(command_class(line).unwrap(), "PUBLISH jg:handover:ID");
        let line = r#"1732999999.1 [0 127.0.0.1:1] "SMEMBERS" "jg:instances""#;
        assert_eq!(command_class(line).unwrap(), "SMEMBERS jg:instances");
        assert_eq!(command_class("OK"), None);
        let line = r#"1732999999.1 [0 127.0.0.1:1] "INFO" "commandstats""#;
        assert_eq!(command_class(line), None);
    }

    #[test]
    fn sums_counters() {
        let page = "# HELP x\njumpgate_room_takeovers_total 7\n\
                    jumpgate_redis_errors_total{op=\"write\"} 2\n\
                    jumpgate_redis_errors_total{op=\"load\"} 1\n";
        assert_eq!(metric_total(page, "jumpgate_room_takeovers_total"), 7.0);
        assert_eq!(metric_total(page, "jumpgate_redis_errors_total"), 3.0);
        assert_eq!(metric_total(page, "jumpgate_room_takeovers"), 0.0);
    }
}
