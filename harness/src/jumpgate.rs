//! `jumpgate serve` processes: the binary cargo built for this workspace,
//! started on a free (or given) loopback address with the environment and
//! arguments asked for, waited for until it listens, and stopped with
//! SIGTERM, SIGKILL, or frozen with SIGSTOP and thawed with SIGCONT.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use crate::Endpoint;
use crate::ports::free_loopback_addr;
use crate::process::{Output, ProcessSpec, ServerProcess, Transcript};

/// Token secret shared by the processes of one test, so that tokens
/// survive a restart.
pub const TEST_SECRET: &str = "jumpgate-test-secret-0123456789abcdef";

/// The server's per-client limits, off: every test or load tester client
/// shares 127.0.0.1, so those limits would measure themselves. The same
/// list as `LimitSettings::UNLIMITED_ENV` in the server crate (this crate
/// does not depend on the server; `jumpgate-e2e` checks that the two
/// agree). Tests of the limits set the ones they check, which win.
pub const NO_CLIENT_LIMITS: &[(&str, &str)] = &[
    ("JUMPGATE_MAX_CONNECTIONS_PER_ADDRESS", "1000000000"),
    ("JUMPGATE_MAX_CONNECTIONS_PER_IDENTITY", "1000000000"),
    ("JUMPGATE_MESSAGES_PER_SECOND_PER_ADDRESS", "0"),
    ("JUMPGATE_ROOMS_PER_MINUTE_PER_ADDRESS", "0"),
    ("JUMPGATE_ROOMS_PER_MINUTE_PER_IDENTITY", "0"),
    ("JUMPGATE_HTTP_REQUESTS_PER_SECOND_PER_ADDRESS", "0"),
];

/// The `jumpgate` binary built by cargo for this workspace, next to the
/// running test binary (`target/<profile>/deps/test-xxxx` →
/// `target/<profile>/jumpgate`); built first if it is not there.
pub fn jumpgate_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary is in target/<profile>/deps");
    let bin = profile_dir.join("jumpgate");
    if !bin.exists() {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = std::process::Command::new(cargo)
            .args(["build", "-p", "jumpgate-server", "--bin", "jumpgate"])
            .status()
            .expect("cargo runs");
        assert!(status.success(), "could not build jumpgate");
    }
    bin
}

/// How to start a [`JumpgateProcess`].
#[derive(Debug, Clone)]
pub struct JumpgateOptions {
    /// What it is, for messages.
    pub name: String,
    /// The `jumpgate` binary.
    pub program: PathBuf,
    /// Where it listens; a free loopback port when `None`.
    pub addr: Option<SocketAddr>,
    /// Arguments after `serve --listen ADDR`.
    pub args: Vec<String>,
    /// Environment variables, after [`NO_CLIENT_LIMITS`] (so they win).
    pub env: Vec<(String, String)>,
    /// Whether [`NO_CLIENT_LIMITS`] are set (the default); off for a run that
    /// measures the server's own per-client limits.
    pub client_limits_off: bool,
    /// Pins it with `taskset -c CPUS` when given.
    pub cpus: Option<String>,
    /// Where its output goes.
    pub output: Output,
}

impl JumpgateOptions {
    /// The binary at `program`, nothing else set: a free port, no extra
    /// arguments, only [`NO_CLIENT_LIMITS`], its output captured.
    pub fn new(name: &str, program: &Path) -> JumpgateOptions {
        JumpgateOptions {
            name: name.to_owned(),
            program: program.to_owned(),
            addr: None,
            args: Vec::new(),
            env: Vec::new(),
            client_limits_off: true,
            cpus: None,
            output: Output::Capture,
        }
    }

