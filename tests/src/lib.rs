//! Shared helpers for the end-to-end tests: start a real server on port 0
//! and drive it with the protocol crate's real WebSocket client.
//!
//! The processes the tests start (Redis, Redis Cluster, HAProxy, `jumpgate
//! serve`) come from the shared harness, `jumpgate-harness`; they are
//! re-exported here under the names the tests have always used.

pub mod table;

/// HAProxy running `deploy/haproxy.cfg` in front of test instances (from
/// the harness).
pub mod balancer {
    pub use jumpgate_harness::haproxy::{Balancer, FrontProxy, SERVERS, Via};
}

pub use jumpgate_harness::{
    BotWorkerProcess, Endpoint, JumpgateProcess, RedisCluster, RedisServer, TEST_SECRET, free_port,
    jumpgate_binary,
};

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

impl Endpoint for TestServer {
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

#[cfg(test)]
mod tests {
    /// The harness turns the per-client limits off by name without depending
    /// on the server: its list must be the server's own.
    #[test]
    fn the_harness_turns_off_the_servers_own_client_limits() {
        assert_eq!(
            jumpgate_harness::NO_CLIENT_LIMITS,
            jumpgate_server::limits::LimitSettings::UNLIMITED_ENV
        );
    }
}

/// Where a test's server keeps what it stores: one test body run on each
/// of them is how the stores are held to the same guarantees.
#[derive(Debug)]
pub enum Storage {
    /// A `redis-server` of the test's own.
    Redis(RedisServer),
    /// A three-master Redis Cluster of the test's own.
    Cluster(RedisCluster),
    /// The embedded store, in a fresh data directory of the test's own.
    DataDir(DataDir),
}

impl Storage {
    pub async fn redis() -> Storage {
        Storage::Redis(RedisServer::start().await)
    }

    pub async fn cluster() -> Storage {
        Storage::Cluster(RedisCluster::start().await)
    }

    pub fn data_dir() -> Storage {
        Storage::DataDir(DataDir::new())
    }

    /// What a `jumpgate serve` process needs to run on it.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        match self {
            Storage::Redis(r) => vec![("JUMPGATE_REDIS_URL", r.url())],
            Storage::Cluster(c) => vec![("JUMPGATE_REDIS_URL", c.url())],
            Storage::DataDir(d) => d.env(),
        }
    }

    /// The same for an in-process server.
    pub fn configure(&self, settings: &mut Settings) {
        match self {
            Storage::Redis(r) => settings.redis_url = Some(r.url()),
            Storage::Cluster(c) => settings.redis_url = Some(c.url()),
            Storage::DataDir(d) => settings.data_dir = Some(d.path().to_owned()),
        }
    }
}

/// A data directory for the embedded store, deleted with the value.
#[derive(Debug)]
pub struct DataDir(tempfile::TempDir);

impl DataDir {
    pub fn new() -> DataDir {
        DataDir(
            tempfile::Builder::new()
                .prefix("jumpgate-data-")
                .tempdir()
                .expect("a temporary directory"),
        )
    }

    pub fn path(&self) -> &std::path::Path {
        self.0.path()
    }

    /// What a `jumpgate serve` process needs to run on it (the tests'
    /// processes default to memory).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("JUMPGATE_MEMORY", "false".to_owned()),
            ("JUMPGATE_DATA_DIR", self.path().display().to_string()),
        ]
    }
}

impl Default for DataDir {
    fn default() -> DataDir {
        DataDir::new()
    }
}

/// One test body, `$body(storage: Storage)`, run as a test per store: a
/// module `$name` with the tests `redis` and `data_dir` (and `cluster`
/// when asked for).
#[macro_export]
macro_rules! on_every_store {
    ($name:ident, $body:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                super::$body($crate::Storage::redis().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn data_dir() {
                super::$body($crate::Storage::data_dir()).await;
            }
        }
    };
    ($name:ident, $body:ident, cluster) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                super::$body($crate::Storage::redis().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn cluster() {
                super::$body($crate::Storage::cluster().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn data_dir() {
                super::$body($crate::Storage::data_dir()).await;
            }
        }
    };
}
