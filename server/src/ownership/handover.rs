//! Giving rooms up: checking that the store still names this instance as
//! each room's owner, handing one room or every room over, and releasing a
//! room this instance owns in the store without running it.

use std::sync::Arc;

use super::Ownership;
use crate::code::RoomCode;

/// Asks every room and solo game here to check that the store still names
/// this instance as its owner (each stops if not).
pub(super) async fn check_all_owners(state: &Arc<Ownership>) {
    for id in state.registry.running_ids() {
        check_owner(state, &id).await;
    }
}

/// Asks the room or solo game `id`, if it runs here, to check its owner.
pub(super) async fn check_owner(state: &Arc<Ownership>, id: &str) {
    if let Some(room) = RoomCode::parse(id).and_then(|c| state.registry.room(&c)) {
        room.check_owner().await;
    } else if let Some(solo) = state.registry.solo_by_id(id) {
        solo.check_owner().await;
    }
}

/// Hands one room or solo game over, if it runs here. A room this
/// instance owns in the store without running it is released.
pub(super) async fn hand_over(state: &Arc<Ownership>, id: &str, to: Option<String>) -> bool {
    if let Some(room) = RoomCode::parse(id).and_then(|c| state.registry.room(&c)) {
        room.hand_over(to).await == Ok(true)
    } else if let Some(solo) = state.registry.solo_by_id(id) {
        solo.hand_over(to).await == Ok(true)
    } else {
        release_unrun(state, id).await;
        true
    }
}

/// Releases a room the store says this instance owns although it does not
/// run it (its task stopped), unless an adoption of it is under way.
async fn release_unrun(state: &Arc<Ownership>, id: &str) {
    let lock = state.adoption_lock(id);
    let Ok(_held) = lock.try_lock() else {
        return;
    };
    if state.registry.runs(id) {
        return;
    }
    let Ok(Some(fence)) = state.store.fence(id).await else {
        return;
    };
    if fence.owner.as_deref() == Some(&*state.settings.instance_id) {
        let owner = crate::store::OwnerEpoch {
            instance: state.settings.instance_id.clone(),
            epoch: fence.epoch,
        };
        let _ = state.store.release(id, &owner, None).await;
    }
}

/// Hands every room and solo game of this instance over (at shutdown), a
/// few at a time; returns how many could not be (they are adopted once
/// this instance's heartbeat has expired).
pub async fn hand_over_all(state: &Arc<Ownership>) -> usize {
    use futures_util::StreamExt;
    let ids = state.registry.running_ids();
    let total = ids.len();
    let handed = futures_util::stream::iter(ids)
        .map(|id| {
            let state = state.clone();
            async move { hand_over(&state, &id, None).await }
        })
        .buffer_unordered(32)
        .filter(|done| std::future::ready(*done))
        .count()
        .await;
    total - handed
}
