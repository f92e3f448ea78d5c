//! The Redis store's solo-game notes and the writes that close them.

use super::*;

impl SoloStore for RedisStore {
    fn write_solo<'a>(&'a self, write: &'a RoomWrite, owner: &'a str) -> WriteFuture<'a> {
        self.write_noting(write, Some(owner))
    }

    fn index_solo<'a>(&'a self, owner: &'a str, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let () = redis::cmd("SET")
                .arg(solo_key(owner))
                .arg(id)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(())
        }))
    }

    fn index_solo_unless_noted<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> StoreFuture<'a, Option<String>> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let key = solo_key(owner);
            let (noted,): (Option<String>,) = redis::pipe()
                .cmd("SET")
                .arg(&key)
                .arg(id)
                .arg("NX")
                .ignore()
                .get(&key)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(noted)
        }))
    }

    fn solo_of<'a>(&'a self, owner: &'a str) -> StoreFuture<'a, Option<String>> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let id: Option<String> = redis::cmd("GET")
                .arg(solo_key(owner))
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(id)
        }))
    }
}
