//! The start-up resume: every stored open room without a live owner is
//! taken over, `--resume-batch` rooms at a time, each batch a fixed number
//! of round trips to the store whatever its size: the fences, the owners'
//! heartbeats, the listing under this instance, and the claims each
//! followed by its room's read (see the store crate's `redis/reads.rs`).
//!
//! Nothing is weakened by batching: each room is still claimed by a
//! compare-and-set on its own fence (so two instances starting together
//! end with one owner per room), listed under its claimer first, and read
//! after its claim. A room whose fence cannot be read, or whose claim's
//! outcome is unknown, does not hold up the others: it is looked at again
//! in a later pass, starting from its fence (a claim that did land shows
//! there as ours, and is claimed again), and after the last pass it is
//! left to the orphan sweep and to requests.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;

use crate::metrics::METRICS;
use crate::ownership::Ownership;
use crate::ownership::{self, Adoption};
use crate::store::{Claimed, Fence, StoreError};

/// Batches under way at once: one batch's rooms are rebuilt (CPU) while the
/// next one's round trips are in flight.
const BATCHES_AT_ONCE: usize = 2;
/// Passes over the rooms a store error left undecided before the start
/// leaves them to the orphan sweep and to requests.
const PASSES: usize = 5;
/// Pause before each further pass.
const PASS_PAUSE: Duration = Duration::from_millis(500);

/// Takes back the stored rooms without a live owner (after a restart of a
/// single instance, all of them), then starts the ownership tasks and
/// lets requests through.
pub(crate) async fn resume_stored_rooms(state: &Arc<Ownership>) {
    // Alive before claiming anything: others must not count this instance
    // dead while it takes rooms over.
    ownership::start_heartbeat(state).await;
    let resume_started = std::time::Instant::now();
    let adopted = loop {
        match adopt_open_rooms(state).await {
            Ok(adopted) => break adopted,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the stored lobbies yet; retrying");
                tokio::time::sleep(PASS_PAUSE).await;
            }
        }
    };
    METRICS.resume_rooms_left.set(0);
    let resume = resume_started.elapsed();
    METRICS.resume_seconds.set(resume.as_secs_f64());
    tracing::info!(adopted, resume_ms = resume.as_millis() as u64, instance = %state.settings.instance_id, "rooms without a live owner taken over");
    ownership::spawn_background(state);
    state.lifecycle.resume_done();
    ownership::mark_ready(state);
}

/// Adopts every open room without a live owner: at start, this catches
/// rooms stored before ownership existed as well as those of instances
/// that died. Returns how many rooms run here afterwards. Only failing to
/// list the rooms at all is an error.
async fn adopt_open_rooms(state: &Arc<Ownership>) -> Result<usize, StoreError> {
    let codes = state.store.open_codes().await?;
    // Progress for operators: how many stored rooms are still to look at.
    METRICS
        .resume_rooms_left
        .set(i64::try_from(codes.len()).unwrap_or(i64::MAX));
    let mut adopted = 0;
    let mut pending = codes;
    for pass in 1..=PASSES {
        let (taken, deferred) = resume_pass(state, pending).await;
        adopted += taken;
        if deferred.is_empty() || state.lifecycle.is_draining() {
            break;
        }
        if pass == PASSES {
            tracing::warn!(
                rooms = deferred.len(),
                "not taken over at start (the store kept failing): the orphan sweep and requests will take them"
            );
            METRICS
                .resume_rooms
                .with_label_values(&["deferred"])
                .inc_by(deferred.len() as u64);
            break;
        }
        tracing::warn!(
            rooms = deferred.len(),
            pass,
            "the store failed for some rooms; looking at their fences again"
        );
        tokio::time::sleep(PASS_PAUSE).await;
        pending = deferred;
    }
    Ok(adopted)
}

/// One pass over `codes`, batch after batch; returns how many rooms run
/// here now and those a store error left undecided.
async fn resume_pass(state: &Arc<Ownership>, codes: Vec<String>) -> (usize, Vec<String>) {
    let size = state.settings.resume_batch.max(1);
    let batches: Vec<Vec<String>> = codes.chunks(size).map(<[String]>::to_vec).collect();
    futures_util::stream::iter(batches)
        .map(|batch| resume_batch(state, batch))
        .buffer_unordered(BATCHES_AT_ONCE)
        .fold(
            (0, Vec::new()),
            |(adopted, mut deferred), (taken, more)| async move {
                deferred.extend(more);
                (adopted + taken, deferred)
            },
        )
        .await
}

/// Counts a room the start is done with.
fn settle(outcome: &str) {
    METRICS.resume_rooms.with_label_values(&[outcome]).inc();
    METRICS.resume_rooms_left.dec();
}

