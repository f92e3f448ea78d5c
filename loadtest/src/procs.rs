//! Child processes: the servers `bench` starts (and Redis and HAProxy for the
//! multi-instance benchmarks), optionally pinned with `taskset`, and always killed when
//! dropped (so also on error or panic).

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
/// Lines of a child's output kept for error messages and reports.
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
    transcript: Arc<Mutex<Transcript>>,
}

/// What a child wrote (stdout and stderr together): the last lines, and the
/// warnings and errors of a `tracing` log.
#[derive(Debug, Default, Clone)]
pub struct Transcript {
    /// The last [`TAIL_LINES`] lines.
    pub tail: VecDeque<String>,
    /// Lines logged at WARN.
    pub warnings: usize,
    /// Lines logged at ERROR.
    pub errors: usize,
    /// The first [`TAIL_LINES`] of those lines.
    pub first_notable: Vec<String>,
}

impl Transcript {
    fn add(&mut self, line: String) {
        let warning = line.contains(" WARN ");
        let error = line.contains(" ERROR ");
        self.warnings += usize::from(warning);
        self.errors += usize::from(error);
        if (warning || error) && self.first_notable.len() < TAIL_LINES {
            self.first_notable.push(line.clone());
        }
        if self.tail.len() == TAIL_LINES {
            self.tail.pop_front();
        }
        self.tail.push_back(line);
    }
}

async fn transcribe(stream: impl tokio::io::AsyncRead + Unpin, transcript: Arc<Mutex<Transcript>>) {
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        transcript
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add(line);
    }
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
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start {name} ({}): {e}", program.display()))?;
        let transcript = Arc::new(Mutex::new(Transcript::default()));
        // Keep draining both streams so the child never blocks on a full pipe.
        if let Some(stdout) = child.stdout.take() {
            tokio::spawn(transcribe(stdout, transcript.clone()));
        }
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(transcribe(stderr, transcript.clone()));
        }
        let mut spawned = Spawned {
            name: name.to_owned(),
            addr,
            pid: child.id(),
            child,
            transcript,
        };
        spawned.wait_listening().await?;
        Ok(spawned)
    }

    async fn wait_listening(&mut self) -> Result<(), String> {
        let give_up = Instant::now() + START_PATIENCE;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                // Give the output readers a moment to catch the last words.
                tokio::time::sleep(Duration::from_millis(100)).await;
                return Err(format!(
                    "{} exited at start ({status}): {}",
                    self.name,
                    self.output_tail()
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

    /// The last lines the child wrote, joined.
    pub fn output_tail(&self) -> String {
        let transcript = self.transcript();
        transcript.tail.into_iter().collect::<Vec<_>>().join(" / ")
    }

    /// What the child has written so far.
    pub fn transcript(&self) -> Transcript {
        self.transcript
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// `ws://ADDR/ws`.
    pub fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.addr)
    }

    /// Kills the child and reaps it.
    pub async fn stop(mut self) {
        self.halt().await;
    }

    /// Kills the child and reaps it, keeping the handle.
    pub async fn halt(&mut self) {
        let _ = self.child.kill().await;
    }

    /// Sends the child SIGKILL and returns at once, without reaping it: the moment an
    /// instance dies, for the failover benchmark.
    pub fn kill_now(&mut self) -> Result<(), String> {
        self.child
            .start_kill()
            .map_err(|e| format!("cannot kill {}: {e}", self.name))
    }

    /// Whether the child has exited.
    pub fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
}
