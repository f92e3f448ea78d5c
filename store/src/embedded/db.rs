//! The embedded database: one SQLite file in a data directory, locked
//! against a second process, checked whole before anything is served, and
//! written by one thread that commits in groups (every job of a group in a
//! savepoint of its own, one `fsync` per group, every answer after it).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use tokio::sync::oneshot;

use crate::StoreError;

/// The data file's name inside the data directory.
pub const DATA_FILE: &str = "jumpgate.db";
/// The lock file's name: held (an OS file lock) while a process runs on
/// the directory.
pub const LOCK_FILE: &str = "jumpgate.lock";
/// What the `meta` table says a Jumpgate data file is, and its schema.
const FORMAT: &str = "jumpgate-embedded";
const SCHEMA_VERSION: i64 = 1;
/// Jobs waiting for the database thread before new ones are refused.
const QUEUE: usize = 16_384;
/// Most jobs committed together.
const GROUP: usize = 512;
/// How often expired rows are deleted.
const PURGE_EVERY: Duration = Duration::from_secs(1);

/// Why a data directory could not be opened. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot use the data directory {path}: {source}")]
    Directory {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the data directory {0} is in use by another Jumpgate process; the embedded store \
         serves one instance only (run several instances on Redis: --redis-url)"
    )]
    Locked(PathBuf),
    #[error(
        "refusing to start: {path} is not a readable Jumpgate data file ({why}); the file was \
         not loaded or changed. Restore it from a backup, or move it away to start empty"
    )]
    Corrupt { path: PathBuf, why: String },
}

/// What a job sees: the connection, inside the group's transaction, and
/// the store's clock.
#[derive(Debug)]
pub struct Tx<'c> {
    pub conn: &'c Connection,
    /// Unix milliseconds, the same for every job of a group.
    pub now: u64,
}

type Reply = Box<dyn FnOnce(Result<(), StoreError>) + Send>;
type Job = Box<dyn FnOnce(&Tx<'_>) -> Reply + Send>;

/// A handle on the database thread; cheap to clone. Every `open` of one
/// directory within a process shares the one thread (and its lock); the
/// thread ends when the last handle is dropped, after committing what it
/// was given, and only then is the directory's lock released.
#[derive(Clone)]
pub struct Db {
    shared: Arc<Shared>,
}

struct Shared {
    /// `None` only while dropping (closing the queue ends the thread).
    jobs: Option<mpsc::SyncSender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
    path: PathBuf,
    clock: Arc<Clock>,
    /// The directory's lock, held until the thread has closed the file.
    _lock: File,
}

impl Drop for Shared {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take()
            && thread.thread().id() != std::thread::current().id()
        {
            let _ = thread.join();
        }
    }
}

/// The directories this process has open, so that a second `open` of one
/// (a server restarted in the same process, as tests do) shares its
/// thread instead of being refused by its own lock.
static OPEN: std::sync::Mutex<Vec<(PathBuf, std::sync::Weak<Shared>)>> =
    std::sync::Mutex::new(Vec::new());

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Db({})", self.shared.path.display())
    }
}

/// The store's clock: the wall clock, moved on by tests.
#[derive(Debug, Default)]
pub struct Clock {
    ahead_ms: AtomicU64,
}

impl Clock {
    pub fn now_ms(&self) -> u64 {
        crate::sync::now_ms() + self.ahead_ms.load(Ordering::Relaxed)
    }
}

