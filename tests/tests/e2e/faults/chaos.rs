//! The bounded chaos run: staked lobbies played by real clients (moves,
//! draws, resigns, clock lapses, leaves, rematches) while Redis stalls at
//! random for longer than the server's timeout and the server is killed
//! with SIGKILL and restarted on the same address.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use jumpgate_protocol::client::Client;
use jumpgate_protocol::{Color, RoomState};
use tokio::time::Instant;

use super::*;

const LOBBIES: usize = 26;
const RUN: Duration = Duration::from_secs(60);
const KILLS: [u64; 3] = [14, 29, 44];
const STAKE: u32 = 20;
const MOVE_CLOCK_MS: u64 = 2_500;

/// A small deterministic generator, so a failing run can be replayed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[derive(Default)]
struct Shared {
    /// Each lobby's current code, set by its host.
    codes: Mutex<HashMap<usize, String>>,
    /// Every acknowledged move: lobby code, ply, notation.
    acked: Mutex<Vec<(String, u32, String)>>,
    /// Answers `storage_unavailable` seen, and series seen to finish.
    unavailable: std::sync::atomic::AtomicU32,
    series_ended: std::sync::atomic::AtomicU32,
}

/// One player's connection, greeted.
struct Session {
    client: Client,
    id: String,
}

async fn open(url: &str, token: &str, seq: &mut u32) -> Option<Session> {
    let limit = Duration::from_secs(3);
    let mut client = tokio::time::timeout(limit, Client::connect(url, Encoding::Json))
        .await
        .ok()?
        .ok()?;
    // Keep counting across connections, as PROTOCOL.md asks.
    client.set_last_seq(*seq);
    let greeting = tokio::time::timeout(limit, client.greet(Some(token.to_owned()), "chaos"))
        .await
        .ok()?
        .ok()?;
    *seq += 1;
    Some(Session {
        client,
        id: greeting.identity.id,
    })
}

/// Sends a request and waits for its answer, and for the state that
/// follows a join's or a creation's ack; `None` if the connection failed
/// or stayed silent.
async fn ask(
    s: &mut Session,
    seq: &mut u32,
    build: impl FnOnce(u32) -> ClientMessage,
) -> Option<(Result<(), ErrorCode>, Option<RoomState>)> {
    *seq += 1;
    let mine = *seq;
    s.client.send(&build(mine)).await.ok()?;
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut state = None;
    let note = |m: ServerMessage, state: &mut Option<RoomState>| {
        if let ServerMessage::State(st) = m {
            *state = Some(st);
        }
    };
    let answer = tokio::time::timeout_at(deadline, s.client.answer(mine, |m| note(m, &mut state)))
        .await
        .ok()?
        .ok()?;
    if answer.is_ok() {
        while state.is_none() {
            match tokio::time::timeout_at(deadline, s.client.recv()).await {
                Ok(Ok(m)) => note(m, &mut state),
                _ => break,
            }
        }
    }
    Some((answer.map_err(|r| r.code), state))
}

/// Sends a pending move again, with its own seq (a retry, never a guess).
async fn resend(s: &mut Session, pending: &Option<(u32, String, u32, String)>) {
    if let Some((seq, _, _, text)) = pending {
        let _ = s
            .client
            .send(&ClientMessage::Move {
                seq: *seq,
                notation: Some(text.clone()),
                path: None,
            })
            .await;
    }
}

