//! Shared helpers for the end-to-end tests: start a real server on port 0
//! and drive it with the protocol crate's real WebSocket client.
//!
//! Over 700 lines: it gathers the process helpers every e2e test shares
//! (servers, Redis, players); the balancer and tables are split out.

pub mod balancer;
pub mod table;

use std::net::SocketAddr;
use std::time::Duration;

use jumpgate_protocol::client::{Client, ClientError};
use jumpgate_protocol::{ClientMessage, Encoding, ErrorCode, Phase, RoomState, ServerMessage};
use jumpgate_server::config::Settings;
use tokio::sync::oneshot;

/// How long a test waits for any one message before failing.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// A running server; dropping it shuts the server down.
#[derive(Debug)]
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl TestServer {
    pub async fn start(configure: impl FnOnce(&mut Settings)) -> TestServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut settings = Settings::for_address(addr);
        // Every test client shares 127.0.0.1: the edge tests set the
        // per-client limits they check.
        settings.limits = jumpgate_server::limits::LimitSettings::unlimited();
        configure(&mut settings);
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(jumpgate_server::run(listener, settings, async {
            let _ = rx.await;
        }));
        TestServer {
            addr,
            stop: Some(tx),
        }
    }

    pub fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.addr)
    }

    pub fn http_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A connected, greeted client with its identity, at the wire level: one plain
/// [`Client`] whose every frame the test sends and reads itself.
///
/// Not the SDK's `Session` on purpose: the tests of the wire protocol assert on the
/// exact messages the server sends (each `state`, `ack`, `error` and close code, in
/// order) and send what a session never would (a wrong `seq`, a repeated request, a
/// malformed frame), so they need the raw frames. Tests of games that must survive
/// reconnections use [`table`], which is built on `Session`.
#[derive(Debug)]
pub struct Player {
    pub client: Client,
    pub id: String,
    pub name: String,
    pub token: String,
    /// The newest room state seen.
    pub state: Option<RoomState>,
    /// When the latest messages were sent, to stay under the server's rate
    /// limit the way a well-behaved client does.
    sent_at: std::collections::VecDeque<tokio::time::Instant>,
}

/// Messages a test client sends per second at most (the server refuses
/// more than 40 by default).
const SEND_RATE: usize = 30;

impl Player {
    pub async fn connect(server: &TestServer, encoding: Encoding) -> Player {
        Player::connect_with(server, encoding, None).await
    }

    pub async fn connect_with(
        server: &TestServer,
        encoding: Encoding,
        token: Option<String>,
    ) -> Player {
        Player::connect_to(server, encoding, token).await
    }

    pub fn seq(&mut self) -> u32 {
        self.client.next_seq()
    }

    /// Sends a message built from the next seq.
    pub async fn send(&mut self, build: impl FnOnce(u32) -> ClientMessage) -> u32 {
        if self.sent_at.len() >= SEND_RATE {
            let oldest = self.sent_at.pop_front().expect("not empty");
            tokio::time::sleep_until(oldest + Duration::from_secs(1)).await;
        }
        self.sent_at.push_back(tokio::time::Instant::now());
        let seq = self.seq();
        self.client.send(&build(seq)).await.unwrap();
        seq
    }

    /// Receives the next message, remembering states.
    pub async fn recv(&mut self) -> ServerMessage {
        let message = recv(&mut self.client).await;
        self.note(&message);
        message
    }

    /// Remembers a state (and checks its version never goes down).
    fn note(&mut self, message: &ServerMessage) {
        if let ServerMessage::State(state) = message {
            if let Some(old) = &self.state {
                assert!(state.version >= old.version, "versions never go down");
            }
            self.state = Some(state.clone());
        }
    }

