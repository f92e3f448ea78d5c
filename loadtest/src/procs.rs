//! Child processes: the servers `bench` starts, optionally pinned with `taskset`, and
//! always killed when dropped (so also on error or panic).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::Instant;

/// How long a child may take to start listening.
const START_PATIENCE: Duration = Duration::from_secs(15);
/// Lines of a child's stderr kept for error messages.
const TAIL_LINES: usize = 20;

/// A running child server.
#[derive(Debug)]
pub struct Spawned {
    /// What it is, for messages.
    pub name: String,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its process id (the server's own, also when started through `taskset`, which
    /// execs it).
    pub pid: Option<u32>,
    child: Child,
    tail: Arc<Mutex<VecDeque<String>>>,
}

impl Spawned {
    /// Starts `program args…` with `envs`, under `taskset -c cpus` when given, and waits
    /// until `addr` accepts connections.
    pub async fn start(
        name: &str,
        program: &Path,
        args: &[String],
        envs: &[(&str, String)],
        cpus: Option<&str>,
        addr: SocketAddr,
    ) -> Result<Spawned, String> {
        let mut command = match cpus {
            Some(cpus) => {
                let mut command = Command::new("taskset");
                command.arg("-c").arg(cpus).arg(program);
                command
            }
            None => Command::new(program),
        };
        command
            .args(args)
            .envs(envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start {name} ({}): {e}", program.display()))?;
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(stderr) = child.stderr.take() {
            // Keep draining so the child never blocks on a full pipe.
            let tail = tail.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
                    if tail.len() == TAIL_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            });
        }
        let mut spawned = Spawned {
            name: name.to_owned(),
            addr,
            pid: child.id(),
            child,
            tail,
        };
        spawned.wait_listening().await?;
        Ok(spawned)
    }

    async fn wait_listening(&mut self) -> Result<(), String> {
        let give_up = Instant::now() + START_PATIENCE;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                // Give the stderr reader a moment to catch the last words.
                tokio::time::sleep(Duration::from_millis(100)).await;
                return Err(format!(
                    "{} exited at start ({status}): {}",
                    self.name,
                    self.stderr_tail()
                ));
            }
            if tokio::net::TcpStream::connect(self.addr).await.is_ok() {
                return Ok(());
            }
            if Instant::now() >= give_up {
                return Err(format!(
                    "{} did not listen on {} within {START_PATIENCE:?}",
                    self.name, self.addr
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The last lines the child wrote to stderr, joined.
    pub fn stderr_tail(&self) -> String {
        let tail = self.tail.lock().unwrap_or_else(|e| e.into_inner());
        tail.iter().cloned().collect::<Vec<_>>().join(" / ")
    }

    /// `ws://ADDR/ws`.
    pub fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.addr)
    }

    /// Kills the child and reaps it.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}
