//! The Redis store's unloaded rooms: parking, the dormant list and its
//! sweep.

use super::*;

impl DormantStore for RedisStore {
    fn park<'a>(
        &'a self,
        code: &'a str,
        owner: &'a OwnerEpoch,
        wake_ms: u64,
    ) -> StoreFuture<'a, bool> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let [_, _, _, fence] = room_keys(code);
            let mut invocation = self.park.prepare_invoke();
            invocation
                .key(&fence)
                .arg(&*owner.instance)
                .arg(owner.epoch)
                .arg(dormant_score(wake_ms));
            // Listed as dormant before it is given up, unlisted from this
            // owner's rooms after (as in `release`): some list always
            // names it. A dormant entry of a room that was not parked is
            // dropped by the sweep once it sees the live owner.
            let _: i64 = redis::cmd("ZADD")
                .arg(DORMANT)
                .arg(dormant_score(wake_ms))
                .arg(code)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            let mut pipe = redis::pipe();
            pipe.invoke_script(&invocation);
            let (parked,): (u8,) = self.query_scripted(&mut conn, &pipe, &invocation).await?;
            srem(&mut conn, &owned_key(&owner.instance), code).await?;
            Ok(parked == 1)
        }))
    }

    fn relist_dormant<'a>(&'a self, code: &'a str, wake: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let _: i64 = redis::cmd("ZADD")
                .arg(DORMANT)
                .arg("NX")
                .arg(wake)
                .arg(code)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(())
        }))
    }

    fn dormant_due(&self, now_ms: u64, limit: usize) -> StoreFuture<'_, Vec<Dormant>> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let due: Vec<(String, String)> = redis::cmd("ZRANGEBYSCORE")
                .arg(DORMANT)
                .arg("-inf")
                .arg(now_ms)
                .arg("WITHSCORES")
                .arg("LIMIT")
                .arg(0)
                .arg(limit)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(due
                .into_iter()
                .map(|(code, wake)| Dormant { code, wake })
                .collect())
        }))
    }

    fn forget_dormant<'a>(&'a self, entry: &'a Dormant) -> StoreFuture<'a, ()> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let _: i64 = redis::cmd("EVAL")
                .arg(FORGET_DORMANT_SCRIPT)
                .arg(1)
                .arg(DORMANT)
                .arg(&entry.code)
                .arg(&entry.wake)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(())
        }))
    }
}