impl Db {
    /// Opens (creating on first use) the data file in `dir`: takes the
    /// directory's lock, refuses a file that is not a whole Jumpgate data
    /// file, and starts the database thread.
    pub fn open(dir: &Path) -> Result<Db, OpenError> {
        let io = |source| OpenError::Directory {
            path: dir.to_owned(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let dir_key = dir.canonicalize().map_err(io)?;
        let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        open.retain(|(_, weak)| weak.strong_count() > 0);
        if let Some(shared) = open
            .iter()
            .find(|(d, _)| *d == dir_key)
            .and_then(|(_, weak)| weak.upgrade())
        {
            return Ok(Db { shared });
        }
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(LOCK_FILE))
            .map_err(io)?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(OpenError::Locked(dir.into())),
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
        let path = dir.join(DATA_FILE);
        let conn = open_checked(&path)?;
        let (jobs, queue) = mpsc::sync_channel::<Job>(QUEUE);
        let clock = Arc::new(Clock::default());
        let thread_clock = clock.clone();
        let thread = std::thread::Builder::new()
            .name("jumpgate-db".into())
            .spawn(move || run(conn, &queue, &thread_clock))
            .map_err(io)?;
        let shared = Arc::new(Shared {
            jobs: Some(jobs),
            thread: Some(thread),
            path,
            clock,
            _lock: lock,
        });
        open.push((dir_key, Arc::downgrade(&shared)));
        Ok(Db { shared })
    }

    /// The data file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// The store's clock, Unix milliseconds.
    pub fn now_ms(&self) -> u64 {
        self.shared.clock.now_ms()
    }

    /// Moves the store's clock on (tests of expiry).
    pub fn advance(&self, by: Duration) {
        self.shared
            .clock
            .ahead_ms
            .fetch_add(by.as_millis() as u64, Ordering::Relaxed);
    }

    /// Runs `job` in the next group and answers once the group committed:
    /// its result if the commit landed, an error if it did not (then
    /// nothing of the job was written). A job that fails rolls back to
    /// its own savepoint and leaves the group's other jobs alone.
    pub async fn call<T, F>(&self, job: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Tx<'_>) -> rusqlite::Result<T> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |t: &Tx<'_>| {
            let out = in_savepoint(t, job);
            Box::new(move |committed: Result<(), StoreError>| {
                let _ = tx.send(committed.and_then(|()| out.map_err(sql_error)));
            })
        });
        let Some(jobs) = &self.shared.jobs else {
            return Err(StoreError::Disk("the database thread stopped".into()));
        };
        match jobs.try_send(job) {
            Ok(()) => {}
            Err(mpsc::TrySendError::Full(_)) => {
                return Err(StoreError::Disk(
                    "the data file is behind: too many writes waiting".into(),
                ));
            }
            Err(mpsc::TrySendError::Disconnected(_)) => {
                return Err(StoreError::Disk("the database thread stopped".into()));
            }
        }
        rx.await.unwrap_or_else(|_| {
            Err(StoreError::Disk(
                "the data file did not take the write".into(),
            ))
        })
    }
}

/// A SQLite error as the store reports it.
pub fn sql_error(e: rusqlite::Error) -> StoreError {
    StoreError::Disk(e.to_string())
}