    /// Waits for the ack of `seq`, failing on an error for it.
    pub async fn expect_ack(&mut self, seq: u32) {
        loop {
            match self.recv().await {
                ServerMessage::Ack { seq: s } if s == seq => return,
                ServerMessage::Error {
                    seq: Some(s),
                    code,
                    message,
                } if s == seq => {
                    panic!("seq {seq} refused: {code} {message}")
                }
                ServerMessage::Error {
                    seq: None,
                    code: ErrorCode::RateLimited,
                    ..
                } => panic!("rate limited while waiting for the ack of seq {seq}"),
                _ => {}
            }
        }
    }

    /// Waits for an error for `seq` and returns its code.
    pub async fn expect_error(&mut self, seq: Option<u32>) -> ErrorCode {
        loop {
            match self.recv().await {
                ServerMessage::Error { seq: s, code, .. } if s == seq || seq.is_none() => {
                    return code;
                }
                ServerMessage::Ack { seq: s } if Some(s) == seq => panic!("seq {s} was accepted"),
                _ => {}
            }
        }
    }

    /// Receives until a state satisfies `pred`.
    pub async fn state_until(&mut self, pred: impl Fn(&RoomState) -> bool) -> RoomState {
        if let Some(state) = &self.state
            && pred(state)
        {
            return state.clone();
        }
        loop {
            if let ServerMessage::State(state) = self.recv().await
                && pred(&state)
            {
                return state;
            }
        }
    }

    pub async fn phase(&mut self, phase: Phase) -> RoomState {
        self.state_until(|s| s.phase == phase).await
    }

    /// Plays the first legal move (it must be this player's turn).
    pub async fn play_first_legal(&mut self) -> String {
        let (seq, notation) = self.send_first_legal().await;
        self.expect_ack(seq).await;
        notation
    }

    /// The notation of the first legal move in the newest state.
    pub fn first_legal_notation(&self) -> String {
        let game = self.state.as_ref().and_then(|s| s.game.as_ref());
        game.expect("a game").legal_moves[0].notation.clone()
    }

    /// Sends the first legal move by notation, without waiting for its answer:
    /// its `seq` and notation.
    pub async fn send_first_legal(&mut self) -> (u32, String) {
        let notation = self.first_legal_notation();
        let text = notation.clone();
        let seq = self
            .send(|seq| ClientMessage::Move {
                seq,
                notation: Some(text),
                path: None,
            })
            .await;
        (seq, notation)
    }

    /// Whether it is this player's turn in the newest state.
    pub fn my_turn(&self) -> bool {
        let Some(state) = &self.state else {
            return false;
        };
        let Some(game) = &state.game else {
            return false;
        };
        let seat = state
            .players
            .iter()
            .position(|p| p.as_ref().is_some_and(|p| p.id == self.id));
        let Some(seat) = seat else { return false };
        let dark = usize::from(game.dark_seat) == seat;
        let turn_is_dark = game.turn == jumpgate_protocol::Color::Dark;
        game.result.is_none() && dark == turn_is_dark
    }
}

/// Receives one message or fails the test after [`PATIENCE`].
pub async fn recv(client: &mut Client) -> ServerMessage {
    match tokio::time::timeout(PATIENCE, client.recv()).await {
        Ok(Ok(message)) => message,
        Ok(Err(e)) => panic!("connection failed: {e}"),
        Err(_) => panic!("no message within {PATIENCE:?}"),
    }
}

/// Waits for the connection to close; returns the close code.
pub async fn closed(client: &mut Client) -> Option<u16> {
    loop {
        match tokio::time::timeout(PATIENCE, client.recv()).await {
            Ok(Ok(_)) => continue,
            Ok(Err(ClientError::Closed { code, .. })) => return Some(code),
            Ok(Err(_)) => return None,
            Err(_) => panic!("connection did not close"),
        }
    }
}

/// A host and a guest seated in a fresh lobby, the series started, both
/// speaking `encoding`.
pub async fn seated_pair(
    server: &TestServer,
    encoding: Encoding,
    rule_set: jumpgate_protocol::RuleSet,
    series_length: u8,
) -> (Player, Player, String) {
    seated_pair_on(server, [encoding; 2], rule_set, series_length).await
}