    /// The tests' process: [`jumpgate_binary`], instance id `test-PORT` (a
    /// process started again on the same address is the same instance, as
    /// a restarted pod keeps its name, and takes its rooms back at once),
    /// [`TEST_SECRET`], `RUST_LOG=warn`, the memory store (a test names
    /// its Redis or its data directory in `env`), then `env`; its log on
    /// the test's standard error.
    pub fn for_test(addr: SocketAddr, env: &[(&str, String)]) -> JumpgateOptions {
        let mut options = JumpgateOptions::new("jumpgate", &jumpgate_binary());
        options.addr = Some(addr);
        options.output = Output::InheritStderr;
        options.env = [
            ("JUMPGATE_INSTANCE_ID", format!("test-{}", addr.port())),
            ("JUMPGATE_TOKEN_SECRET", TEST_SECRET.to_owned()),
            ("RUST_LOG", "warn".to_owned()),
            ("JUMPGATE_MEMORY", "true".to_owned()),
        ]
        .into_iter()
        .chain(env.iter().cloned())
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        options
    }
}

/// A `jumpgate serve` process. Killed (SIGKILL) on drop.
#[derive(Debug)]
pub struct JumpgateProcess {
    /// Where it listens.
    pub addr: SocketAddr,
    process: ServerProcess,
}

impl JumpgateProcess {
    /// Starts it and returns at once, without waiting for it to listen (for
    /// a process that may refuse to run and exit).
    pub fn spawn(options: &JumpgateOptions) -> Result<JumpgateProcess, String> {
        let addr = options.addr.unwrap_or_else(free_loopback_addr);
        let mut args = vec!["serve".to_owned(), "--listen".to_owned(), addr.to_string()];
        args.extend(options.args.iter().cloned());
        let limits_off = if options.client_limits_off {
            NO_CLIENT_LIMITS
        } else {
            &[]
        };
        let envs: Vec<(String, String)> = limits_off
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .chain(options.env.iter().cloned())
            .collect();
        let spec = ProcessSpec {
            name: &options.name,
            program: &options.program,
            args: &args,
            envs: &envs,
            cpus: options.cpus.as_deref(),
            output: options.output.clone(),
        };
        let process = ServerProcess::spawn(&spec, addr)?;
        Ok(JumpgateProcess { addr, process })
    }

    /// Starts it and waits until it listens; an error if it exits first.
    pub async fn start_with(options: &JumpgateOptions) -> Result<JumpgateProcess, String> {
        let mut process = JumpgateProcess::spawn(options)?;
        process.process.wait_listening().await?;
        Ok(process)
    }

    /// The tests' process ([`JumpgateOptions::for_test`]) on a free port,
    /// with `env`; panics if it does not start.
    pub async fn start(env: &[(&str, String)]) -> JumpgateProcess {
        JumpgateProcess::start_at(free_loopback_addr(), env).await
    }