/// Takes one batch of stored rooms over: reads their fences, checks the
/// heartbeats of the owners they name, and claims and reads those without
/// a live owner. Returns how many run here now and the rooms a store error
/// left undecided (to be looked at again from their fence).
async fn resume_batch(state: &Arc<Ownership>, codes: Vec<String>) -> (usize, Vec<String>) {
    if state.lifecycle.is_draining() {
        return (0, Vec::new());
    }
    let mut deferred = Vec::new();
    let mut defer = |code: String, e: &StoreError| {
        tracing::debug!(room = %code, error = %e, "not taken over yet; looked at again");
        deferred.push(code);
    };
    let fences = match state.store.fences(&codes).await {
        Ok(fences) if fences.len() == codes.len() => fences,
        Ok(_) => return (0, codes),
        Err(e) => {
            tracing::debug!(rooms = codes.len(), error = %e, "a batch's fences not read");
            return (0, codes);
        }
    };
    let mut candidates: Vec<(String, Fence)> = Vec::new();
    let mut parked = Vec::new();
    for (code, fence) in codes.into_iter().zip(fences) {
        match fence {
            Err(e) => defer(code, &e),
            Ok(None) => settle("closed"),
            // An unloaded lobby stays in the store until it is asked for
            // or due (the dormant sweep): a start loads none, but lists it
            // again as dormant if that entry was lost (say, by a failover
            // of another slot's master).
            Ok(Some(fence)) if fence.parked && fence.owner.is_none() => parked.push((code, fence)),
            Ok(Some(fence)) => candidates.push((code, fence)),
        }
    }
    let relists = parked.iter().map(|(code, fence)| async move {
        match &fence.wake {
            Some(wake) => state.store.relist_dormant(code, wake).await,
            None => Ok(()),
        }
    });
    for ((code, _), relisted) in parked
        .iter()
        .zip(futures_util::future::join_all(relists).await)
    {
        match relisted {
            Ok(()) => settle("dormant"),
            Err(e) => defer(code.clone(), &e),
        }
    }

    // A room is free to claim if it names no owner, this instance, or an
    // instance without a current heartbeat.
    let me = &state.settings.instance_id;
    let owners: Vec<String> = candidates
        .iter()
        .filter_map(|(_, fence)| fence.owner.clone())
        .filter(|owner| **owner != **me)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let alive = match state.store.alive(&owners).await {
        Ok(alive) if alive.len() == owners.len() => Ok(alive),
        Ok(_) => Err(StoreError::Unreadable("heartbeats not all answered".into())),
        Err(e) => Err(e),
    };
    let alive = match alive {
        Ok(alive) => alive,
        Err(e) => {
            for (code, _) in candidates {
                defer(code, &e);
            }
            return (0, deferred);
        }
    };
    let live: HashSet<&str> = owners
        .iter()
        .zip(alive)
        .filter(|(_, alive)| *alive)
        .map(|(owner, _)| owner.as_str())
        .collect();
    let mut adopted = 0;
    let mut held = Vec::new();
    let mut free = Vec::new();
    for (code, fence) in candidates {
        if fence.owner.as_deref().is_some_and(|o| live.contains(o)) {
            settle("elsewhere");
            continue;
        }
        // One adoption per room at a time on this instance (requests and
        // sweeps wait for the start, but the rule holds everywhere).
        held.push(state.adoption_lock(&code).lock_owned().await);
        if state.registry.runs(&code) {
            adopted += 1;
            settle("taken");
            continue;
        }
        free.push((code, fence));
    }

    let claims = match state.store.claim_and_load(&free, me).await {
        Ok(claims) if claims.len() == free.len() => Ok(claims),
        Ok(_) => Err(StoreError::Unreadable("claims not all answered".into())),
        Err(e) => Err(e),
    };
    let claims = match claims {
        Ok(claims) => claims,
        Err(e) => {
            for (code, _) in free {
                defer(code, &e);
            }
            return (adopted, deferred);
        }
    };
    let starts = free
        .iter()
        .zip(claims)
        .map(|((code, seen), claim)| async move {
            match claim? {
                Claimed::Lost => Ok(Adoption::Lost),
                Claimed::Won { owner, stored } => {
                    ownership::start_claimed(state, code, seen, owner, stored).await
                }
            }
        });
    let started = futures_util::future::join_all(starts).await;
    drop(held);
    for ((code, _), started) in free.into_iter().zip(started) {
        match started {
            Ok(Adoption::Adopted) => {
                adopted += 1;
                settle("taken");
            }
            // Someone else claimed it first: it runs there.
            Ok(Adoption::Lost) => settle("elsewhere"),
            Ok(Adoption::Unresumable) => settle("unresumable"),
            Ok(Adoption::Closed) => settle("closed"),
            Err(e) => defer(code, &e),
        }
    }
    (adopted, deferred)
}
