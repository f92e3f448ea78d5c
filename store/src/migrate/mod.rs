//! `jumpgate migrate`: copies everything one store holds into another that
//! is empty — a data directory (the embedded store) to a Redis, or back —
//! through a neutral [`Snapshot`], then reads the copy back and compares.
//!
//! The rules it keeps:
//!
//! - the source is not in use: a data directory is opened with its lock
//!   (a running server refuses it), and a Redis with a current instance
//!   heartbeat (`jg:alive:*`) is refused unless forced;
//! - the destination is empty (no `jg*` key; no row in the data file),
//!   checked before anything is written; otherwise nothing is changed;
//! - rooms are copied released (no owner) at their epoch and version, so
//!   the first instance to start on the copy takes them over, and open
//!   ones are listed where such an instance looks for them;
//! - the data file is written in one transaction (all or nothing); a Redis
//!   is written in pipelines, and a copy cut short says so and asks for the
//!   destination to be flushed before a retry (it was empty);
//! - afterwards the copy is read back: the counts of every kind, the money
//!   totals and every balance must equal the source's.
//!
//! The snapshot is held in memory whole: fine for the data a single
//! instance's directory holds (rooms expire once closed, ledgers are
//! bounded), not meant for a Redis of millions of rooms.

mod embedded;
mod redis;
pub mod snapshot;
#[cfg(test)]
mod tests;

use std::fmt;
use std::path::{Path, PathBuf};

use ::redis::aio::MultiplexedConnection;

pub use self::snapshot::{Counts, Money, Snapshot};
use crate::StoreError;
use crate::embedded::{DATA_FILE, Db, OpenError};
use crate::idempotency::IdempotencyWindow;

/// The storage format a copy into Redis is marked with (see `preflight`):
/// 2 if a logged move carries its effects (appended without its record),
/// which only a build reading format 2 can replay; 1 otherwise.
fn format_needed(snapshot: &Snapshot) -> u32 {
    let appended = snapshot
        .rooms
        .iter()
        .any(|r| r.moves.iter().any(|m| m.effects.is_some()));
    if appended { 2 } else { 1 }
}

/// How long a Redis command (or pipeline) may take before the copy fails.
const REDIS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// One end of a migration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A data directory (the embedded store).
    DataDir(PathBuf),
    /// One Redis database, by URL (`redis://` or `rediss://`).
    Redis(String),
}

impl Location {
    /// A `redis://` or `rediss://` URL is a Redis; anything else a path.
    pub fn parse(text: &str) -> Location {
        let lower = text.to_ascii_lowercase();
        if [
            "redis://",
            "rediss://",
            "redis+cluster://",
            "redis+unix://",
            "unix://",
        ]
        .iter()
        .any(|p| lower.starts_with(p))
        {
            Location::Redis(text.to_owned())
        } else {
            Location::DataDir(PathBuf::from(text))
        }
    }
}

impl Location {
    /// [`parse`](Self::parse) for an operator's argument: a text that looks
    /// like a URL of another scheme (`http://…`, or `redis:/…` with a slash
    /// missing) is refused rather than taken for a directory of that name.
    pub fn from_arg(text: &str) -> Result<Location, String> {
        let location = Location::parse(text);
        if let Location::DataDir(_) = &location
            && (text.contains("://") || text.to_ascii_lowercase().starts_with("redis"))
            && !Path::new(text).is_dir()
        {
            return Err(format!(
                "{text:?} is neither a Redis URL (redis://HOST:PORT/DB, rediss://…, unix://…) nor an existing directory; nothing was changed"
            ));
        }
        Ok(location)
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::DataDir(dir) => write!(f, "the data directory {}", dir.display()),
            Location::Redis(url) => write!(f, "the Redis at {}", without_password(url)),
        }
    }
}

