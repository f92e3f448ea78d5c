//! The sample rooms of a simulated year, played through a real `jumpgate serve` by
//! WebSocket clients the way players play them (guests or signed-in accounts, live or
//! correspondence, free or staked, against the computer), left the way the year
//! leaves them (closed, unloaded, abandoned or still in play) and read back with
//! `DUMP`, so that their copies are byte for byte what the server writes.

use std::time::Duration;

use jumpgate_protocol::client::{Client, ClientError};
use jumpgate_protocol::{
    BotLevel, ClientMessage, Color, Encoding, GameView, Pace, Phase, RoomState, RuleSet,
    ServerMessage, SoloMode, SoloState,
};
use serde::Serialize;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::activity::{Rng, account_name, id_chars};
use super::mix::{GamesPerSeries, MixArgs, RoomKind};
use crate::driver::MIN_SEND_GAP;

/// The account issuer the sample server trusts: its `iss`, key id and HS256 key.
pub const ISSUER: &str = "https://id.loadtest.invalid";
pub const KID: &str = "year";
pub const SECRET: &str = "jumpgate-loadtest-year-account-key-0123456789";
/// How long any one answer may take.
const PATIENCE: Duration = Duration::from_secs(30);
/// How long a room may take to close, or be unloaded, once its players are gone.
const CLOSE_PATIENCE: Duration = Duration::from_secs(60);
/// The key suffixes of a room (lobby or solo game).
pub const SUFFIXES: [&str; 4] = ["room", "moves", "games", "fence"];

/// One sample room, dumped.
#[derive(Debug, Clone)]
pub struct Sample {
    pub kind: RoomKind,
    /// Its code (a lobby) or id (a solo game).
    pub id: String,
    /// `(suffix, DUMP payload)` of each of its keys that exists.
    pub keys: Vec<(String, Vec<u8>)>,
    /// Games and series finished in it (lobbies), plies of the last game.
    pub games: u32,
    pub series: u32,
    pub plies: u32,
}

/// What the samples were, for the report.
#[derive(Debug, Clone, Serialize)]
pub struct SampleSummary {
    pub kind: RoomKind,
    pub samples: usize,
    /// Mean per sample.
    pub games: f64,
    pub series: f64,
    pub plies: f64,
    /// Mean serialized (`DUMP`) bytes per sample, all its keys.
    pub dump_bytes: f64,
    pub keys: Vec<String>,
}

/// Summaries per kind.
pub fn summarise(samples: &[Sample]) -> Vec<SampleSummary> {
    RoomKind::ALL
        .iter()
        .filter_map(|&kind| {
            let mine: Vec<&Sample> = samples.iter().filter(|s| s.kind == kind).collect();
            if mine.is_empty() {
                return None;
            }
            let n = mine.len() as f64;
            let mean = |f: &dyn Fn(&Sample) -> f64| mine.iter().map(|s| f(s)).sum::<f64>() / n;
            Some(SampleSummary {
                kind,
                samples: mine.len(),
                games: mean(&|s| f64::from(s.games)),
                series: mean(&|s| f64::from(s.series)),
                plies: mean(&|s| f64::from(s.plies)),
                dump_bytes: mean(&|s| s.keys.iter().map(|(_, p)| p.len() as f64).sum()),
                keys: mine[0].keys.iter().map(|(k, _)| k.clone()).collect(),
            })
        })
        .collect()
}

/// Games per series of each closed lobby kind, as the samples played them.
pub fn games_per_series(samples: &[Sample]) -> GamesPerSeries {
    let per = |kind: RoomKind| {
        let (games, series) = samples
            .iter()
            .filter(|s| s.kind == kind)
            .fold((0u32, 0u32), |(g, n), s| (g + s.games, n + s.series));
        if series == 0 {
            1.0
        } else {
            f64::from(games) / f64::from(series)
        }
    };
    GamesPerSeries {
        guest: per(RoomKind::GuestClosed),
        account: per(RoomKind::AccountClosed),
        staked: per(RoomKind::StakedClosed),
        correspondence: per(RoomKind::CorrespondenceClosed),
    }
}

