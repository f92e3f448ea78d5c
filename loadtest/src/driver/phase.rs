//! Runs one latency or saturation phase: sets the games or pairs up, drives them for
//! the phase's duration, and prints a progress line a second.

use super::*;

pub(super) enum Driver {
    Game(Box<Game>),
    Pair(Box<Pair>),
}

/// Runs one phase: sets up `games` games (or echo pairs) against `url`, then drives
/// them for `duration`, printing a progress line to stderr every second.
pub async fn run_phase(
    label: &str,
    kind: Kind,
    url: &str,
    games: Games,
    pace: Pace,
    duration: Duration,
) -> Result<PhaseStats, String> {
    let Games {
        count: games,
        rule_set,
        protocol,
    } = games;
    let frames = EchoFrames::new();
    let setup_limit = Instant::now() + PATIENCE * 3;
    let permits = Arc::new(Semaphore::new(SETUP_CONCURRENCY));
    let mut setups = JoinSet::new();
    for _ in 0..games {
        let (url, frames, permits) = (url.to_owned(), frames.clone(), permits.clone());
        setups.spawn(async move {
            let _permit = permits.acquire_owned().await.map_err(|e| e.to_string())?;
            match kind {
                Kind::Jumpgate => Game::set_up(&url, protocol, setup_limit, rule_set)
                    .await
                    .map(|g| Driver::Game(Box::new(g))),
                Kind::Echo => Pair::set_up(&url, &frames, setup_limit)
                    .await
                    .map(|p| Driver::Pair(Box::new(p))),
            }
        });
    }
    let mut ready = Vec::with_capacity(games);
    let mut errors = 0;
    let mut first_error = None;
    while let Some(joined) = setups.join_next().await {
        match joined.map_err(|e| e.to_string()).and_then(|r| r) {
            Ok(driver) => ready.push(driver),
            Err(e) => {
                errors += 1;
                first_error.get_or_insert(format!("set-up: {e}"));
            }
        }
    }
    if ready.is_empty() {
        return Err(format!(
            "{label}: no game could be set up: {}",
            first_error.unwrap_or_default()
        ));
    }

    let progress = Arc::new(Progress::default());
    let start = Instant::now();
    let deadline = start + duration;
    let count = ready.len();
    let mut running = JoinSet::new();
    for (index, driver) in ready.into_iter().enumerate() {
        let schedule = Schedule::new(pace, count, index, start);
        let progress = progress.clone();
        match driver {
            Driver::Game(game) => {
                running.spawn(play_game(*game, schedule, deadline, progress));
            }
            Driver::Pair(pair) => {
                running.spawn(play_pair(
                    *pair,
                    frames.clone(),
                    schedule,
                    deadline,
                    progress,
                ));
            }
        }
    }
    let ticker = tokio::spawn(report_progress(
        label.to_owned(),
        kind,
        progress.clone(),
        start,
        deadline,
    ));

    let mut latency_us = new_histogram();
    let (mut ops, mut lobbies) = (0, 0);
    let (mut metered_moves, mut move_traffic, mut gaps) = (0, Traffic::default(), 0);
    // A hard bound even if some connection hangs past every limit.
    let give_up = deadline + GRACE + PATIENCE;
    loop {
        match timeout_at(give_up, running.join_next()).await {
            Ok(Some(Ok(outcome))) => {
                ops += outcome.ops;
                lobbies += outcome.lobbies;
                metered_moves += outcome.metered_moves;
                move_traffic.add(outcome.move_traffic);
                gaps += outcome.gaps;
                latency_us
                    .add(&outcome.latency_us)
                    .map_err(|e| e.to_string())?;
                if let Some(e) = outcome.error {
                    errors += 1;
                    first_error.get_or_insert(e);
                }
            }
            Ok(Some(Err(e))) => {
                errors += 1;
                first_error.get_or_insert(e.to_string());
            }
            Ok(None) => break,
            Err(_) => {
                errors += running.len() as u64;
                first_error.get_or_insert("some games did not stop in time".into());
                running.abort_all();
                break;
            }
        }
    }
    ticker.abort();
    Ok(PhaseStats {
        label: label.to_owned(),
        kind,
        games: count,
        ops,
        seconds: duration.as_secs_f64(),
        errors,
        first_error,
        lobbies,
        latency_us,
        window_start: start,
        protocol,
        metered_moves,
        move_traffic,
        gaps,
    })
}

pub(super) async fn report_progress(
    label: String,
    kind: Kind,
    progress: Arc<Progress>,
    start: Instant,
    deadline: Instant,
) {
    let mut tick = tokio::time::interval_at(start + Duration::from_secs(1), Duration::from_secs(1));
    let mut last = 0;
    loop {
        let now = tick.tick().await;
        if now > deadline + Duration::from_millis(100) {
            return;
        }
        let ops = progress.ops.load(Ordering::Relaxed);
        eprintln!(
            "  {label:<20} {:>4.0}s {ops:>9} {} {:>8}/s  lobbies {:>5}  errors {}",
            now.duration_since(start).as_secs_f64(),
            kind.unit(),
            ops - last,
            progress.lobbies.load(Ordering::Relaxed),
            progress.errors.load(Ordering::Relaxed),
        );
        last = ops;
    }
}
