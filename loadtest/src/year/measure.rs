//! What a simulated year costs Redis: `INFO memory`, and every key's `MEMORY USAGE`
//! (exact, `SAMPLES 0`) summed by key family; and the check that every family the
//! tool wrote has the layout the server itself wrote while playing the samples.

use std::collections::{BTreeMap, HashMap};

use redis::aio::MultiplexedConnection;
use serde::Serialize;

use super::mix::RoomKind;

/// Keys per `SCAN` step (and `MEMORY USAGE` calls per pipeline).
const SCAN_COUNT: usize = 1_000;

fn redis_error(e: redis::RedisError) -> String {
    format!("Redis: {e}")
}

/// How long a family's keys are kept, by the retention policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kept {
    /// Bounded by the policy: open rooms, closed ones for the finished TTL,
    /// idempotency keys for their window, indexes of open rooms.
    Bounded,
    /// One entry (or key) per account, pair or account and rule set, kept
    /// forever: grows with the accounts and pairs ever seen.
    Forever,
}

/// A family of keys.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Family {
    pub group: &'static str,
    pub name: String,
    pub kept: Kept,
}

fn family(group: &'static str, name: &str, kept: Kept) -> Family {
    Family {
        group,
        name: name.to_owned(),
        kept,
    }
}

/// The family of `key`; rooms by the kind of their code in `kinds`.
pub fn classify(key: &str, kinds: &HashMap<String, RoomKind>) -> Family {
    use Kept::{Bounded, Forever};
    if let Some(rest) = key.strip_prefix("jg:{")
        && let Some((id, _suffix)) = rest.split_once("}:")
    {
        return match kinds.get(id) {
            Some(kind) => family("rooms", kind.label(), Bounded),
            None => family("rooms", "rooms of no known kind", Bounded),
        };
    }
    let prefixed = |p: &str| key.starts_with(p);
    if key == "jg:lobbies" {
        return family("indexes", "jg:lobbies", Bounded);
    }
    if key == "jg:dormant" {
        return family("indexes", "jg:dormant", Bounded);
    }
    if prefixed("jg:mine:") {
        return family("indexes", "jg:mine:{ID}", Bounded);
    }
    if prefixed("jg:solo:") {
        return family("indexes", "jg:solo:{ID}", Bounded);
    }
    if ["jg:instances", "jg:orphans"].contains(&key) {
        return family("indexes", key, Bounded);
    }
    if prefixed("jg:alive:") {
        return family("indexes", "jg:alive:{ID}", Bounded);
    }
    if prefixed("jg:owned:") {
        return family("indexes", "jg:owned:{ID}", Bounded);
    }
    for (prefix, group) in [
        ("jgw:{wallets}:done", "idempotency windows"),
        ("jgr:{records}:done", "idempotency windows"),
        ("jgl:{boards}:done", "idempotency windows"),
    ] {
        if prefixed(prefix) {
            return family(group, &format!("{prefix} (+ :at, :scan)"), Bounded);
        }
    }
    if let Some(rest) = key.strip_prefix("jgw:{wallets}:") {
        return match rest.split(':').next().unwrap_or("") {
            "bal" => family("wallets", "jgw bal", Forever),
            "totals" => family("wallets", "jgw totals", Forever),
            "ledger" => family("wallets", "jgw ledger:{ACCOUNT} (last 100)", Forever),
            "archive" => family("wallets", "jgw archive:{ACCOUNT}", Forever),
            "won" => family("wallets", "jgw won:{DAY}", Bounded),
            "escrow" => family("wallets", "jgw escrow:{SERIES}", Bounded),
            _ => family("other", "jgw other", Bounded),
        };
    }
    if let Some(rest) = key.strip_prefix("jgr:{records}:") {
        return match rest.split(':').next().unwrap_or("") {
            "won" => family("records", "jgr won", Forever),
            "streak" => family("records", "jgr streak:{RULES}", Forever),
            "best" => family("records", "jgr best:{RULES}", Forever),
            "h2h" => family("records", "jgr h2h", Forever),
            "draws" => family("records", "jgr draws", Forever),
            _ => family("other", "jgr other", Bounded),
        };
    }
    if let Some(rest) = key.strip_prefix("jgl:{boards}:") {
        return if rest.ends_with(":order") {
            family("leaderboards", "jgl {RULES}:order", Forever)
        } else if rest.ends_with(":ordered") {
            family("leaderboards", "jgl {RULES}:ordered", Forever)
        } else {
            family("leaderboards", "jgl {RULES} (standings)", Forever)
        };
    }
    family("other", "other keys", Bounded)
}

