//! The computer's thinking pool: at most `--bot-threads` searches at once,
//! each on a blocking thread, so searches never run on the async workers.

use tokio::sync::Semaphore;

use crate::bots::{self, BotConfig, Level};
use crate::rules::VariantGame;

/// Caps how many bot searches run at once; the rest wait their turn.
#[derive(Debug)]
pub struct BotPool {
    permits: Semaphore,
    executive_budget: std::time::Duration,
}

impl BotPool {
    pub fn new(threads: usize, executive_budget: std::time::Duration) -> BotPool {
        BotPool {
            permits: Semaphore::new(threads.max(1)),
            executive_budget,
        }
    }

    /// The bot's move in its stored form ([`MoveInfo::stored`]), computed
    /// on a blocking thread.
    pub async fn think(&self, game: VariantGame, level: Level, seed: u64) -> Option<String> {
        let _permit = self.permits.acquire().await.ok()?;
        let config = BotConfig::new(level)
            .with_seed(seed)
            .with_time_budget(self.executive_budget);
        let timer = crate::metrics::METRICS
            .bot_think_seconds
            .with_label_values(&[level.name()])
            .start_timer();
        let chosen = tokio::task::spawn_blocking(move || bots::choose_stored(&game, &config))
            .await
            .ok()
            .flatten();
        timer.observe_duration();
        chosen
    }
}