/// A host (MessagePack) and a guest (JSON) seated in a new public lobby on
/// any endpoint, the series started; returns them and the lobby's code.
pub async fn lobby_pair(
    endpoint: &impl Endpoint,
    rule_set: jumpgate_protocol::RuleSet,
    series_length: u8,
) -> (Player, Player, String) {
    seated_pair_on(
        endpoint,
        [Encoding::MsgPack, Encoding::Json],
        rule_set,
        series_length,
    )
    .await
}

/// A host and a guest (speaking `encodings[0]` and `[1]`) seated in a new
/// public lobby on any endpoint, the guest joining by the code in lower
/// case; the series started.
pub async fn seated_pair_on(
    endpoint: &impl Endpoint,
    encodings: [Encoding; 2],
    rule_set: jumpgate_protocol::RuleSet,
    series_length: u8,
) -> (Player, Player, String) {
    let mut host = Player::connect_to(endpoint, encodings[0], None).await;
    let seq = host
        .send(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set,
            series_length,
            invite_only: false,
            stake: None,
            pace: None,
            draw_rules: None,
        })
        .await;
    host.expect_ack(seq).await;
    let code = host.state_until(|_| true).await.code;
    let mut guest = Player::connect_to(endpoint, encodings[1], None).await;
    let c = code.to_lowercase();
    let seq = guest
        .send(|seq| ClientMessage::JoinLobby {
            seq,
            code: c,
            invite: None,
        })
        .await;
    guest.expect_ack(seq).await;
    guest.phase(Phase::Playing).await;
    host.phase(Phase::Playing).await;
    (host, guest, code)
}

/// A `redis-server` of the test's own on a free loopback port, with its
/// data in a temporary directory (AOF on, fsync always). Killed on drop.
#[derive(Debug)]
pub struct RedisServer {
    pub port: u16,
    pub dir: std::path::PathBuf,
    child: Option<std::process::Child>,
}

