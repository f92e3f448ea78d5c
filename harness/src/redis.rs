//! A `redis-server` of our own on a free loopback port, its data in a
//! scratch directory removed with it: with an append-only file fsynced on
//! every write (the tests' default, so a SIGKILL loses nothing), every
//! second (Redis's default) or none; restarted on the same data, paused,
//! backed up, and restored from a snapshot or an AOF copy.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::ports::free_port;
use crate::process::{Output, ProcessSpec, START_PATIENCE, ServerProcess};

/// How Redis keeps its append-only file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendOnly {
    /// On, fsynced before every write is answered.
    Always,
    /// On, fsynced once a second (Redis's default).
    EverySecond,
    /// Off: nothing is kept.
    Off,
}

impl AppendOnly {
    fn args(self) -> &'static [&'static str] {
        match self {
            AppendOnly::Always => &["--appendonly", "yes", "--appendfsync", "always"],
            AppendOnly::EverySecond => &["--appendonly", "yes", "--appendfsync", "everysec"],
            AppendOnly::Off => &["--appendonly", "no"],
        }
    }
}

/// How to start a [`RedisServer`].
#[derive(Debug, Clone)]
pub struct RedisOptions {
    /// The `redis-server` binary.
    pub program: PathBuf,
    /// Its append-only file.
    pub append_only: AppendOnly,
    /// Pins it with `taskset -c CPUS` when given.
    pub cpus: Option<String>,
}

impl Default for RedisOptions {
    /// `redis-server` from `PATH`, every write fsynced, not pinned.
    fn default() -> Self {
        RedisOptions {
            program: PathBuf::from("redis-server"),
            append_only: AppendOnly::Always,
            cpus: None,
        }
    }
}

/// A running (or killed, to be restarted) `redis-server`. Killed on drop,
/// and its directory removed.
#[derive(Debug)]
pub struct RedisServer {
    /// Its loopback port.
    pub port: u16,
    /// Its data directory.
    pub dir: PathBuf,
    options: RedisOptions,
    /// Arguments after the usual ones (a cluster node's).
    extra: Vec<String>,
    process: Option<ServerProcess>,
}

impl RedisServer {
    /// Starts one with the tests' options; panics if it cannot.
    pub async fn start() -> RedisServer {
        Self::start_with(&RedisOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e} (the test command installs redis-server)"))
    }

    /// Starts one on a fresh port and directory.
    pub async fn start_with(options: &RedisOptions) -> Result<RedisServer, String> {
        Self::start_prepared(options, Vec::new(), |_| Ok(())).await
    }

    /// Starts one after `prepare` has filled its fresh directory, with
    /// `extra` arguments after the usual ones.
    pub(crate) async fn start_prepared(
        options: &RedisOptions,
        extra: Vec<String>,
        prepare: impl FnOnce(&Path) -> Result<(), String>,
    ) -> Result<RedisServer, String> {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!(
            "jumpgate-redis-{}-{port}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut server = RedisServer {
            port,
            dir,
            options: options.clone(),
            extra,
            process: None,
        };
        prepare(&server.dir)?;
        server.launch(&[]).await?;
        Ok(server)
    }