/// One family's keys and bytes.
#[derive(Debug, Clone, Serialize)]
pub struct FamilyFigure {
    pub group: String,
    pub family: String,
    pub kept: Kept,
    pub keys: u64,
    /// Sum of `MEMORY USAGE … SAMPLES 0`.
    pub bytes: u64,
    /// The largest key's bytes.
    pub largest: u64,
}

/// Redis once filled.
#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    pub used_memory: u64,
    pub used_memory_dataset: u64,
    pub used_memory_overhead: u64,
    pub used_memory_rss: u64,
    pub keys: u64,
    pub families: Vec<FamilyFigure>,
    /// Sum over families.
    pub family_bytes: u64,
    pub seconds: f64,
    /// One key of each family, for the layout check.
    #[serde(skip)]
    pub examples: BTreeMap<String, String>,
}

/// A field of `INFO memory`.
fn info_field(info: &str, name: &str) -> u64 {
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Scans every key of the database `conn` is on, sums `MEMORY USAGE` by family,
/// and reads `INFO memory`.
pub async fn measure(
    conn: &mut MultiplexedConnection,
    kinds: &HashMap<String, RoomKind>,
) -> Result<Measured, String> {
    let started = std::time::Instant::now();
    let mut by_family: BTreeMap<Family, (u64, u64, u64)> = BTreeMap::new();
    let mut examples = BTreeMap::new();
    let mut cursor = 0u64;
    let mut scanned = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(SCAN_COUNT)
            .query_async(conn)
            .await
            .map_err(redis_error)?;
        if !keys.is_empty() {
            let mut pipe = redis::pipe();
            for key in &keys {
                pipe.cmd("MEMORY")
                    .arg("USAGE")
                    .arg(key)
                    .arg("SAMPLES")
                    .arg(0);
            }
            let sizes: Vec<Option<u64>> = pipe.query_async(conn).await.map_err(redis_error)?;
            for (key, size) in keys.iter().zip(sizes) {
                let f = classify(key, kinds);
                examples
                    .entry(f.name.clone())
                    .or_insert_with(|| key.clone());
                let slot = by_family.entry(f).or_default();
                let size = size.unwrap_or(0);
                slot.0 += 1;
                slot.1 += size;
                slot.2 = slot.2.max(size);
            }
            scanned += keys.len() as u64;
            if scanned % 500_000 < keys.len() as u64 {
                eprintln!("year: {scanned} keys measured");
            }
        }
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(conn)
        .await
        .map_err(redis_error)?;
    let keys: u64 = redis::cmd("DBSIZE")
        .query_async(conn)
        .await
        .map_err(redis_error)?;
    let families: Vec<FamilyFigure> = by_family
        .into_iter()
        .map(|(f, (keys, bytes, largest))| FamilyFigure {
            group: f.group.to_owned(),
            family: f.name,
            kept: f.kept,
            keys,
            bytes,
            largest,
        })
        .collect();
    Ok(Measured {
        used_memory: info_field(&info, "used_memory"),
        used_memory_dataset: info_field(&info, "used_memory_dataset"),
        used_memory_overhead: info_field(&info, "used_memory_overhead"),
        used_memory_rss: info_field(&info, "used_memory_rss"),
        keys,
        family_bytes: families.iter().map(|f| f.bytes).sum(),
        families,
        seconds: started.elapsed().as_secs_f64(),
        examples,
    })
}

/// A value's shape: JSON objects by their sorted field names, other text with
/// every run of id characters (letters, digits, `_`, `-`) as `w`, so ids and
/// numbers of any length compare equal but separators do not.
fn shape(text: &[u8]) -> String {
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_slice::<serde_json::Value>(text) {
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort();
        return format!("json{keys:?}");
    }
    let mut out = String::new();
    let mut in_word = false;
    for &b in text {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            if !in_word {
                out.push('w');
                in_word = true;
            }
        } else {
            in_word = false;
            out.push_str(&(b as char).escape_default().to_string());
        }
    }
    out
}