/// A URL with any password in it replaced (for messages).
fn without_password(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***@{}", &url[..scheme], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

/// What a migration may do.
#[derive(Clone, Copy, Debug)]
pub struct MigrateOptions {
    /// Copy from a Redis that has an instance heartbeat.
    pub force: bool,
    /// Idempotency keys decided longer ago than this are not copied (they
    /// are forgotten anyway).
    pub window: IdempotencyWindow,
}

/// Why a migration did not happen, or did not finish. Each says what was
/// changed (nothing, unless it says otherwise) and what to do.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("{0} and {1} are the same store; copy into another, empty one")]
    SameStore(Location, Location),
    #[error("there is no data file ({DATA_FILE}) in {0}; nothing to copy")]
    NoDataFile(PathBuf),
    #[error("the directory {0} does not exist; nothing to copy")]
    NoDirectory(PathBuf),
    #[error(
        "the data directory {0} is in use by a running Jumpgate server; stop it first (nothing was changed)"
    )]
    ServerRunning(PathBuf),
    #[error(transparent)]
    DataDir(#[from] OpenError),
    #[error(
        "{0} is not empty ({1}); nothing was changed. Copy into an empty data directory or Redis database"
    )]
    NotEmpty(Location, String),
    #[error(
        "{0} is in use: instance(s) {1} have a current heartbeat; nothing was changed. Stop every \
         instance first (or pass --force if they are gone and their heartbeats not yet expired)"
    )]
    InUse(Location, String),
    #[error("migrate reads and writes one Redis, not a Redis Cluster ({0}); nothing was changed")]
    Cluster(String),
    #[error("{0} failed ({1}); nothing was changed")]
    Source(Location, StoreError),
    #[error("the money in {0} does not add up ({1}); nothing was changed")]
    Unbalanced(Location, Money),
    #[error("{0} failed before anything was written ({1}); nothing was changed")]
    Destination(Location, StoreError),
    #[error(
        "the copy into {0} failed part way ({1}); the destination now holds part of the data. \
         Flush it (FLUSHDB on that Redis database) and run migrate again: it was empty before"
    )]
    PartlyWritten(Location, StoreError),
    #[error("the data file in {0} refused the copy ({1}); nothing of it was written")]
    NotWritten(Location, StoreError),
    #[error("the copy in {0} could not be read back ({1}); do not use it before checking it")]
    Unverified(Location, StoreError),
    #[error(
        "the copy in {to} differs from the source; do not use it (empty it and run migrate again):\n  {}",
        .differences.join("\n  ")
    )]
    Mismatch {
        to: Location,
        differences: Vec<String>,
    },
}

/// What a finished migration copied.
#[derive(Clone, Debug)]
pub struct Summary {
    pub from: Location,
    pub to: Location,
    pub counts: Counts,
    pub money: Money,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "copied {} to {}", self.from, self.to)?;
        writeln!(f, "  {}", self.counts)?;
        writeln!(f, "  points: {}", self.money)?;
        write!(
            f,
            "  read back from the copy: every count, the totals and every balance match"
        )
    }
}

/// An open end of a migration.
enum Opened {
    DataDir(Db),
    Redis(MultiplexedConnection),
}

async fn connect(url: &str) -> Result<MultiplexedConnection, StoreError> {
    if crate::cluster_seeds(url).is_some() {
        return Err(StoreError::Refused("a cluster URL".into()));
    }
    let client = ::redis::Client::open(url)?;
    // A Redis that stops answering fails the copy rather than hanging it.
    let config = ::redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(REDIS_TIMEOUT))
        .set_response_timeout(Some(REDIS_TIMEOUT));
    Ok(client
        .get_multiplexed_async_connection_with_config(&config)
        .await?)
}

/// Opens a data directory that must already hold a data file.
fn open_existing(dir: &Path) -> Result<Db, MigrateError> {
    if !dir.is_dir() {
        return Err(MigrateError::NoDirectory(dir.to_owned()));
    }
    if !dir.join(DATA_FILE).is_file() {
        return Err(MigrateError::NoDataFile(dir.to_owned()));
    }
    open(dir)
}

/// [`Db::open`], a directory a server holds said in migrate's words.
fn open(dir: &Path) -> Result<Db, MigrateError> {
    Db::open(dir).map_err(|e| match e {
        OpenError::Locked(dir) => MigrateError::ServerRunning(dir),
        e => MigrateError::DataDir(e),
    })
}

/// Opens (or creates) a destination data directory and checks that its
/// data file holds no row.
async fn open_empty(dir: &Path, to: &Location) -> Result<Opened, MigrateError> {
    let db = open(dir)?;
    let filled = embedded::filled_tables(&db)
        .await
        .map_err(|e| MigrateError::Destination(to.clone(), e))?;
    if !filled.is_empty() {
        let rows: Vec<String> = filled.iter().map(|(t, n)| format!("{t}: {n}")).collect();
        return Err(MigrateError::NotEmpty(
            to.clone(),
            format!("rows in {}", rows.join(", ")),
        ));
    }
    Ok(Opened::DataDir(db))
}

/// Copies everything in `from` into `to` (which must be empty), then
/// checks the copy against the source.
pub async fn migrate(
    from: &Location,
    to: &Location,
    options: MigrateOptions,
) -> Result<Summary, MigrateError> {
    migrate_reporting(from, to, options, |_| {}).await
}

