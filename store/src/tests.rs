//! The memory store keeps the Redis store's expiry rules, on tokio's
//! paused clock; its batched claims follow the single ones.

use super::*;

fn write(code: &str, expected: u64, version: u64, open: bool, ttl: Option<u64>) -> RoomWrite {
    RoomWrite {
        code: code.into(),
        owner: OwnerEpoch::first(&Arc::from("me")),
        expected_version: expected,
        version,
        record: format!("{{\"version\":{version}}}"),
        moves: Vec::new(),
        finished_games: vec![(1, "1. 11-15 *".into())],
        open,
        expire_after: ttl.map(Duration::from_secs),
        seated: Vec::new(),
        unseated: Vec::new(),
    }
}

#[tokio::test(start_paused = true)]
async fn expired_rooms_are_deleted_and_kept_ones_stay() {
    let store = MemoryStore::default();
    store.write(&write("OPEN", 0, 1, true, None)).await.unwrap();
    store
        .write(&write("DONE", 0, 1, false, Some(60)))
        .await
        .unwrap();
    // Closed, then reopened by a later write without a TTL: kept, as
    // PERSIST keeps a Redis key.
    store
        .write(&write("BACK", 0, 1, false, Some(60)))
        .await
        .unwrap();
    store.write(&write("BACK", 1, 2, true, None)).await.unwrap();
    assert_eq!(store.len(), 3);

    tokio::time::advance(Duration::from_secs(59)).await;
    assert!(store.load("DONE").await.unwrap().is_some(), "not yet");
    tokio::time::advance(Duration::from_secs(2)).await;
    assert!(store.load("DONE").await.unwrap().is_none(), "expired");
    assert!(store.games("DONE").await.unwrap().is_empty());
    assert!(store.fence("DONE").await.unwrap().is_none());
    assert_eq!(store.len(), 2, "deleted, not only hidden");
    assert!(store.load("OPEN").await.unwrap().is_some());
    assert!(store.load("BACK").await.unwrap().is_some());
    let mut open = store.open_codes().await.unwrap();
    open.sort();
    assert_eq!(open, ["BACK", "OPEN"]);
}

#[tokio::test(start_paused = true)]
async fn a_later_ttl_replaces_an_earlier_one() {
    let store = MemoryStore::default();
    store
        .write(&write("ROOM", 0, 1, false, Some(10)))
        .await
        .unwrap();
    store
        .write(&write("ROOM", 1, 2, false, Some(100)))
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(50)).await;
    assert!(
        store.load("ROOM").await.unwrap().is_some(),
        "the 10 s TTL was replaced"
    );
    tokio::time::advance(Duration::from_secs(51)).await;
    assert!(store.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_solo_note_expires_with_its_game_only_while_it_names_it() {
    let store = MemoryStore::default();
    store.index_solo("ann", "SOLD").await.unwrap();
    store.write(&write("SOLD", 0, 1, true, None)).await.unwrap();
    // Replaced: the note names the new game before the old one closes.
    store.index_solo("ann", "SNEW").await.unwrap();
    store
        .write_solo(&write("SOLD", 1, 2, false, Some(60)), "ann")
        .await
        .unwrap();
    // The current game closes (say it finished): its note expires with it.
    store.index_solo("bob", "SBOB").await.unwrap();
    store.write(&write("SBOB", 0, 1, true, None)).await.unwrap();
    store
        .write_solo(&write("SBOB", 1, 2, false, Some(60)), "bob")
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(61)).await;
    assert_eq!(store.solo_of("ann").await.unwrap().as_deref(), Some("SNEW"));
    assert_eq!(store.solo_of("bob").await.unwrap(), None);
    assert!(store.is_empty());
    // A game taken over does not displace the note of the current one.
    assert_eq!(
        store.index_solo_unless_noted("ann", "SOLD").await.unwrap(),
        Some("SNEW".into())
    );
    assert_eq!(
        store.index_solo_unless_noted("bob", "SBOB").await.unwrap(),
        Some("SBOB".into())
    );
}

/// The batched reads and claims of the start say what the single ones
/// would, room by room: a stale fence loses its claim, a current one wins
/// it and reads the room written before the claim.
#[tokio::test]
async fn batched_claims_follow_the_single_rules_room_by_room() {
    let store = MemoryStore::default();
    store.write(&write("AAAA", 0, 1, true, None)).await.unwrap();
    store.write(&write("BBBB", 0, 1, true, None)).await.unwrap();
    let codes: Vec<String> = ["AAAA", "BBBB", "GONE"].map(String::from).into();
    let fences = store.fences(&codes).await.unwrap();
    let fences: Vec<Option<Fence>> = fences.into_iter().map(Result::unwrap).collect();
    assert!(fences[0].is_some() && fences[1].is_some() && fences[2].is_none());
    // Someone else claims BBBB after our read: our fence of it is stale.
    let other: Arc<str> = Arc::from("other");
    let seen_b = fences[1].clone().unwrap();
    store.claim("BBBB", &seen_b, &other).await.unwrap().unwrap();
    let me: Arc<str> = Arc::from("me-too");
    let rooms = vec![
        ("AAAA".to_owned(), fences[0].clone().unwrap()),
        ("BBBB".to_owned(), seen_b),
    ];
    let claimed = store.claim_and_load(&rooms, &me).await.unwrap();
    match &claimed[0] {
        Ok(Claimed::Won { owner, stored }) => {
            assert_eq!((&*owner.instance, owner.epoch), ("me-too", 2));
            let stored = stored.as_ref().unwrap().as_ref().unwrap();
            assert_eq!(stored.record, "{\"version\":1}");
        }
        other => panic!("AAAA: {other:?}"),
    }
    assert!(matches!(claimed[1], Ok(Claimed::Lost)), "BBBB: lost");
    let instances = ["me-too".to_owned(), "nobody".to_owned()];
    let alive = store.alive(&instances).await.unwrap();
    for (instance, alive) in instances.iter().zip(alive) {
        assert_eq!(store.is_alive(instance).await.unwrap(), alive);
    }
}