/// A signed account token for `sub` (HS256, the sample server's key).
pub fn account_token(sub: &str, name: &str) -> Result<String, String> {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    header.kid = Some(KID.into());
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_secs()
        + 3_600;
    let claims = serde_json::json!({
        "sub": sub, "name": name, "iss": ISSUER, "aud": "jumpgate", "exp": exp,
    });
    let key = jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes())
        .map_err(|e| format!("the account key: {e}"))?;
    jsonwebtoken::encode(&header, &claims, &key).map_err(|e| format!("signing a token: {e}"))
}

/// A greeted connection and who it is.
struct Player {
    client: Client,
    id: String,
    /// When it last sent: the server allows about 40 messages a second per
    /// connection, so sends keep [`MIN_SEND_GAP`] apart.
    last_sent: Option<Instant>,
}

impl Player {
    /// Sends `make(seq)` with the next seq, paced; returns the seq.
    async fn send(&mut self, make: impl FnOnce(u32) -> ClientMessage) -> Result<u32, String> {
        if let Some(last) = self.last_sent {
            tokio::time::sleep_until(last + MIN_SEND_GAP).await;
        }
        let seq = self.client.next_seq();
        self.client
            .send(&make(seq))
            .await
            .map_err(|e| e.to_string())?;
        self.last_sent = Some(Instant::now());
        Ok(seq)
    }
}

async fn within<T>(work: impl std::future::Future<Output = T>) -> Result<T, String> {
    tokio::time::timeout(PATIENCE, work)
        .await
        .map_err(|_| format!("no answer within {PATIENCE:?}"))
}

/// A new guest, or account number `account` (with the mix's `sub` length).
async fn connect(url: &str, account: Option<u64>, sub_len: usize) -> Result<Player, String> {
    let token = match account {
        Some(n) => Some(account_token(
            &id_chars(0x7361_6d70_6c65_0000 + n, sub_len),
            &account_name(n as u32),
        )?),
        None => None,
    };
    let mut client = within(Client::connect(url, Encoding::MsgPack))
        .await?
        .map_err(|e| format!("connecting to {url}: {e}"))?;
    let greeting = within(client.greet(token, "jumpgate-loadtest-year"))
        .await?
        .map_err(|e| format!("hello: {e}"))?;
    Ok(Player {
        client,
        id: greeting.identity.id,
        last_sent: None,
    })
}