/// [`migrate`], telling `progress` as each step begins (the command line
/// prints it, so a long copy shows where it is).
pub async fn migrate_reporting(
    from: &Location,
    to: &Location,
    options: MigrateOptions,
    progress: impl Fn(&str),
) -> Result<Summary, MigrateError> {
    if same_place(from, to) {
        return Err(MigrateError::SameStore(from.clone(), to.clone()));
    }
    for end in [from, to] {
        if let Location::Redis(url) = end
            && crate::cluster_seeds(url).is_some()
        {
            return Err(MigrateError::Cluster(without_password(url)));
        }
    }
    let source = match from {
        Location::DataDir(dir) => Opened::DataDir(open_existing(dir)?),
        Location::Redis(url) => {
            let mut conn = connect(url)
                .await
                .map_err(|e| MigrateError::Source(from.clone(), e))?;
            let live = redis::live_instances(&mut conn)
                .await
                .map_err(|e| MigrateError::Source(from.clone(), e))?;
            if !live.is_empty() && !options.force {
                return Err(MigrateError::InUse(from.clone(), live.join(", ")));
            }
            Opened::Redis(conn)
        }
    };
    let destination_error = |e| MigrateError::Destination(to.clone(), e);
    // A data directory without a data file is created only once the
    // source has been read: a copy refused before then leaves no trace.
    let destination = match to {
        Location::DataDir(dir) if !dir.join(DATA_FILE).exists() => Err(dir.as_path()),
        Location::DataDir(dir) => Ok(open_empty(dir, to).await?),
        Location::Redis(url) => {
            let mut conn = connect(url).await.map_err(destination_error)?;
            let keys = redis::jumpgate_keys(&mut conn)
                .await
                .map_err(destination_error)?;
            if !keys.is_empty() {
                return Err(MigrateError::NotEmpty(
                    to.clone(),
                    format!("it holds {} and more", keys.join(", ")),
                ));
            }
            Ok(Opened::Redis(conn))
        }
    };
    progress(&format!("reading {from}"));
    let mut snapshot = export(source, options.window)
        .await
        .map_err(|e| MigrateError::Source(from.clone(), e))?;
    snapshot.sort();
    let money = snapshot.money();
    if !money.balanced() {
        return Err(MigrateError::Unbalanced(from.clone(), money));
    }
    let mut destination = match destination {
        Ok(opened) => opened,
        Err(new_dir) => open_empty(new_dir, to).await?,
    };
    progress(&format!(
        "writing into {to} (rooms: {}, moves: {}, accounts: {})",
        snapshot.rooms.len(),
        snapshot.counts().moves,
        snapshot.wallets.accounts.len()
    ));
    match &mut destination {
        Opened::DataDir(db) => embedded::import(db, snapshot.clone())
            .await
            .map_err(|e| MigrateError::NotWritten(to.clone(), e))?,
        Opened::Redis(conn) => redis::import(conn, &snapshot, format_needed(&snapshot))
            .await
            .map_err(|e| MigrateError::PartlyWritten(to.clone(), e))?,
    }
    progress("reading the copy back to check it");
    // The copy holds only what was written; read with a wider window, a
    // key that reached the end of its window meanwhile still counts.
    let wider = IdempotencyWindow {
        ms: options.window.ms.saturating_mul(2),
    };
    let copy = export(destination, wider)
        .await
        .map_err(|e| MigrateError::Unverified(to.clone(), e))?;
    let mut differences = snapshot.differences(&copy);
    if !copy.money().balanced() {
        differences.push(format!(
            "the copy's money does not add up: {}",
            copy.money()
        ));
    }
    if !differences.is_empty() {
        return Err(MigrateError::Mismatch {
            to: to.clone(),
            differences,
        });
    }
    Ok(Summary {
        from: from.clone(),
        to: to.clone(),
        counts: snapshot.counts(),
        money,
    })
}

async fn export(store: Opened, window: IdempotencyWindow) -> Result<Snapshot, StoreError> {
    match store {
        Opened::DataDir(db) => embedded::export(&db, window).await,
        Opened::Redis(mut conn) => redis::export(&mut conn, window).await,
    }
}

/// Whether two locations name the same store (one directory, one URL).
fn same_place(a: &Location, b: &Location) -> bool {
    match (a, b) {
        (Location::DataDir(x), Location::DataDir(y)) => {
            x == y || matches!((x.canonicalize(), y.canonicalize()), (Ok(x), Ok(y)) if x == y)
        }
        (Location::Redis(x), Location::Redis(y)) => x == y,
        _ => false,
    }
}
