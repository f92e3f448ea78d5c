//! Games against the computer kept running beside the human games (`bench-bots`):
//! each driver starts a solo game, plays its moves and starts another when it ends.

use super::*;

/// Counters shared by the solo drivers of a [`SoloLoad`], read while it runs.
#[derive(Debug, Default)]
pub struct SoloCounters {
    /// Solo games that received their first `solo_state`.
    pub running: AtomicU64,
    /// Moves the drivers played for the human side.
    pub human_moves: AtomicU64,
    /// Moves the computer played (a `solo_state` that ends its thinking).
    pub bot_moves: AtomicU64,
    /// Games that reached a result (each followed by a new `start_solo`).
    pub finished: AtomicU64,
    /// Games whose latest `solo_state` says the computer is thinking (or queued for the
    /// bot pool), right now.
    pub thinking: AtomicU64,
    /// Drivers that failed.
    pub errors: AtomicU64,
    pub(super) first_error: Mutex<Option<String>>,
    pub(super) move_ack_us: Mutex<Option<Histogram<u64>>>,
    pub(super) bot_wait_us: Mutex<Option<Histogram<u64>>>,
}

impl SoloCounters {
    /// The first failure of any driver.
    pub fn first_error(&self) -> Option<String> {
        self.first_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(super) fn fail(&self, error: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        self.first_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(error);
    }

    /// The human moves' `move` → `ack` round trips of the drivers that have stopped.
    pub fn move_ack_us(&self) -> Option<Histogram<u64>> {
        self.move_ack_us
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(super) fn add_move_acks(&self, h: &Histogram<u64>) {
        merge(&self.move_ack_us, h);
    }

    /// The waits for the computer (the human move's `ack` → the `solo_state` with
    /// the computer's reply) of the drivers that have stopped, microseconds.
    pub fn bot_wait_us(&self) -> Option<Histogram<u64>> {
        self.bot_wait_us
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

fn merge(into: &Mutex<Option<Histogram<u64>>>, h: &Histogram<u64>) {
    let mut all = into.lock().unwrap_or_else(|e| e.into_inner());
    match all.as_mut() {
        Some(all) => {
            let _ = all.add(h);
        }
        None => *all = Some(h.clone()),
    }
}

/// Solo games against the computer, each on its own connection, played by a loop that
/// answers as soon as it is the human's turn, so the server's bot pool always has work.
/// They run until [`SoloLoad::stop`].
#[derive(Debug)]
pub struct SoloLoad {
    pub(super) games: usize,
    pub(super) counters: Arc<SoloCounters>,
    pub(super) stop: watch::Sender<bool>,
    pub(super) tasks: JoinSet<()>,
}

impl SoloLoad {
    /// Connects `games` drivers to `url` and starts them (in the background), each
    /// playing `rule_set` against `level` and waiting `think` before answering the
    /// computer.
    pub fn start(
        url: &str,
        games: usize,
        level: BotLevel,
        rule_set: RuleSet,
        think: Duration,
    ) -> SoloLoad {
        let counters = Arc::new(SoloCounters::default());
        let (stop, stopped) = watch::channel(false);
        let permits = Arc::new(Semaphore::new(SETUP_CONCURRENCY));
        let mut tasks = JoinSet::new();
        for _ in 0..games {
            let (url, counters, stopped, permits) = (
                url.to_owned(),
                counters.clone(),
                stopped.clone(),
                permits.clone(),
            );
            tasks.spawn(async move {
                let acks = new_histogram();
                let mut driver = SoloDriver {
                    counters: counters.clone(),
                    acks,
                    waits: new_histogram(),
                    think,
                    rule_set,
                    was_thinking: false,
                };
                if let Err(e) = driver.run(&url, level, stopped, permits).await {
                    counters.fail(e);
                }
                driver.set_thinking(false);
                counters.add_move_acks(&driver.acks);
                merge(&counters.bot_wait_us, &driver.waits);
            });
        }
        SoloLoad {
            games,
            counters,
            stop,
            tasks,
        }
    }

    /// The live counters.
    pub fn counters(&self) -> Arc<SoloCounters> {
        self.counters.clone()
    }

    /// Waits until every game is running (or failed) and as many as `thinking_goal` wait
    /// for the computer at once, at most `limit`; says whether both happened.
    pub async fn wait_busy(&self, thinking_goal: u64, limit: Duration) -> bool {
        let give_up = Instant::now() + limit;
        loop {
            let c = &self.counters;
            let settled = c.running.load(Ordering::Relaxed) + c.errors.load(Ordering::Relaxed)
                >= self.games as u64;
            if settled && c.thinking.load(Ordering::Relaxed) >= thinking_goal {
                return true;
            }
            if Instant::now() >= give_up {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops every driver (waiting at most [`GRACE`]) and returns the counters.
    pub async fn stop(mut self) -> Arc<SoloCounters> {
        let _ = self.stop.send(true);
        let give_up = Instant::now() + GRACE;
        while let Ok(Some(_)) = timeout_at(give_up, self.tasks.join_next()).await {}
        self.tasks.abort_all();
        self.counters
    }
}

pub(super) struct SoloDriver {
    pub(super) counters: Arc<SoloCounters>,
    pub(super) acks: Histogram<u64>,
    /// The waits for the computer's replies, microseconds.
    pub(super) waits: Histogram<u64>,
    /// How long the human thinks before each move.
    pub(super) think: Duration,
    /// The rule set of every game it starts.
    pub(super) rule_set: RuleSet,
    pub(super) was_thinking: bool,
}

impl SoloDriver {
    pub(super) fn set_thinking(&mut self, thinking: bool) {
        if thinking != self.was_thinking {
            if thinking {
                self.counters.thinking.fetch_add(1, Ordering::Relaxed);
            } else {
                self.counters.thinking.fetch_sub(1, Ordering::Relaxed);
            }
            self.was_thinking = thinking;
        }
    }

    pub(super) async fn start(
        conn: &mut Conn,
        rule_set: RuleSet,
        level: BotLevel,
    ) -> Result<u32, String> {
        let seq = conn.client.next_seq();
        conn.send(&ClientMessage::StartSolo {
            seq,
            rule_set,
            mode: SoloMode::Computer,
            level: Some(level),
            ranked: false,
        })
        .await?;
        Ok(seq)
    }

    /// Plays until `stopped` turns true. Sends at most one message per `solo_state`.
    pub(super) async fn run(
        &mut self,
        url: &str,
        level: BotLevel,
        mut stopped: watch::Receiver<bool>,
        permits: Arc<Semaphore>,
    ) -> Result<(), String> {
        let mut conn = {
            let _permit = permits.acquire_owned().await.map_err(|e| e.to_string())?;
            Player::greet(url, ProtocolVersion::V1, Instant::now() + PATIENCE)
                .await?
                .conn
        };
        // The `start_solo` whose ack is awaited: states before it belong to the old game.
        let mut starting = Some(Self::start(&mut conn, self.rule_set, level).await?);
        let mut game_id: Option<String> = None;
        // The version last answered with a move, and that move's seq and send time.
        let mut answered: Option<u64> = None;
        let mut sent_move: Option<(u32, Instant)> = None;
        // When our last move was acknowledged, until the computer's reply.
        let mut acked_at: Option<Instant> = None;
        let mut counted = false;
        loop {
            if *stopped.borrow() {
                return Ok(());
            }
            // A game waits for the shared bot pool, so the computer may take long; only
            // an hour of silence counts as a failure.
            let limit = Instant::now() + Duration::from_secs(3600);
            let message = tokio::select! {
                _ = stopped.changed() => return Ok(()),
                message = conn.recv(limit) => message?,
            };
            let state: SoloState = match message {
                None => return Err(timed_out("a solo game")),
                Some(ServerMessage::Ack { seq }) => {
                    if starting == Some(seq) {
                        starting = None;
                        game_id = None;
                        answered = None;
                        acked_at = None;
                    }
                    if let Some((s, at)) = sent_move
                        && s == seq
                    {
                        self.acks.saturating_record(micros(at, Instant::now()));
                        sent_move = None;
                        acked_at = Some(Instant::now());
                    }
                    continue;
                }
                Some(ServerMessage::Error { seq, code, message }) => {
                    return Err(format!("solo game: {code} {message} (seq {seq:?})"));
                }
                Some(ServerMessage::Shutdown { .. }) => {
                    return Err("the server is shutting down".into());
                }
                Some(ServerMessage::SoloState(state)) => state,
                Some(_) => continue,
            };
            if starting.is_some() {
                continue;
            }
            if game_id.as_deref() != Some(state.id.as_str()) {
                if game_id.is_some() {
                    // Another game's state: not ours to answer.
                    continue;
                }
                game_id = Some(state.id.clone());
                if !counted {
                    counted = true;
                    self.counters.running.fetch_add(1, Ordering::Relaxed);
                }
            } else if self.was_thinking && !state.thinking {
                self.counters.bot_moves.fetch_add(1, Ordering::Relaxed);
                if let Some(at) = acked_at.take() {
                    self.waits.saturating_record(micros(at, Instant::now()));
                }
            }
            self.set_thinking(state.thinking);
            let game = &state.game;
            if game.result.is_some() {
                self.counters.finished.fetch_add(1, Ordering::Relaxed);
                self.set_thinking(false);
                starting = Some(Self::start(&mut conn, self.rule_set, level).await?);
                continue;
            }
            let our_turn =
                !state.thinking && state.you == Some(game.turn) && answered != Some(state.version);
            if let (true, Some(first)) = (our_turn, game.legal_moves.first()) {
                if !self.think.is_zero() {
                    tokio::time::sleep(self.think).await;
                }
                let seq = conn.client.next_seq();
                let notation = first.notation.clone();
                answered = Some(state.version);
                conn.send(&ClientMessage::Move {
                    seq,
                    notation: Some(notation),
                    path: None,
                })
                .await?;
                sent_move = Some((seq, Instant::now()));
                self.counters.human_moves.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