    /// A Redis of its own started on a copy of an AOF directory (as
    /// [`backup`](Self::backup) leaves it), with the tests' options.
    pub async fn start_from_aof(copy: &Path) -> RedisServer {
        Self::start_prepared(&RedisOptions::default(), Vec::new(), |dir| {
            copy_dir(copy, &dir.join("appendonlydir"))
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// `redis://127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Its process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(ServerProcess::pid)
    }

    /// Starts on the same port and data with `extra` arguments after the
    /// usual ones (so they win), and waits until it answers `PING` (not
    /// merely listens: Redis answers `-LOADING` while it reads its files).
    async fn launch(&mut self, extra: &[&str]) -> Result<(), String> {
        let mut args: Vec<String> = ["--port", &self.port.to_string(), "--bind", "127.0.0.1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.push("--dir".into());
        args.push(self.dir.to_string_lossy().into_owned());
        args.extend(
            self.options
                .append_only
                .args()
                .iter()
                .map(|s| s.to_string()),
        );
        args.extend(["--save".to_owned(), String::new()]);
        args.extend(self.extra.iter().cloned());
        args.extend(extra.iter().map(|s| s.to_string()));
        let spec = ProcessSpec {
            name: "redis-server",
            program: &self.options.program,
            args: &args,
            envs: &[],
            cpus: self.options.cpus.as_deref(),
            output: Output::Capture,
        };
        let mut process = ServerProcess::spawn(&spec, self.addr())?;
        process
            .wait_ready("answer PING", |addr| async move { redis_ping(addr).await })
            .await?;
        self.process = Some(process);
        Ok(())
    }

    /// Starts again on the same port and data; panics if it cannot.
    pub async fn restart(&mut self) {
        self.launch(&[]).await.unwrap_or_else(|e| panic!("{e}"));
    }

    /// Kills Redis with SIGKILL (it can be [restarted](Self::restart)).
    pub fn kill(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.kill_9();
        }
    }

    /// Kills it and removes its directory.
    pub fn stop(self) {}

    /// Stalls every client for `ms` milliseconds (`CLIENT PAUSE ms ALL`):
    /// commands are accepted and queued, and run when the pause ends, as
    /// after a slow fsync, a fork or a network blip.
    pub async fn pause(&self, ms: u64) {
        let reply = self
            .command(&["CLIENT", "PAUSE", &ms.to_string(), "ALL"])
            .await;
        assert!(reply.starts_with("+OK"), "CLIENT PAUSE answered {reply:?}");
    }

    /// Sends one command on a fresh connection and returns the raw reply
    /// (its first read); panics if Redis cannot be reached.
    pub async fn command(&self, args: &[&str]) -> String {
        self.try_command(args)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`command`](Self::command)'s reply as its values, nested arrays
    /// flattened and nils left out (`XRANGE`, `SMEMBERS`, `TTL`, ...).
    pub async fn values(&self, args: &[&str]) -> Vec<String> {
        reply_values(&self.command(args).await)
    }

    /// [`command`](Self::command), an error instead of a panic.
    pub async fn try_command(&self, args: &[&str]) -> Result<String, String> {
        let io = |e: std::io::Error| format!("Redis on port {}: {e}", self.port);
        let mut s = tokio::net::TcpStream::connect(self.addr())
            .await
            .map_err(io)?;
        let mut request = format!("*{}\r\n", args.len());
        for a in args {
            request.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(request.as_bytes()).await.map_err(io)?;
        let mut buf = vec![0u8; 64 * 1024];
        let n = s.read(&mut buf).await.map_err(io)?;
        Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    /// The documented backup: `SAVE` (the snapshot is written and fsynced
    /// before it answers), then `dump.rdb` copied to `to/dump.rdb`. The AOF
    /// directory is copied beside it (`to/appendonlydir`), as an operator
    /// copying the data directory would.
    pub async fn backup(&self, to: &Path) {
        let reply = self.command(&["SAVE"]).await;
        assert!(reply.starts_with("+OK"), "SAVE answered {reply:?}");
        std::fs::create_dir_all(to).unwrap();
        std::fs::copy(self.dir.join("dump.rdb"), to.join("dump.rdb")).unwrap();
        copy_dir(&self.dir.join("appendonlydir"), &to.join("appendonlydir")).unwrap();
    }

    /// Restores the RDB snapshot `rdb` over this server's data: Redis
    /// stopped, the AOF directory removed and the snapshot put in its place,
    /// Redis started once with AOF off, AOF turned on by `CONFIG SET` (which
    /// rewrites the AOF from the data just loaded), then started again as
    /// usual. Redis 7.0 started with `appendonly yes` and no AOF manifest
    /// ignores `dump.rdb`: it starts empty and writes an empty AOF base.
    pub async fn restore_rdb(&mut self, rdb: &Path) {
        self.kill();
        let aof = self.dir.join("appendonlydir");
        let _ = std::fs::remove_dir_all(&aof);
        std::fs::copy(rdb, self.dir.join("dump.rdb")).unwrap();
        self.launch(&["--appendonly", "no"])
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let reply = self.command(&["CONFIG", "SET", "appendonly", "yes"]).await;
        assert!(reply.starts_with("+OK"), "CONFIG SET answered {reply:?}");
        let deadline = tokio::time::Instant::now() + START_PATIENCE;
        loop {
            let info = self.command(&["INFO", "persistence"]).await;
            let rewritten = info.contains("aof_rewrite_in_progress:0")
                && info.contains("aof_rewrite_scheduled:0")
                && info.contains("aof_last_bgrewrite_status:ok")
                && aof.join("appendonly.aof.manifest").exists();
            if rewritten {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the AOF was never rewritten: {info}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.kill();
        self.restart().await;
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether a Redis at `addr` answers `PING` with `+PONG`.
pub async fn redis_ping(addr: SocketAddr) -> bool {
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
        return false;
    };
    if s.write_all(b"PING\r\n").await.is_err() {
        return false;
    }
    let mut buf = [0u8; 16];
    matches!(s.read(&mut buf).await, Ok(n) if buf[..n].starts_with(b"+PONG"))
}

/// Copies the files of directory `from` (not its subdirectories) into `to`.
fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    let io = |e: std::io::Error| format!("copying {} to {}: {e}", from.display(), to.display());
    std::fs::create_dir_all(to).map_err(io)?;
    for entry in std::fs::read_dir(from).map_err(io)? {
        let entry = entry.map_err(io)?;
        std::fs::copy(entry.path(), to.join(entry.file_name())).map_err(io)?;
    }
    Ok(())
}

/// The values of a raw RESP2 reply, nested arrays flattened and nils left
/// out; panics on an error reply.
pub fn reply_values(reply: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = reply.split("\r\n").filter(|l| !l.is_empty());
    while let Some(line) = lines.next() {
        match line.as_bytes()[0] {
            b'*' => {}
            b'$' if line == "$-1" => {}
            b'$' => out.push(lines.next().unwrap_or_default().to_owned()),
            b':' | b'+' => out.push(line[1..].to_owned()),
            _ => panic!("unexpected reply {reply:?}"),
        }
    }
    out
}