/// The shape of key `key`: its type and a sample of its contents.
async fn key_shape(conn: &mut MultiplexedConnection, key: &str) -> Result<String, String> {
    let kind: String = redis::cmd("TYPE")
        .arg(key)
        .query_async(conn)
        .await
        .map_err(redis_error)?;
    let sample: Vec<Vec<u8>> = match kind.as_str() {
        "string" => {
            let v: Option<Vec<u8>> = redis::cmd("GET")
                .arg(key)
                .query_async(conn)
                .await
                .map_err(redis_error)?;
            v.into_iter().collect()
        }
        "hash" => redis::cmd("HRANDFIELD")
            .arg(key)
            .arg(1)
            .arg("WITHVALUES")
            .query_async(conn)
            .await
            .map_err(redis_error)?,
        "set" => redis::cmd("SRANDMEMBER")
            .arg(key)
            .arg(1)
            .query_async(conn)
            .await
            .map_err(redis_error)?,
        "list" => redis::cmd("LRANGE")
            .arg(key)
            .arg(0)
            .arg(0)
            .query_async(conn)
            .await
            .map_err(redis_error)?,
        "zset" => {
            let v: Vec<(Vec<u8>, f64)> = redis::cmd("ZRANGE")
                .arg(key)
                .arg(0)
                .arg(0)
                .arg("WITHSCORES")
                .query_async(conn)
                .await
                .map_err(redis_error)?;
            v.into_iter()
                .flat_map(|(m, s)| {
                    [
                        m,
                        format!("{}", s.abs().log10().floor().max(0.0)).into_bytes(),
                    ]
                })
                .collect()
        }
        _ => Vec::new(),
    };
    let parts: Vec<String> = sample.iter().map(|s| shape(s)).collect();
    Ok(format!("{kind} {}", parts.join(" ")))
}

/// Compares every non-room family the server wrote in the sample database
/// (`server`, its sample rooms' ids in `kinds`) with the same family in the
/// filled one (`examples`, read by [`measure`]). Returns notes about families
/// the server wrote and the tool did not, and fails on any family whose shape
/// differs.
pub async fn check_layout(
    server: &mut MultiplexedConnection,
    filled: &mut MultiplexedConnection,
    kinds: &HashMap<String, RoomKind>,
    examples: &BTreeMap<String, String>,
) -> Result<Vec<String>, String> {
    let mut cursor = 0u64;
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(SCAN_COUNT)
            .query_async(server)
            .await
            .map_err(redis_error)?;
        for key in keys {
            let f = classify(&key, kinds);
            if f.group != "rooms" {
                seen.entry(f.name).or_insert(key);
            }
        }
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    let mut notes = Vec::new();
    let mut wrong = Vec::new();
    for (name, key) in &seen {
        let Some(ours) = examples.get(name) else {
            notes.push(format!(
                "the server wrote {key} ({name}); the year has none"
            ));
            continue;
        };
        let theirs = key_shape(server, key).await?;
        let mine = key_shape(filled, ours).await?;
        if theirs != mine {
            wrong.push(format!(
                "{name}: the server wrote {key} as `{theirs}`, the tool wrote {ours} as `{mine}`"
            ));
        }
    }
    for name in examples.keys() {
        if !seen.contains_key(name)
            && !name.starts_with("rooms")
            && !RoomKind::ALL.iter().any(|k| k.label() == name)
        {
            notes.push(format!(
                "{name}: written by the tool, not seen from the samples"
            ));
        }
    }
    if wrong.is_empty() {
        Ok(notes)
    } else {
        Err(format!(
            "the year's layout differs from the server's: {}",
            wrong.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_by_key() {
        let kinds: HashMap<String, RoomKind> =
            [("ABCDEFGH".to_owned(), RoomKind::GuestClosed)].into();
        assert_eq!(classify("jg:{ABCDEFGH}:moves", &kinds).group, "rooms");
        assert_eq!(
            classify("jg:{ABCDEFGH}:room", &kinds).name,
            RoomKind::GuestClosed.label()
        );
        assert_eq!(
            classify("jgw:{wallets}:done:at", &kinds).kept,
            Kept::Bounded
        );
        assert_eq!(
            classify("jgw:{wallets}:ledger:a_x", &kinds).kept,
            Kept::Forever
        );
        assert_eq!(
            classify("jgl:{boards}:thai:order", &kinds).name,
            "jgl {RULES}:order"
        );
        assert_eq!(
            classify("jgl:{boards}:done:scan", &kinds).group,
            "idempotency windows"
        );
        assert_eq!(classify("jg:mine:{g_1}", &kinds).name, "jg:mine:{ID}");
    }

    #[test]
    fn shapes_ignore_ids_but_not_layout() {
        assert_eq!(
            shape(b"2026-01:grant:count"),
            shape(b"2025-12:payout:amount")
        );
        assert_ne!(shape(b"a_x|a_y"), shape(b"a_x:a_y"));
        assert_eq!(
            shape(br#"{"key":"k","kind":"grant","amount":1,"at":2}"#),
            shape(br#"{"at":2,"amount":-5,"kind":"escrow","key":"K:1:2:escrow"}"#)
        );
    }
}