fn in_savepoint<T>(
    t: &Tx<'_>,
    job: impl FnOnce(&Tx<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    // Prepared once and kept: parsing these per job cost more than some jobs.
    let run = |sql: &str| t.conn.prepare_cached(sql)?.execute([]).map(drop);
    run("SAVEPOINT job")?;
    match job(t) {
        Ok(out) => {
            run("RELEASE job")?;
            Ok(out)
        }
        Err(e) => {
            run("ROLLBACK TO job")?;
            run("RELEASE job")?;
            Err(e)
        }
    }
}

/// The database thread: takes what is waiting (up to [`GROUP`] jobs), runs
/// it in one transaction, commits (the `fsync`), then answers.
fn run(conn: Connection, queue: &mpsc::Receiver<Job>, clock: &Clock) {
    let mut last_purge = std::time::Instant::now();
    loop {
        let first = match queue.recv_timeout(PURGE_EVERY) {
            Ok(job) => Some(job),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        };
        let mut group: Vec<Job> = first.into_iter().collect();
        while group.len() < GROUP {
            match queue.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let purge = last_purge.elapsed() >= PURGE_EVERY;
        if group.is_empty() && !purge {
            continue;
        }
        let now = clock.now_ms();
        let mut replies = Vec::with_capacity(group.len());
        let run = |sql: &str| conn.prepare_cached(sql)?.execute([]).map(drop);
        let begun = run("BEGIN IMMEDIATE");
        let committed = match begun {
            Ok(()) => {
                let t = Tx { conn: &conn, now };
                for job in group {
                    replies.push(job(&t));
                }
                if purge {
                    last_purge = std::time::Instant::now();
                    if let Err(e) = in_savepoint(&t, super::schema::purge) {
                        tracing::warn!(error = %e, "could not delete expired rows; trying again");
                    }
                }
                match run("COMMIT") {
                    Ok(()) => Ok(()),
                    Err(e) => {
                        let _ = run("ROLLBACK");
                        tracing::error!(error = %e, "the data file refused a commit; nothing of it was written");
                        Err(e.to_string())
                    }
                }
            }
            Err(e) => {
                // Nothing ran: dropping the jobs answers each of them with
                // an error (nothing of it was written).
                tracing::error!(error = %e, "the data file refused a transaction");
                drop(group);
                Err(e.to_string())
            }
        };
        for reply in replies {
            reply(committed.clone().map_err(StoreError::Disk));
        }
    }
}

/// Opens the file and refuses anything but a whole data file of this
/// format (an empty or new file becomes one).
fn open_checked(path: &Path) -> Result<Connection, OpenError> {
    // SQLite's integrity report runs over many lines: one line, cut short.
    let corrupt = |e: &dyn std::fmt::Display| OpenError::Corrupt {
        path: path.to_owned(),
        why: {
            let why = e
                .to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            match why.char_indices().nth(240) {
                Some((cut, _)) => format!("{}…", &why[..cut]),
                None => why,
            }
        },
    };
    // A data file cut to nothing is not a new one: starting empty on it
    // would drop every game without a word.
    let metadata = std::fs::metadata(path);
    if metadata.as_ref().is_ok_and(|m| m.len() == 0) {
        return Err(corrupt(&"the file is empty"));
    }
    let new = metadata.is_err();
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| corrupt(&e))?;
    // Checked before anything is written: a file that is not ours is
    // left exactly as it was.
    conn.execute_batch("PRAGMA busy_timeout = 5000;")
        .map_err(|e| corrupt(&e))?;
    let check: String = conn
        .query_row("PRAGMA quick_check", [], |row| row.get(0))
        .map_err(|e| corrupt(&e))?;
    if check != "ok" {
        return Err(corrupt(&check));
    }
    super::schema::create_or_check(&conn, FORMAT, SCHEMA_VERSION).map_err(|e| corrupt(&e))?;
    // A new file is made readable by this user only (it holds wallets),
    // before its log exists: SQLite gives the log the file's mode.
    #[cfg(unix)]
    if new {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| corrupt(&e))?;
    }
    // WAL: a commit appends to the log and fsyncs it (synchronous = FULL),
    // so an acknowledged write survives a crash or a power cut; a torn
    // tail of the log (a commit cut short) fails its checksum and is
    // ignored, as it was never acknowledged.
    //
    // Measured with `jumpgate-loadtest bench` (see README): SQLite's
    // default page cache (2 MB) made the thread read pages back from the
    // OS on every group, and checkpoints every 1,000 log pages rewrote the
    // same hot pages (a room's row, the log's last leaf) over and over. A
    // 64 MiB cache and a checkpoint every 8,192 pages (a log of at most
    // ~32 MiB to replay after a crash) took most of both away.
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         PRAGMA synchronous = FULL;
         PRAGMA foreign_keys = OFF;
         PRAGMA cache_size = -65536;
         PRAGMA wal_autocheckpoint = 8192;
         PRAGMA temp_store = MEMORY;",
    )
    .map_err(|e| corrupt(&e))?;
    // Every statement the store runs, prepared once (the default keeps 16,
    // fewer than the store has, and parsing showed in the profile).
    conn.set_prepared_statement_cache_capacity(256);
    Ok(conn)
}
