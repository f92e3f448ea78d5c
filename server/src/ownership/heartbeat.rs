//! This instance's heartbeat: the first beat before any room is claimed,
//! one every third of the TTL after that until the instance drains, the
//! unready mark while it starts, and stopping the beats at shutdown.

use std::sync::Arc;

use super::{Ownership, check_all_owners};
use crate::store::Beat;

/// Starts the heartbeat, before this instance claims anything, and keeps
/// it until the instance drains. Returns once the first beat is stored.
pub async fn start_heartbeat(state: &Arc<Ownership>) {
    if !state.store.is_durable() {
        return;
    }
    // Tells this process from another one started with the same id.
    let token = nanoid::nanoid!(16);
    let me = state.settings.instance_id.clone();
    let ttl = state.settings.heartbeat_ttl;
    // Not a home for rooms to go back to until the stored rooms are
    // resumed and the listeners serve (see `home`): cleared by
    // `mark_ready`. Also after a kill -9 and a restart within the TTL.
    if let Err(e) = state.store.mark_unready(&me, true).await {
        tracing::warn!(error = %e, "could not mark this instance unready while it starts");
    }
    while let Err(e) = state.store.heartbeat(&me, &token, ttl).await {
        tracing::warn!(error = %e, "cannot store the first heartbeat yet; retrying");
        tokio::time::sleep(ttl / 3).await;
    }
    let beat = state.clone();
    let mut draining = state.lifecycle.draining();
    let task = tokio::spawn(async move {
        loop {
            tokio::select! {
                // Draining (or the state gone): no more beats.
                () = draining.wait() => break,
                () = tokio::time::sleep(ttl / 3) => {}
            }
            let beaten = beat.store.heartbeat(&me, &token, ttl).await;
            match &beaten {
                Ok(outcome) => beat.deaths.beat_stored(*outcome == Beat::Lapsed, ttl),
                Err(_) => beat.deaths.beat_failed(),
            }
            match beaten {
                // Counted dead meanwhile (frozen, cut off): others may have
                // taken rooms over. Rooms that are no longer ours stop now,
                // rather than at their next write.
                Ok(Beat::Lapsed) => {
                    tracing::warn!(
                        "this instance's heartbeat had expired; checking which rooms are still ours"
                    );
                    check_all_owners(&beat).await;
                }
                Ok(Beat::Shared) => {
                    tracing::error!(instance = %me, "another process renews this instance id: give every instance its own --instance-id");
                    check_all_owners(&beat).await;
                }
                Ok(Beat::Continued) => {}
                Err(e) => tracing::warn!(error = %e, "heartbeat not stored"),
            }
        }
    });
    state.lifecycle.keep_heartbeat(task);
}

/// Says this instance is ready for rooms to come back to it (its stored
/// rooms resumed), retrying in the background until it is stored or the
/// instance drains.
pub fn mark_ready(state: &Arc<Ownership>) {
    if !state.store.is_durable() {
        return;
    }
    let state = state.clone();
    tokio::spawn(async move {
        let me = &*state.settings.instance_id;
        while !state.lifecycle.is_draining() {
            match state.store.mark_unready(me, false).await {
                Ok(()) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "could not mark this instance ready yet; retrying")
                }
            }
            tokio::time::sleep(state.settings.heartbeat_ttl / 3).await;
        }
    });
}

/// Stops the heartbeat and waits for it: a beat already sent is stored
/// (or has failed) when this returns, and no other follows. The wait is
/// bounded (two store timeouts: a beat, or a check of the rooms' fences
/// after a lapsed one, still under way); past it the task is aborted.
pub async fn stop_heartbeat(state: &Ownership) {
    state.lifecycle.start_draining();
    let task = state.lifecycle.take_heartbeat();
    if let Some(mut task) = task {
        let patience = state.settings.redis_timeout * 2;
        if tokio::time::timeout(patience, &mut task).await.is_err() {
            tracing::warn!("the heartbeat did not stop in time; aborting it");
            task.abort();
        }
    }
}