/// The next message, skipping types this client does not know.
async fn next(client: &mut Client) -> Result<ServerMessage, String> {
    loop {
        match within(client.recv()).await? {
            Ok(message) => return Ok(message),
            Err(ClientError::Decode(_)) => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Sends `make(seq)` and waits for its `ack`; other messages are dropped.
async fn request(
    player: &mut Player,
    make: impl FnOnce(u32) -> ClientMessage,
) -> Result<(), String> {
    let mut kind = "";
    let seq = player
        .send(|seq| {
            let message = make(seq);
            kind = message.kind();
            message
        })
        .await?;
    match within(player.client.answer(seq, |_| {})).await? {
        Ok(Ok(())) => Ok(()),
        Ok(Err(refusal)) => Err(format!(
            "{kind} refused: {} {}",
            refusal.code, refusal.message
        )),
        Err(e) => Err(e.to_string()),
    }
}

fn seat_to_move(game: &GameView) -> usize {
    let dark = usize::from(game.dark_seat.min(1));
    if game.turn == Color::Dark {
        dark
    } else {
        1 - dark
    }
}

async fn send_random_move(
    player: &mut Player,
    game: &GameView,
    rng: &mut Rng,
) -> Result<(), String> {
    let i = rng.below(game.legal_moves.len() as u64) as usize;
    let notation = Some(game.legal_moves[i].notation.clone());
    player
        .send(|seq| ClientMessage::Move {
            seq,
            notation,
            path: None,
        })
        .await
        .map(|_| ())
}

/// What one seat of a lobby does until it stops.
#[derive(Debug, Clone, Copy)]
struct SeatPlan {
    /// Series to finish (calling a rematch after each but the last).
    series: u32,
    /// Stop once the game in play reaches this ply instead.
    stop_at_ply: Option<u32>,
    seed: u64,
}

/// Games and series this seat saw finish, and the last game's plies.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    games: u32,
    series: u32,
    plies: u32,
}

/// Plays one seat of lobby `code`: random legal moves, the next round and rematches
/// as the plan says, until the plan is done.
async fn play_seat(player: &mut Player, code: &str, plan: SeatPlan) -> Result<Seen, String> {
    let mut rng = Rng::new(plan.seed);
    let mut seen = Seen::default();
    let mut moved_at: Option<(u32, u32, u32)> = None;
    let mut asked_round = 0;
    let mut last_phase = None;
    let mut last_result = None;
    loop {
        let state: RoomState = match next(&mut player.client).await? {
            ServerMessage::State(s) if s.code == code => s,
            ServerMessage::Error {
                code: error,
                message,
                ..
            } => {
                return Err(format!("{error}: {message}"));
            }
            _ => continue,
        };
        let me = state
            .players
            .iter()
            .position(|p| p.as_ref().is_some_and(|p| p.id == player.id));
        if let Some(game) = &state.game {
            seen.plies = game.ply;
            let result_key = (seen.series, state.series.round);
            if game.result.is_some() && last_result != Some(result_key) {
                last_result = Some(result_key);
                seen.games += 1;
            }
        }
        let finished_now = state.phase == Phase::Finished && last_phase != Some(Phase::Finished);
        last_phase = Some(state.phase);
        match state.phase {
            Phase::Playing => {
                let Some(game) = &state.game else { continue };
                if let Some(stop) = plan.stop_at_ply
                    && game.ply >= stop
                {
                    return Ok(seen);
                }
                let turn = (seen.series, state.series.round, game.ply);
                if game.result.is_none()
                    && me == Some(seat_to_move(game))
                    && !game.legal_moves.is_empty()
                    && moved_at != Some(turn)
                {
                    moved_at = Some(turn);
                    send_random_move(player, game, &mut rng).await?;
                }
            }
            Phase::Break if state.series.round > asked_round => {
                asked_round = state.series.round;
                player.send(|seq| ClientMessage::NextRound { seq }).await?;
            }
            Phase::Finished if finished_now => {
                seen.series += 1;
                if seen.series >= plan.series {
                    return Ok(seen);
                }
                asked_round = 0;
                player.send(|seq| ClientMessage::Rematch { seq }).await?;
            }
            Phase::Ended => return Err(format!("lobby {code} was ended")),
            _ => {}
        }
    }
}

/// Plays a solo game: random legal moves against the computer until it is over
/// or reaches `stop_at_ply`. Returns its id and plies.
async fn play_solo(
    player: &mut Player,
    ranked: bool,
    stop_at_ply: Option<u32>,
    seed: u64,
) -> Result<(String, u32), String> {
    let mut rng = Rng::new(seed);
    let level = if ranked {
        BotLevel::Executive
    } else {
        BotLevel::Tamer
    };
    let seq = player
        .send(|seq| ClientMessage::StartSolo {
            seq,
            rule_set: RuleSet::American,
            mode: SoloMode::Computer,
            level: Some(level),
            ranked,
        })
        .await?;
    let mut moved_at = None;
    loop {
        let state: SoloState = match next(&mut player.client).await? {
            ServerMessage::SoloState(s) => s,
            ServerMessage::Error {
                seq: Some(s),
                code,
                message,
            } if s == seq => return Err(format!("start_solo refused: {code} {message}")),
            _ => continue,
        };
        if ranked && !state.ranked {
            return Err(format!("solo game {} is not ranked", state.id));
        }
        let game = &state.game;
        if game.result.is_some() || stop_at_ply.is_some_and(|stop| game.ply >= stop) {
            return Ok((state.id, game.ply));
        }
        if !state.thinking
            && state.you == Some(game.turn)
            && !game.legal_moves.is_empty()
            && moved_at != Some(game.ply)
        {
            moved_at = Some(game.ply);
            send_random_move(player, game, &mut rng).await?;
        }
    }
}

/// What playing a sample left: its id, the connections still held (rooms in play
/// are dumped while their players are there), and what was played.
struct Played {
    id: String,
    held: Vec<Client>,
    seen: Seen,
}

/// Plays one lobby sample of `kind` (a lobby kind).
async fn play_lobby(url: &str, kind: RoomKind, mix: &MixArgs, n: u64) -> Result<Played, String> {
    let accounts = !matches!(kind, RoomKind::GuestClosed | RoomKind::LiveInPlay);
    let correspondence = matches!(
        kind,
        RoomKind::CorrespondenceOpen | RoomKind::CorrespondenceClosed
    );
    let account = |seat: u64| accounts.then_some(n * 2 + seat);
    let mut host = connect(url, account(0), mix.account_sub_len).await?;
    let mut guest = connect(url, account(1), mix.account_sub_len).await?;
    let seq = host
        .send(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set: RuleSet::American,
            series_length: mix.series_length,
            invite_only: false,
            stake: (kind == RoomKind::StakedClosed).then_some(mix.stake),
            pace: Some(if correspondence {
                Pace::Correspondence
            } else {
                Pace::Live
            }),
            draw_rules: None,
        })
        .await?;
    let code = loop {
        match next(&mut host.client).await? {
            ServerMessage::State(s) => break s.code,
            ServerMessage::Error {
                seq: Some(s),
                code,
                message,
            } if s == seq => return Err(format!("create_lobby refused: {code} {message}")),
            _ => {}
        }
    };
    let joined = code.clone();
    request(&mut guest, move |seq| ClientMessage::JoinLobby {
        seq,
        code: joined,
        invite: None,
    })
    .await?;
    let in_play = matches!(kind, RoomKind::LiveInPlay | RoomKind::CorrespondenceOpen);
    let plan = SeatPlan {
        series: match kind {
            RoomKind::CorrespondenceClosed => 1,
            _ => mix.series_per_lobby,
        },
        stop_at_ply: in_play.then_some(mix.plies_in_play),
        seed: mix.seed ^ (n << 8) ^ kind as u64,
    };
    let other = SeatPlan {
        seed: plan.seed ^ 0xffff,
        ..plan
    };
    let (a, b) = tokio::join!(
        play_seat(&mut host, &code, plan),
        play_seat(&mut guest, &code, other)
    );
    let seen = a.map_err(|e| format!("{code} ({kind:?}): {e}"))?;
    b.map_err(|e| format!("{code} ({kind:?}): {e}"))?;
    let mut held = Vec::new();
    match kind {
        RoomKind::LiveInPlay => held.extend([host.client, guest.client]),
        RoomKind::CorrespondenceClosed => {
            for p in [&mut host, &mut guest] {
                request(p, |seq| ClientMessage::Leave { seq }).await?;
            }
            let _ = host.client.close().await;
            let _ = guest.client.close().await;
        }
        _ => {
            let _ = host.client.close().await;
            let _ = guest.client.close().await;
        }
    }
    Ok(Played {
        id: code,
        held,
        seen,
    })
}

/// Plays one solo sample of `kind` (a solo kind).
async fn play_solo_sample(
    url: &str,
    kind: RoomKind,
    mix: &MixArgs,
    n: u64,
) -> Result<Played, String> {
    let ranked = matches!(kind, RoomKind::RankedFinished | RoomKind::RankedAbandoned);
    let account =
        matches!(kind, RoomKind::RankedFinished | RoomKind::RankedAbandoned).then_some(1_000 + n);
    let mut player = connect(url, account, mix.account_sub_len).await?;
    let stop = matches!(kind, RoomKind::RankedAbandoned | RoomKind::SoloInPlay)
        .then_some(mix.plies_in_play);
    let (id, plies) = play_solo(&mut player, ranked, stop, mix.seed ^ (n << 8) ^ kind as u64)
        .await
        .map_err(|e| format!("{kind:?}: {e}"))?;
    let mut held = Vec::new();
    if kind == RoomKind::SoloInPlay {
        held.push(player.client);
    } else {
        let _ = player.client.close().await;
    }
    Ok(Played {
        id,
        held,
        seen: Seen {
            games: 1,
            series: 1,
            plies,
        },
    })
}

fn redis_error(e: redis::RedisError) -> String {
    format!("Redis: {e}")
}

/// Waits until the room `id` is left as `kind` leaves it: closed (its record has a
/// TTL), unloaded (its fence says parked) or still open (no TTL).
async fn settled(
    conn: &mut redis::aio::MultiplexedConnection,
    id: &str,
    kind: RoomKind,
) -> Result<(), String> {
    let give_up = Instant::now() + CLOSE_PATIENCE;
    loop {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(format!("jg:{{{id}}}:room"))
            .query_async(conn)
            .await
            .map_err(redis_error)?;
        let parked: Option<String> = redis::cmd("HGET")
            .arg(format!("jg:{{{id}}}:fence"))
            .arg("parked")
            .query_async(conn)
            .await
            .map_err(redis_error)?;
        let done = match kind {
            RoomKind::CorrespondenceOpen => ttl == -1 && parked.as_deref() == Some("1"),
            k if k.is_open() => ttl == -1,
            _ => ttl > 0,
        };
        if done {
            return Ok(());
        }
        if ttl == -2 {
            return Err(format!("{kind:?} {id}: no record stored"));
        }
        if Instant::now() >= give_up {
            return Err(format!(
                "{kind:?} {id}: not left as expected within {CLOSE_PATIENCE:?} (record TTL \
                 {ttl} ms, parked {parked:?})"
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every key of room `id`, dumped.
async fn dump(
    conn: &mut redis::aio::MultiplexedConnection,
    id: &str,
) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut keys = Vec::new();
    for suffix in SUFFIXES {
        let payload: Option<Vec<u8>> = redis::cmd("DUMP")
            .arg(format!("jg:{{{id}}}:{suffix}"))
            .query_async(conn)
            .await
            .map_err(redis_error)?;
        if let Some(payload) = payload {
            keys.push((suffix.to_owned(), payload));
        }
    }
    Ok(keys)
}

/// Plays `per_kind` samples of every kind through the server at `ws_url` (whose
/// Redis is `redis_url`), each kind in a task of its own, and dumps them.
pub async fn play_samples(
    ws_url: &str,
    redis_url: &str,
    mix: &MixArgs,
    per_kind: usize,
) -> Result<Vec<Sample>, String> {
    let client = redis::Client::open(redis_url).map_err(redis_error)?;
    let mut tasks = JoinSet::new();
    for (k, kind) in RoomKind::ALL.into_iter().enumerate() {
        let (url, mix) = (ws_url.to_owned(), mix.clone());
        let mut conn = client
            .get_multiplexed_async_connection()
            .await
            .map_err(redis_error)?;
        tasks.spawn(async move {
            let mut samples = Vec::new();
            for i in 0..per_kind {
                let n = (k * per_kind + i) as u64;
                let played = if kind.is_solo() {
                    play_solo_sample(&url, kind, &mix, n).await?
                } else {
                    play_lobby(&url, kind, &mix, n).await?
                };
                settled(&mut conn, &played.id, kind).await?;
                let keys = dump(&mut conn, &played.id).await?;
                for client in played.held {
                    let _ = client.close().await;
                }
                samples.push(Sample {
                    kind,
                    id: played.id,
                    keys,
                    games: played.seen.games,
                    series: played.seen.series,
                    plies: played.seen.plies,
                });
            }
            Ok::<_, String>(samples)
        });
    }
    let mut all = Vec::new();
    let mut failure = None;
    while let Some(done) = tasks.join_next().await {
        match done.map_err(|e| e.to_string()).and_then(|r| r) {
            Ok(samples) => all.extend(samples),
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }
    if let Some(e) = failure {
        return Err(format!("playing the samples: {e}"));
    }
    all.sort_by_key(|s| s.kind);
    Ok(all)
}
