//! A child process that serves on a loopback address: started (under
//! `taskset -c` when asked), waited for until it is ready or has exited,
//! signalled, and killed with SIGKILL when dropped, so also on an error or
//! a panic.

use std::collections::VecDeque;
use std::io::BufRead;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// How long a process may take to become ready. Generous: test binaries
/// run side by side on a loaded CI machine.
pub const START_PATIENCE: Duration = Duration::from_secs(15);

/// Lines of a child's output kept for error messages and reports.
const TAIL_LINES: usize = 20;

/// Where a child's output goes.
#[derive(Debug, Clone, Default)]
pub enum Output {
    /// Both streams kept in a [`Transcript`] (read by threads of their own,
    /// so the child never blocks on a full pipe).
    #[default]
    Capture,
    /// Standard output dropped, standard error shown with the test's own.
    InheritStderr,
    /// Both streams written to this file.
    File(PathBuf),
}

/// What a child wrote (stdout and stderr together): the last lines, and the
/// warnings and errors of a `tracing` log.
#[derive(Debug, Default, Clone)]
pub struct Transcript {
    /// The last lines.
    pub tail: VecDeque<String>,
    /// Lines logged at WARN.
    pub warnings: usize,
    /// Lines logged at ERROR.
    pub errors: usize,
    /// The first few of those lines.
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

/// What to start.
#[derive(Debug, Clone)]
pub struct ProcessSpec<'a> {
    /// What it is, for messages.
    pub name: &'a str,
    /// The program.
    pub program: &'a Path,
    /// Its arguments.
    pub args: &'a [String],
    /// Environment variables added to this process's own.
    pub envs: &'a [(String, String)],
    /// Pins it with `taskset -c CPUS` when given.
    pub cpus: Option<&'a str>,
    /// Where its output goes.
    pub output: Output,
}