/// One player of lobby `lobby` (`host` creates it) until `end`, then it
/// leaves whatever it sits in, so every series ends and settles.
async fn player(
    lobby: usize,
    host: bool,
    url: Arc<Mutex<String>>,
    shared: Arc<Shared>,
    end: Instant,
) {
    let sub = format!("chaos{lobby}{}", if host { "h" } else { "g" });
    let token = token(&sub);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (lobby as u64 * 2 + u64::from(host) + 1));
    let mut seq = 0u32;
    // A move sent and not yet answered: (seq, code, ply, notation).
    let mut pending: Option<(u32, String, u32, String)> = None;
    while Instant::now() < end {
        let address = url.lock().unwrap().clone();
        let Some(mut s) = open(&address, &token, &mut seq).await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        // Into the lobby: the host creates one when it has none.
        let known = shared.codes.lock().unwrap().get(&lobby).cloned();
        let code = match known {
            Some(code) => code,
            None if host => {
                let created = ask(&mut s, &mut seq, |seq| ClientMessage::CreateLobby {
                    seq,
                    rule_set: RuleSet::American,
                    series_length: 3,
                    invite_only: false,
                    stake: Some(STAKE),
                    pace: None,
                    draw_rules: None,
                })
                .await;
                match created {
                    Some((Ok(()), Some(state))) => {
                        shared
                            .codes
                            .lock()
                            .unwrap()
                            .insert(lobby, state.code.clone());
                        state.code
                    }
                    _ => continue,
                }
            }
            None => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let c = code.clone();
        let mut state = match ask(&mut s, &mut seq, |seq| ClientMessage::JoinLobby {
            seq,
            code: c,
            invite: None,
        })
        .await
        {
            Some((Ok(()), state)) => state,
            Some((Err(ErrorCode::UnknownLobby), _)) => {
                // Closed (both left): the host opens a new one.
                if host {
                    shared.codes.lock().unwrap().remove(&lobby);
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            _ => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        // A move whose answer was lost is sent again with its seq.
        if let Some((_, p_code, _, _)) = &pending {
            if *p_code == code {
                resend(&mut s, &pending).await;
            } else {
                pending = None;
            }
        }
        let mut decided: Option<(u32, u32, Phase)> = None;
        loop {
            if Instant::now() >= end {
                break;
            }
            if let Some(st) = state.take() {
                let me = s.id.clone();
                decided = decide(&st, &me, &mut rng, &mut s, &mut seq, &mut pending, decided).await;
            }
            let message =
                match tokio::time::timeout(Duration::from_millis(1500), s.client.recv()).await {
                    Err(_) => {
                        // Quiet: re-send a pending move (same seq), else wait.
                        resend(&mut s, &pending).await;
                        continue;
                    }
                    Ok(Err(_)) => break,
                    Ok(Ok(m)) => m,
                };
            match message {
                ServerMessage::State(st) => {
                    if host
                        && st.phase == Phase::Finished
                        && decided.is_some_and(|d| d.2 != Phase::Finished)
                    {
                        shared
                            .series_ended
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    state = Some(st)
                }
                ServerMessage::Ack { seq: a } => {
                    if let Some((p_seq, p_code, ply, text)) = pending.take() {
                        if p_seq == a {
                            shared.acked.lock().unwrap().push((p_code, ply, text));
                        } else {
                            pending = Some((p_seq, p_code, ply, text));
                        }
                    }
                }
                ServerMessage::Error {
                    seq: Some(e), code, ..
                } if pending.as_ref().is_some_and(|p| p.0 == e) => {
                    if code == ErrorCode::StorageUnavailable {
                        shared
                            .unavailable
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        // Unknown yet: ask again with the same seq.
                        tokio::time::sleep(Duration::from_millis(150)).await;
                        resend(&mut s, &pending).await;
                    } else {
                        pending = None;
                    }
                }
                ServerMessage::Left { .. } => break,
                _ => {}
            }
        }
    }
    // The end: leave whatever seat is held, so every series settles.
    let deadline = Instant::now() + PATIENCE;
    let Some(code) = shared.codes.lock().unwrap().get(&lobby).cloned() else {
        return;
    };
    while Instant::now() < deadline {
        let address = url.lock().unwrap().clone();
        let Some(mut s) = open(&address, &token, &mut seq).await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        let c = code.clone();
        match ask(&mut s, &mut seq, |seq| ClientMessage::Watch {
            seq,
            code: c,
            invite: None,
        })
        .await
        {
            Some((Err(ErrorCode::UnknownLobby), _)) => return,
            Some((Ok(()), _)) => {}
            _ => continue,
        }
        if let Some((Ok(()), _)) = ask(&mut s, &mut seq, |seq| ClientMessage::Leave { seq }).await {
            return;
        }
    }
    panic!("{sub} could not leave lobby {code}");
}

/// Acts on a state, at most once per turn, break or series end; returns
/// what it decided for.
#[allow(clippy::too_many_arguments)]
async fn decide(
    st: &RoomState,
    me: &str,
    rng: &mut Rng,
    s: &mut Session,
    seq: &mut u32,
    pending: &mut Option<(u32, String, u32, String)>,
    decided: Option<(u32, u32, Phase)>,
) -> Option<(u32, u32, Phase)> {
    let Some(seat) = st
        .players
        .iter()
        .position(|p| p.as_ref().is_some_and(|p| p.id == me))
    else {
        return decided;
    };
    let ply = st.game.as_ref().map_or(0, |g| g.ply);
    let key = Some((st.series.round, ply, st.phase));
    if key == decided || pending.is_some() {
        return decided;
    }
    // A human's pace, and under the server's message rate.
    tokio::time::sleep(Duration::from_millis(20 + rng.below(60))).await;
    let send = |m: ClientMessage| m;
    let message = match st.phase {
        Phase::Playing => {
            let Some(game) = st.game.as_ref().filter(|g| g.result.is_none()) else {
                return decided;
            };
            let mine = if usize::from(game.dark_seat) == seat {
                Color::Dark
            } else {
                Color::Light
            };
            if game.draw_offer.is_some_and(|c| c != mine) {
                *seq += 1;
                if rng.below(2) == 0 {
                    send(ClientMessage::AcceptDraw { seq: *seq })
                } else {
                    send(ClientMessage::DeclineDraw { seq: *seq })
                }
            } else if game.turn != mine {
                return decided;
            } else {
                match rng.below(100) {
                    0..2 => {
                        *seq += 1;
                        ClientMessage::Resign { seq: *seq }
                    }
                    2..5 if game.draw_offer.is_none() => {
                        *seq += 1;
                        ClientMessage::OfferDraw { seq: *seq }
                    }
                    // Let the clock lapse.
                    5..8 => return key,
                    _ => {
                        let m =
                            &game.legal_moves[rng.below(game.legal_moves.len() as u64) as usize];
                        *seq += 1;
                        *pending = Some((*seq, st.code.clone(), ply + 1, m.notation.clone()));
                        ClientMessage::Move {
                            seq: *seq,
                            notation: Some(m.notation.clone()),
                            path: None,
                        }
                    }
                }
            }
        }
        Phase::Break => {
            *seq += 1;
            ClientMessage::NextRound { seq: *seq }
        }
        Phase::Finished | Phase::Ended => {
            *seq += 1;
            if rng.below(10) == 0 {
                ClientMessage::Leave { seq: *seq }
            } else {
                ClientMessage::Rematch { seq: *seq }
            }
        }
        Phase::Waiting => return decided,
    };
    let _ = s.client.send(&message).await;
    key
}

/// 26 staked lobbies for 60 s; Redis paused for 0.6–2 s every 2–5 s; the
/// server killed with SIGKILL and restarted three times (once during a
/// pause). At every kill and at the end: balances plus escrow equal
/// everything granted, the escrow total is what the escrow hashes hold, and
/// no balance is negative. At the end also: no escrow left, no ledger key
/// applied twice, nobody paid for a series they did not stake in, every
/// acknowledged move stored, and every lobby resumes after a last kill -9.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_of_stalls_and_kill_9_loses_no_point_and_no_acknowledged_move() {
    let redis = RedisServer::start().await;
    let mut env = server_env(&redis);
    env.push(("JUMPGATE_MOVE_CLOCK_MS", MOVE_CLOCK_MS.to_string()));
    env.push(("JUMPGATE_BREAK_MS", "300".into()));
    let addr: SocketAddr = format!("127.0.0.1:{}", jumpgate_e2e::free_port())
        .parse()
        .unwrap();
    let mut server = JumpgateProcess::start_at(addr, &env).await;
    let url = Arc::new(Mutex::new(server.ws_url()));
    let shared = Arc::new(Shared::default());
    let start = Instant::now();
    let end = start + RUN;
    let mut players = Vec::new();
    for lobby in 0..LOBBIES {
        for host in [true, false] {
            players.push(tokio::spawn(player(
                lobby,
                host,
                url.clone(),
                shared.clone(),
                end,
            )));
        }
    }
    let accounts: Vec<String> = (0..LOBBIES)
        .flat_map(|l| ["h", "g"].map(|r| format!("a_chaos{l}{r}")))
        .collect();

    let mut rng = Rng(0xC0FF_EE12_3456_789B);
    let mut next_pause = start + Duration::from_secs(2);
    let mut kills = KILLS
        .iter()
        .map(|s| start + Duration::from_secs(*s))
        .peekable();
    let (mut pauses, mut killed) = (0, 0);
    while Instant::now() < end {
        let next_kill = kills.peek().copied().unwrap_or(end);
        tokio::time::sleep_until(next_pause.min(next_kill).min(end)).await;
        let now = Instant::now();
        if now >= next_pause {
            let ms = 600 + rng.below(1_400);
            redis.pause(ms).await;
            pauses += 1;
            next_pause = now + Duration::from_millis(ms + 2_000 + rng.below(3_000));
            // The second kill lands in the middle of a pause.
            if killed == 1 {
                next_pause = next_pause.max(next_kill + Duration::from_secs(3));
                tokio::time::sleep_until(next_kill.max(now + Duration::from_millis(ms / 2))).await;
            }
        }
        if Instant::now() >= next_kill {
            kills.next();
            server.kill_9();
            killed += 1;
            // Let any pause end so the checks can read.
            tokio::time::sleep(Duration::from_millis(2_100)).await;
            conserved(&redis, &accounts).await;
            server = JumpgateProcess::start_at(addr, &env).await;
            *url.lock().unwrap() = server.ws_url();
        }
    }
    assert!(
        killed >= 3 && pauses >= 5,
        "{killed} kills, {pauses} pauses"
    );
    for p in players {
        p.await.unwrap();
    }

    // Every series has ended and settled: nothing is left in escrow.
    let deadline = Instant::now() + PATIENCE * 2;
    while conserved(&redis, &accounts).await != 0 {
        assert!(Instant::now() < deadline, "escrow left behind");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ledgers_sound(&redis, &accounts).await;

    // Every acknowledged move is stored (as a multiset per lobby, ply and
    // notation: the stream itself is checked to be in order, once each).
    let acked = shared.acked.lock().unwrap().clone();
    assert!(
        acked.len() > 200,
        "the run played: {} acknowledged moves",
        acked.len()
    );
    let mut wanted: HashMap<(String, u32, String), u32> = HashMap::new();
    for m in acked.iter().cloned() {
        *wanted.entry(m).or_default() += 1;
    }
    let store = RedisStore::open(&redis.url(), PATIENCE).unwrap();
    let mut stored: HashMap<(String, u32, String), u32> = HashMap::new();
    let codes: std::collections::HashSet<&String> = acked.iter().map(|(c, _, _)| c).collect();
    for code in codes {
        let room = store.load(code).await.unwrap().expect("stored");
        let ids: Vec<(u64, u32)> = room.moves.iter().map(|m| (m.game_no, m.ply)).collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "{code}: in order, once"
        );
        // The log holds one game; a finished game's moves left it when the
        // next game began, and are in its PDN (games are numbered from 1,
        // and every finished game has one), ply by ply.
        let logged = room.moves.first().map(|m| m.game_no);
        for m in room.moves {
            *stored.entry((code.clone(), m.ply, m.text)).or_default() += 1;
        }
        let games = store.games(code).await.unwrap();
        for (n, pdn) in (1u64..).zip(&games) {
            if Some(n) == logged {
                continue;
            }
            for (i, text) in pdn_moves(pdn).into_iter().enumerate() {
                *stored
                    .entry((code.clone(), i as u32 + 1, text))
                    .or_default() += 1;
            }
        }
    }
    for (m, n) in &wanted {
        assert!(
            stored.get(m).copied().unwrap_or(0) >= *n,
            "acknowledged move {m:?} missing from the store"
        );
    }

    // A last kill -9: every stored lobby resumes.
    server.kill_9();
    let _server = JumpgateProcess::start_at(addr, &env).await;
    // The list is complete once the start-up resume is: until then it is
    // answered 503 `starting`.
    let auth = format!("Bearer {ADMIN}");
    let headers = [("Authorization", auth.as_str())];
    let (status, body) = jumpgate_e2e::probe_while(
        PATIENCE,
        || jumpgate_e2e::http_get_with(admin_addr(&env), "/api/admin/rooms/unresumable", &headers),
        |(status, _)| *status == 503,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains(r#"{"rooms":[]}"#),
        "every lobby resumed: {body}"
    );
    let totals = wallets(&redis).totals().await.unwrap();
    eprintln!(
        "chaos: {} acknowledged moves in {LOBBIES} lobbies, {} series seen to end, {} storage_unavailable answers, {pauses} Redis pauses, {killed} kills; {} points granted, all accounted for",
        acked.len(),
        shared
            .series_ended
            .load(std::sync::atomic::Ordering::Relaxed),
        shared
            .unavailable
            .load(std::sync::atomic::Ordering::Relaxed),
        totals.granted,
    );
}

/// The moves of a PDN game (American notation), in order: the movetext's
/// tokens without move numbers and the result.
fn pdn_moves(pdn: &str) -> Vec<String> {
    pdn.lines()
        .filter(|line| !line.starts_with('['))
        .flat_map(str::split_whitespace)
        .filter(|t| !t.ends_with('.'))
        .filter(|t| !matches!(*t, "1-0" | "0-1" | "1/2-1/2" | "*"))
        .map(str::to_owned)
        .collect()
}