/// A free loopback port for a server the test starts later (bound and
/// released). It is taken below Linux's ephemeral range (32768+), so a
/// client connection made meanwhile cannot be given the same port, and
/// from a per-process offset so parallel tests rarely try the same one.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = 20_000 + (std::process::id() % 600) as u16 * 20;
    loop {
        let port = base + NEXT.fetch_add(1, Ordering::Relaxed) % 12_000;
        let port = if port >= 32_000 { port - 12_000 } else { port };
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

impl RedisServer {
    pub async fn start() -> RedisServer {
        Self::start_in(|_| {}).await
    }

    /// Starts on a fresh port and directory, after `prepare` has filled
    /// the directory.
    async fn start_in(prepare: impl FnOnce(&std::path::Path)) -> RedisServer {
        let dir = std::env::temp_dir().join(format!(
            "jumpgate-redis-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        prepare(&dir);
        let mut server = RedisServer {
            port: free_port(),
            dir,
            child: None,
        };
        server.restart().await;
        server
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Starts (again) on the same port and data.
    pub async fn restart(&mut self) {
        let child = std::process::Command::new("redis-server")
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&self.dir)
            .args(["--appendonly", "yes", "--appendfsync", "always"])
            .args(["--save", ""])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server is installed (the test command installs it)");
        self.child = Some(child);
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            if redis_ping(self.port).await {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "redis did not start"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stalls every client of this Redis for `ms` milliseconds (`CLIENT
    /// PAUSE ms ALL`): commands are accepted and queued, and run when the
    /// pause ends, as after a slow fsync, a fork or a network blip.
    pub async fn pause(&self, ms: u64) {
        let reply = self
            .command(&["CLIENT", "PAUSE", &ms.to_string(), "ALL"])
            .await;
        assert!(reply.starts_with("+OK"), "CLIENT PAUSE answered {reply:?}");
    }

    /// Sends one command on a fresh connection and returns the raw reply.
    pub async fn command(&self, args: &[&str]) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .unwrap();
        let mut request = format!("*{}\r\n", args.len());
        for a in args {
            request.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(request.as_bytes()).await.unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        let n = s.read(&mut buf).await.unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    /// Kills Redis with SIGKILL.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The documented backup: `SAVE` (the snapshot is written and fsynced
    /// before it answers), then `dump.rdb` copied to `to/dump.rdb`. The AOF
    /// directory is copied beside it (`to/appendonlydir`), as an operator
    /// copying the data directory would.
    pub async fn backup(&self, to: &std::path::Path) {
        let reply = self.command(&["SAVE"]).await;
        assert!(reply.starts_with("+OK"), "SAVE answered {reply:?}");
        std::fs::create_dir_all(to).unwrap();
        std::fs::copy(self.dir.join("dump.rdb"), to.join("dump.rdb")).unwrap();
        Self::copy_dir(&self.dir.join("appendonlydir"), &to.join("appendonlydir"));
    }

    /// Restores the RDB snapshot `rdb` over this server's data: Redis
    /// stopped, the AOF directory removed and the snapshot put in its place,
    /// Redis started once with AOF off, AOF turned on by `CONFIG SET` (which
    /// rewrites the AOF from the data just loaded), then started again as
    /// usual. Redis 7.0 started with `appendonly yes` and no AOF manifest
    /// ignores `dump.rdb`: it starts empty and writes an empty AOF base.
    pub async fn restore_rdb(&mut self, rdb: &std::path::Path) {
        self.kill();
        let aof = self.dir.join("appendonlydir");
        let _ = std::fs::remove_dir_all(&aof);
        std::fs::copy(rdb, self.dir.join("dump.rdb")).unwrap();
        self.launch(&["--appendonly", "no"]).await;
        let reply = self.command(&["CONFIG", "SET", "appendonly", "yes"]).await;
        assert!(reply.starts_with("+OK"), "CONFIG SET answered {reply:?}");
        let deadline = tokio::time::Instant::now() + PATIENCE;
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

    /// A Redis of its own started on a copy of an AOF directory (as
    /// [`backup`](Self::backup) leaves it), with AOF on as usual.
    pub async fn start_from_aof(copy: &std::path::Path) -> RedisServer {
        Self::start_in(|dir| Self::copy_dir(copy, &dir.join("appendonlydir"))).await
    }

    /// Starts on the same port and data with `extra` arguments (after the
    /// usual ones, so they win).
    async fn launch(&mut self, extra: &[&str]) {
        let child = std::process::Command::new("redis-server")
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&self.dir)
            .args(["--save", ""])
            .args(extra)
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server is installed (the test command installs it)");
        self.child = Some(child);
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while !redis_ping(self.port).await {
            assert!(
                tokio::time::Instant::now() < deadline,
                "redis did not start"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Copies the files of directory `from` (not its subdirectories) into
    /// `to`.
    fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A Redis Cluster of three masters (no replicas) on loopback, started with
/// `redis-server --cluster-enabled yes` and joined by `redis-cli --cluster
/// create`, each node with its data in a temporary directory. Killed on
/// drop.
#[derive(Debug)]
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    pub async fn start() -> RedisCluster {
        let mut nodes = Vec::new();
        for _ in 0..3 {
            let dir = std::env::temp_dir().join(format!(
                "jumpgate-cluster-{}-{}",
                std::process::id(),
                free_port()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let port = free_port();
            let bus = free_port();
            let child = std::process::Command::new("redis-server")
                .args(["--port", &port.to_string()])
                .args(["--bind", "127.0.0.1"])
                .arg("--dir")
                .arg(&dir)
                .args(["--cluster-enabled", "yes"])
                .args(["--cluster-port", &bus.to_string()])
                .args(["--cluster-config-file", "nodes.conf"])
                .args(["--appendonly", "yes", "--appendfsync", "always"])
                .args(["--save", ""])
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("redis-server is installed (the test command installs it)");
            let node = RedisServer {
                port,
                dir,
                child: Some(child),
            };
            let deadline = tokio::time::Instant::now() + PATIENCE;
            while !redis_ping(port).await {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "redis did not start"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            nodes.push(node);
        }
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let status = tokio::process::Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(std::process::Stdio::null())
            .status()
            .await
            .expect("redis-cli is installed");
        assert!(status.success(), "redis-cli --cluster create failed");
        let cluster = RedisCluster { nodes };
        let deadline = tokio::time::Instant::now() + PATIENCE;
        'wait: loop {
            for node in &cluster.nodes {
                let info = node.command(&["CLUSTER", "INFO"]).await;
                if !info.contains("cluster_state:ok") {
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "the cluster did not come up: {info}"
                    );
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue 'wait;
                }
            }
            break;
        }
        cluster
    }

    /// The server's `--redis-url` for this cluster: every node as a seed.
    pub fn url(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("redis://127.0.0.1:{}", n.port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Stalls every node (`CLIENT PAUSE ms ALL` on each).
    pub async fn pause(&self, ms: u64) {
        for node in &self.nodes {
            node.pause(ms).await;
        }
    }
}

async fn redis_ping(port: u16) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    if s.write_all(b"PING\r\n").await.is_err() {
        return false;
    }
    let mut buf = [0u8; 16];
    matches!(s.read(&mut buf).await, Ok(n) if buf[..n].starts_with(b"+PONG"))
}

/// Probes until `again` says the answer is final or `limit` has passed, and
/// returns the last answer: for values the server reaches just after the
/// event a test waited for (a payout after the announced result, a count
/// after readiness). The caller asserts on what it gets.
pub async fn probe_while<T, F, Fut>(limit: Duration, mut probe: F, again: impl Fn(&T) -> bool) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let answer = probe().await;
        if !again(&answer) || tokio::time::Instant::now() >= deadline {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The `jumpgate` binary built by cargo for this workspace.
pub fn jumpgate_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/test-xxxx → target/<profile>/jumpgate
    let profile_dir = exe.parent().and_then(|d| d.parent()).unwrap();
    let bin = profile_dir.join("jumpgate");
    if !bin.exists() {
        let status = std::process::Command::new(env!("CARGO"))
            .args(["build", "-p", "jumpgate-server", "--bin", "jumpgate"])
            .status()
            .unwrap();
        assert!(status.success(), "could not build jumpgate");
    }
    bin
}

/// A `jumpgate serve` process. Killed (SIGKILL) on drop.
#[derive(Debug)]
pub struct JumpgateProcess {
    pub addr: SocketAddr,
    child: Option<std::process::Child>,
}

/// Token secret shared by the processes of one test, so tokens survive a
/// restart.
pub const TEST_SECRET: &str = "jumpgate-test-secret-0123456789abcdef";

impl JumpgateProcess {
    pub async fn start(env: &[(&str, String)]) -> JumpgateProcess {
        JumpgateProcess::spawn(
            env,
            std::process::Stdio::null(),
            std::process::Stdio::inherit(),
        )
        .await
    }

    /// Like [`JumpgateProcess::start`], with everything the process prints
    /// (its logs) written to the file `log`.
    pub async fn start_logging(env: &[(&str, String)], log: &std::path::Path) -> JumpgateProcess {
        let file = std::fs::File::create(log).unwrap();
        let err = file.try_clone().unwrap();
        JumpgateProcess::spawn(env, file.into(), err.into()).await
    }

    /// Starts on a given address, e.g. the one a killed process had, so
    /// that its clients reconnect to the same place.
    pub async fn start_at(addr: SocketAddr, env: &[(&str, String)]) -> JumpgateProcess {
        JumpgateProcess::spawn_at(
            addr,
            env,
            std::process::Stdio::null(),
            std::process::Stdio::inherit(),
        )
        .await
    }

    async fn spawn(
        env: &[(&str, String)],
        stdout: std::process::Stdio,
        stderr: std::process::Stdio,
    ) -> JumpgateProcess {
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        JumpgateProcess::spawn_at(addr, env, stdout, stderr).await
    }

    /// Starts a process that may refuse to run and exit at once: returns
    /// without waiting for it to listen, its logs written to `log`.
    pub fn launch_logging(env: &[(&str, String)], log: &std::path::Path) -> JumpgateProcess {
        let file = std::fs::File::create(log).unwrap();
        let err = file.try_clone().unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        JumpgateProcess::launch(addr, env, file.into(), err.into())
    }

    async fn spawn_at(
        addr: SocketAddr,
        env: &[(&str, String)],
        stdout: std::process::Stdio,
        stderr: std::process::Stdio,
    ) -> JumpgateProcess {
        let process = JumpgateProcess::launch(addr, env, stdout, stderr);
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "jumpgate did not start"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        process
    }

    fn launch(
        addr: SocketAddr,
        env: &[(&str, String)],
        stdout: std::process::Stdio,
        stderr: std::process::Stdio,
    ) -> JumpgateProcess {
        let mut cmd = std::process::Command::new(jumpgate_binary());
        // A process started again on the same address is the same instance
        // (as a restarted pod keeps its name): it takes its rooms back at once.
        cmd.args(["serve", "--listen", &addr.to_string()])
            .env("JUMPGATE_INSTANCE_ID", format!("test-{}", addr.port()))
            .env("JUMPGATE_TOKEN_SECRET", TEST_SECRET)
            .env("RUST_LOG", "warn")
            // Every test client shares 127.0.0.1: the edge tests set the
            // per-client limits they check (the env given below wins).
            .envs(
                jumpgate_server::limits::LimitSettings::UNLIMITED_ENV
                    .iter()
                    .copied(),
            )
            .stdout(stdout)
            .stderr(stderr);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().unwrap();
        JumpgateProcess {
            addr,
            child: Some(child),
        }
    }

    pub fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.addr)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    /// SIGKILL: the process gets no chance to tidy up.
    pub fn kill_9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends a signal (`"STOP"`, `"CONT"`, ...) without waiting: SIGSTOP
    /// freezes the process as a stalled VM or a long GC pause would.
    pub fn signal(&self, name: &str) {
        let pid = self.pid().to_string();
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), pid.as_str()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{name} {pid}");
    }

    /// SIGTERM without waiting for the exit (see [`wait`](Self::wait)).
    pub fn begin_terminate(&self) {
        self.signal("TERM");
    }

    /// The exit status if the process has exited by itself (it is then
    /// reaped), else `None`.
    pub fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        let status = self.child.as_mut()?.try_wait().ok()??;
        self.child = None;
        Some(status)
    }

    /// Waits for the process to exit.
    pub fn wait(&mut self) -> std::process::ExitStatus {
        self.child.take().expect("running").wait().unwrap()
    }

    /// SIGTERM, then waits for the process to exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        child.wait().unwrap()
    }
}

impl Drop for JumpgateProcess {
    fn drop(&mut self) {
        self.kill_9();
    }
}

/// Where a test can reach a server: in-process or a separate process.
pub trait Endpoint {
    fn ws(&self) -> String;
}

impl Endpoint for TestServer {
    fn ws(&self) -> String {
        self.ws_url()
    }
}

impl Endpoint for JumpgateProcess {
    fn ws(&self) -> String {
        self.ws_url()
    }
}

impl Player {
    /// Connects to any endpoint (with a token to come back as someone).
    pub async fn connect_to(
        endpoint: &impl Endpoint,
        encoding: Encoding,
        token: Option<String>,
    ) -> Player {
        let mut client = Client::connect(&endpoint.ws(), encoding).await.unwrap();
        let greeting = tokio::time::timeout(PATIENCE, client.greet(token, "jumpgate-e2e"))
            .await
            .expect("no welcome in time")
            .expect("welcomed");
        Player {
            client,
            id: greeting.identity.id,
            name: greeting.identity.name,
            token: greeting.token,
            state: None,
            sent_at: Default::default(),
        }
    }

    /// Joins (or rejoins) a lobby by code and waits for its state.
    pub async fn join(&mut self, code: &str) -> RoomState {
        self.enter(code, false).await
    }

    /// Watches a lobby by code and waits for its state.
    pub async fn watch(&mut self, code: &str) -> RoomState {
        self.enter(code, true).await
    }

    async fn enter(&mut self, code: &str, watch: bool) -> RoomState {
        let c = code.to_owned();
        let seq = self
            .send(|seq| {
                if watch {
                    ClientMessage::Watch {
                        seq,
                        code: c,
                        invite: None,
                    }
                } else {
                    ClientMessage::JoinLobby {
                        seq,
                        code: c,
                        invite: None,
                    }
                }
            })
            .await;
        self.expect_ack(seq).await;
        self.state_until(|s| s.code == code).await
    }
}

/// A plain HTTP/1.1 GET over loopback (asking for JSON where a page offers
/// both): the status code and the whole response, headers included.
pub async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    http_get_with(addr, path, &[]).await
}

/// [`http_get`] with extra request headers.
pub async fn http_get_with(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    http_request(addr, "GET", path, headers).await
}

/// An empty-bodied POST with extra request headers: the status and the
/// whole response.
pub async fn http_post_with(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    http_request(addr, "POST", path, headers).await
}

async fn http_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let mut all = vec![("Accept", "application/json")];
    all.extend_from_slice(headers);
    http_exchange(addr, method, path, &all, "").await
}

/// One HTTP/1.1 request on a fresh connection, with exactly these headers
/// and body (plus `Host`, `Content-Length` and `Connection: close`): the
/// status and the whole response, headers included.
pub async fn http_exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, response)
}

impl Player {
    /// Receives until a solo state satisfies `pred`.
    pub async fn solo_until(
        &mut self,
        pred: impl Fn(&jumpgate_protocol::SoloState) -> bool,
    ) -> jumpgate_protocol::SoloState {
        loop {
            if let ServerMessage::SoloState(s) = self.recv().await
                && pred(&s)
            {
                return s;
            }
        }
    }
}

/// An HS256 account token (key id `k1`) for `sub`, valid for an hour, from the
/// issuer `https://id.test` for the audience `jumpgate`, signed with `secret`. It
/// carries an `email` claim (`{sub}@private.example`) that the server must never
/// show or log.
pub fn account_token(secret: &[u8], sub: &str, name: &str) -> String {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    header.kid = Some("k1".into());
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    let claims = serde_json::json!({
        "sub": sub, "name": name, "email": format!("{sub}@private.example"),
        "iss": "https://id.test", "aud": "jumpgate", "exp": exp,
    });
    let key = jsonwebtoken::EncodingKey::from_secret(secret).unwrap();
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

impl Player {
    /// Sends a request and waits for its `ack`, or the code of its refusal.
    /// The answer to `seq`, already sent: `Ok` for its `ack`, or the
    /// refusal's code. Everything before it is noted on the way.
    pub async fn answer(&mut self, seq: u32) -> Result<(), ErrorCode> {
        loop {
            match self.recv().await {
                ServerMessage::Ack { seq: s } if s == seq => return Ok(()),
                ServerMessage::Error {
                    seq: Some(s), code, ..
                } if s == seq => return Err(code),
                _ => {}
            }
        }
    }

    pub async fn request(
        &mut self,
        build: impl FnOnce(u32) -> ClientMessage,
    ) -> Result<(), ErrorCode> {
        let seq = self.send(build).await;
        let mut others = Vec::new();
        let answer = tokio::time::timeout(PATIENCE, self.client.answer(seq, |m| others.push(m)))
            .await
            .expect("no answer in time")
            .expect("the connection stayed up");
        for message in others {
            self.note(&message);
        }
        answer.map_err(|refusal| refusal.code)
    }
}