/// A running child that serves on `addr`.
#[derive(Debug)]
pub struct ServerProcess {
    /// What it is, for messages.
    pub name: String,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its process id (the program's own, also when started through
    /// `taskset`, which execs it).
    pid: u32,
    /// `None` once reaped.
    child: Option<Child>,
    transcript: Arc<Mutex<Transcript>>,
}

impl ServerProcess {
    /// Starts it and returns at once, without waiting for it to listen.
    pub fn spawn(spec: &ProcessSpec<'_>, addr: SocketAddr) -> Result<ServerProcess, String> {
        let mut command = match spec.cpus {
            Some(cpus) => {
                let mut command = Command::new("taskset");
                command.arg("-c").arg(cpus).arg(spec.program);
                command
            }
            None => Command::new(spec.program),
        };
        command
            .args(spec.args)
            .envs(spec.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        match &spec.output {
            Output::Capture => {
                command.stdout(Stdio::piped()).stderr(Stdio::piped());
            }
            Output::InheritStderr => {
                command.stdout(Stdio::null()).stderr(Stdio::inherit());
            }
            Output::File(path) => {
                let file = std::fs::File::create(path)
                    .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
                let err = file.try_clone().map_err(|e| e.to_string())?;
                command.stdout(file).stderr(err);
            }
        }
        let mut child = command.spawn().map_err(|e| {
            format!(
                "cannot start {} ({}): {e}",
                spec.name,
                spec.program.display()
            )
        })?;
        let transcript = Arc::new(Mutex::new(Transcript::default()));
        if let Some(stdout) = child.stdout.take() {
            transcribe(stdout, transcript.clone());
        }
        if let Some(stderr) = child.stderr.take() {
            transcribe(stderr, transcript.clone());
        }
        Ok(ServerProcess {
            name: spec.name.to_owned(),
            addr,
            pid: child.id(),
            child: Some(child),
            transcript,
        })
    }

    /// Starts it and waits until `addr` accepts connections.
    pub async fn start(spec: &ProcessSpec<'_>, addr: SocketAddr) -> Result<ServerProcess, String> {
        let mut process = ServerProcess::spawn(spec, addr)?;
        process.wait_listening().await?;
        Ok(process)
    }

    /// Waits until its address accepts connections; an error if it exits
    /// first (with its last words) or takes longer than [`START_PATIENCE`].
    ///
    /// The listening socket must be the child's own: a process that could
    /// not bind its port (another test's server took it first) is not
    /// mistaken for ready because someone else answers there.
    pub async fn wait_listening(&mut self) -> Result<(), String> {
        let pid = self.pid();
        self.wait_ready("listen", |addr| async move {
            tokio::net::TcpStream::connect(addr).await.is_ok() && listens_on(pid, addr.port())
        })
        .await
    }

    /// Waits until `ready(addr)` says yes; an error if the process exits
    /// first or [`START_PATIENCE`] passes. `what` names the wait in errors.
    pub async fn wait_ready<F, Fut>(&mut self, what: &str, ready: F) -> Result<(), String>
    where
        F: Fn(SocketAddr) -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let give_up = Instant::now() + START_PATIENCE;
        loop {
            if let Some(status) = self.try_wait() {
                // Give the output readers a moment to catch the last words.
                tokio::time::sleep(Duration::from_millis(100)).await;
                return Err(format!(
                    "{} exited at start ({status}): {}",
                    self.name,
                    self.output_tail()
                ));
            }
            if ready(self.addr).await {
                return Ok(());
            }
            if Instant::now() >= give_up {
                return Err(format!(
                    "{} did not {what} on {} within {START_PATIENCE:?}: {}",
                    self.name,
                    self.addr,
                    self.output_tail()
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Its process id (still the one it had once it has exited).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// `ws://ADDR/ws`.
    pub fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.addr)
    }

    /// The last lines it wrote, joined (only with [`Output::Capture`]).
    pub fn output_tail(&self) -> String {
        self.transcript()
            .tail
            .into_iter()
            .collect::<Vec<_>>()
            .join(" / ")
    }

    /// What it has written so far (only with [`Output::Capture`]).
    pub fn transcript(&self) -> Transcript {
        self.transcript
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// SIGKILL, then reaps it: it gets no chance to tidy up.
    pub fn kill_9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGKILL and returns at once, without reaping it: the moment an
    /// instance dies, as the failover benchmark times it.
    pub fn kill_now(&mut self) -> Result<(), String> {
        match &mut self.child {
            Some(child) => child
                .kill()
                .map_err(|e| format!("cannot kill {}: {e}", self.name)),
            None => Ok(()),
        }
    }

    /// Sends a signal by name (`"TERM"`, `"STOP"`, `"CONT"`…) with
    /// kill(1), without waiting: SIGSTOP freezes the process as a stalled
    /// VM or a long pause would. Panics if kill(1) fails.
    pub fn signal(&self, name: &str) {
        let pid = self.pid.to_string();
        let status = Command::new("kill")
            .args([&format!("-{name}"), pid.as_str()])
            .status()
            .expect("kill(1) is installed (the test command installs it)");
        assert!(status.success(), "kill -{name} {pid}");
    }

    /// Its exit status if it has exited by itself (it is then reaped), else
    /// `None`.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        let status = self.child.as_mut()?.try_wait().ok()??;
        self.child = None;
        Some(status)
    }

    /// Whether it has exited.
    pub fn has_exited(&mut self) -> bool {
        self.child.is_none() || self.try_wait().is_some()
    }

    /// Waits for it to exit. Panics if it was already reaped.
    pub fn wait(&mut self) -> ExitStatus {
        self.child
            .take()
            .expect("running")
            .wait()
            .expect("the child can be waited for")
    }

    /// SIGTERM, then waits for it to exit.
    pub fn terminate(&mut self) -> ExitStatus {
        self.signal("TERM");
        self.wait()
    }

    /// Kills and reaps it.
    pub fn stop(mut self) {
        self.kill_9();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill_9();
    }
}

/// Reads `stream` line by line into `transcript` on a thread of its own,
/// until the child closes it.
fn transcribe(stream: impl std::io::Read + Send + 'static, transcript: Arc<Mutex<Transcript>>) {
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            transcript
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .add(line);
        }
    });
}

/// Whether process `pid` holds a socket listening on TCP `port` (read from
/// `/proc`; true where there is no `/proc` to ask).
fn listens_on(pid: u32, port: u16) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return !Path::new("/proc/self/fd").exists();
    };
    let ours: std::collections::HashSet<String> = fds
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy();
            Some(link.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    let port = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|table| {
        std::fs::read_to_string(table).is_ok_and(|table| {
            table.lines().skip(1).any(|line| {
                let cols: Vec<&str> = line.split_whitespace().collect();
                // local_address, state (0A = LISTEN), inode
                cols.len() > 9
                    && cols[1].ends_with(&port)
                    && cols[3] == "0A"
                    && ours.contains(cols[9])
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transcript_counts_warnings_and_keeps_the_tail() {
        let mut t = Transcript::default();
        for n in 0..30 {
            t.add(format!("2026 INFO line {n}"));
        }
        t.add("2026 WARN slow".into());
        t.add("2026 ERROR broken".into());
        assert_eq!((t.warnings, t.errors), (1, 1));
        assert_eq!(t.tail.len(), TAIL_LINES);
        assert_eq!(t.tail.back().unwrap(), "2026 ERROR broken");
        assert_eq!(t.first_notable.len(), 2);
    }

    #[tokio::test]
    async fn a_process_that_exits_at_start_is_an_error_with_its_words() {
        let args = vec!["-c".to_owned(), "echo refused to start; exit 3".to_owned()];
        let spec = ProcessSpec {
            name: "sh",
            program: Path::new("sh"),
            args: &args,
            envs: &[],
            cpus: None,
            output: Output::Capture,
        };
        let error = ServerProcess::start(&spec, crate::free_loopback_addr())
            .await
            .unwrap_err();
        assert!(error.contains("exited at start"), "{error}");
        assert!(error.contains("refused to start"), "{error}");
    }

    #[test]
    fn a_listener_is_known_to_belong_to_its_own_process() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(listens_on(std::process::id(), port));
        drop(listener);
        assert!(!listens_on(std::process::id(), port));
        // PID 1 is not this test: it does not own this test's listener.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        assert!(!listens_on(1, listener.local_addr().unwrap().port()));
    }
}