    /// [`start`](Self::start) on a given address, e.g. the one a killed
    /// process had, so that its clients reconnect to the same place.
    pub async fn start_at(addr: SocketAddr, env: &[(&str, String)]) -> JumpgateProcess {
        Self::start_with(&JumpgateOptions::for_test(addr, env))
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`start`](Self::start) with everything the process prints (its
    /// logs) written to the file `log`.
    pub async fn start_logging(env: &[(&str, String)], log: &Path) -> JumpgateProcess {
        let mut options = JumpgateOptions::for_test(free_loopback_addr(), env);
        options.output = Output::File(log.to_owned());
        Self::start_with(&options)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts a tests' process that may refuse to run and exit at once:
    /// returns without waiting for it to listen, its logs written to `log`.
    pub fn launch_logging(env: &[(&str, String)], log: &Path) -> JumpgateProcess {
        let mut options = JumpgateOptions::for_test(free_loopback_addr(), env);
        options.output = Output::File(log.to_owned());
        Self::spawn(&options).unwrap_or_else(|e| panic!("{e}"))
    }

    /// `ws://ADDR/ws`.
    pub fn ws_url(&self) -> String {
        self.process.ws_url()
    }

    /// What it is, for messages.
    pub fn name(&self) -> &str {
        &self.process.name
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// SIGKILL: the process gets no chance to tidy up. Reaped.
    pub fn kill_9(&mut self) {
        self.process.kill_9();
    }

    /// SIGKILL, returning at once without reaping it.
    pub fn kill_now(&mut self) -> Result<(), String> {
        self.process.kill_now()
    }

    /// Sends a signal (`"STOP"`, `"CONT"`, ...) without waiting: SIGSTOP
    /// freezes the process as a stalled VM or a long GC pause would.
    pub fn signal(&self, name: &str) {
        self.process.signal(name);
    }

    /// SIGTERM without waiting for the exit (see [`wait`](Self::wait)).
    pub fn begin_terminate(&self) {
        self.signal("TERM");
    }

    /// The exit status if the process has exited by itself (it is then
    /// reaped), else `None`.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.process.try_wait()
    }

    /// Whether it has exited.
    pub fn has_exited(&mut self) -> bool {
        self.process.has_exited()
    }

    /// Waits for the process to exit.
    pub fn wait(&mut self) -> ExitStatus {
        self.process.wait()
    }

    /// SIGTERM, then waits for the process to exit.
    pub fn terminate(&mut self) -> ExitStatus {
        self.process.terminate()
    }

    /// What it has written (with [`Output::Capture`]).
    pub fn transcript(&self) -> Transcript {
        self.process.transcript()
    }

    /// Its last lines, joined (with [`Output::Capture`]).
    pub fn output_tail(&self) -> String {
        self.process.output_tail()
    }

    /// Kills and reaps it.
    pub fn stop(self) {}
}

impl Endpoint for JumpgateProcess {
    fn ws(&self) -> String {
        self.ws_url()
    }
}

/// A `jumpgate bot-worker` process searching a Redis's jobs, with its
/// metrics served on a free loopback address (which is also how it is
/// known to have started). Killed (SIGKILL) on drop.
#[derive(Debug)]
pub struct BotWorkerProcess {
    /// Where its metrics are served.
    pub metrics_addr: SocketAddr,
    process: ServerProcess,
}

impl BotWorkerProcess {
    /// Starts a worker named `name` with `threads` searches at once on
    /// `redis_url`, `env` added, and waits until it serves its metrics.
    pub async fn start(
        name: &str,
        redis_url: &str,
        threads: usize,
        env: &[(&str, String)],
    ) -> BotWorkerProcess {
        BotWorkerProcess::start_with(&jumpgate_binary(), name, redis_url, threads, env, None)
            .await
            .expect("the worker starts")
    }

    /// [`start`](Self::start) with the binary `program`, pinned with
    /// `taskset -c cpus` when given; an error if it does not start.
    pub async fn start_with(
        program: &Path,
        name: &str,
        redis_url: &str,
        threads: usize,
        env: &[(&str, String)],
        cpus: Option<&str>,
    ) -> Result<BotWorkerProcess, String> {
        let addr = free_loopback_addr();
        let args = vec![
            "bot-worker".to_owned(),
            "--redis-url".to_owned(),
            redis_url.to_owned(),
            "--threads".to_owned(),
            threads.to_string(),
            "--name".to_owned(),
            name.to_owned(),
            "--metrics-listen".to_owned(),
            addr.to_string(),
        ];
        let envs: Vec<(String, String)> = std::iter::once(("RUST_LOG", "warn".to_owned()))
            .chain(env.iter().cloned())
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        let spec = ProcessSpec {
            name,
            program,
            args: &args,
            envs: &envs,
            cpus,
            output: Output::InheritStderr,
        };
        let mut process = ServerProcess::spawn(&spec, addr)?;
        process.wait_listening().await?;
        Ok(BotWorkerProcess {
            metrics_addr: addr,
            process,
        })
    }

    /// The value of the counter or gauge `name` (all its labels summed).
    pub async fn metric(&self, name: &str) -> f64 {
        let answer = crate::http::http_get(self.metrics_addr, "/metrics")
            .await
            .expect("the worker answers /metrics");
        answer
            .body
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter(|l| {
                l.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with([' ', '{']))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// SIGKILL: the process gets no chance to tidy up. Reaped.
    pub fn kill_9(&mut self) {
        self.process.kill_9();
    }

    /// Sends a signal (`"STOP"`, `"CONT"`, ...) without waiting.
    pub fn signal(&self, name: &str) {
        self.process.signal(name);
    }

    /// How it exited, if it has (reaped then).
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.process.try_wait()
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }
}
