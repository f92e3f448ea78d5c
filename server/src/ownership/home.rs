//! Rooms going back to the instance they were taken from, once it runs
//! again (see [`return_rooms_home`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::hand_over;
use crate::AppState;

/// How often the instances that rooms here belong to are looked at.
const HOMES_EVERY: Duration = Duration::from_secs(1);

/// Hands rooms taken from an instance id that stopped or died back to it
/// once it has been alive again for `after` (so the balancer, which routes
/// a room's code to the instance it ran on, has it in its ring again): a
/// restarted instance gets its rooms back at once, each member reconnecting
/// once (4001), rather than only when a player happens to reconnect, which
/// would send the other one away. Until the drain.
pub(super) async fn return_rooms_home(state: &Arc<AppState>, after: Duration) {
    let mut back_since: std::collections::HashMap<String, Instant> = Default::default();
    while !state.is_draining() {
        tokio::time::sleep(HOMES_EVERY).await;
        let homes: Vec<(String, String)> = {
            let mut homes = state.homes.lock().unwrap_or_else(|e| e.into_inner());
            homes.retain(|id, _| state.runs(id));
            homes
                .iter()
                .map(|(id, h)| (id.clone(), h.clone()))
                .collect()
        };
        let mut instances: Vec<&String> = homes.iter().map(|(_, h)| h).collect();
        instances.sort();
        instances.dedup();
        back_since.retain(|h, _| instances.contains(&h));
        for home in instances {
            match state.store.is_alive(home).await {
                Ok(true) => {
                    back_since.entry(home.clone()).or_insert_with(Instant::now);
                }
                Ok(false) => {
                    back_since.remove(home);
                }
                Err(_) => {}
            }
        }
        for (id, home) in &homes {
            let due = back_since.get(home).is_some_and(|t| t.elapsed() >= after);
            if due && !state.is_draining() && !state.deaths.doubts() {
                state
                    .homes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(id);
                if hand_over(state, id, Some(home.clone())).await {
                    tracing::info!(room = %id, to = %home, "handed back to the instance it was taken from");
                }
            }
        }
    }
}
