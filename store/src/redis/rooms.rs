//! The Redis store's room writes, appends, loads and "my games" lists.

use super::*;

impl RoomStore for RedisStore {
    fn write<'a>(&'a self, write: &'a RoomWrite) -> WriteFuture<'a> {
        self.write_noting(write, None)
    }

    fn append<'a>(&'a self, append: &'a MoveAppend) -> WriteFuture<'a> {
        Box::pin(async move {
            let reply = observed("append", self.send_append(append)).await?;
            written(&reply)
        })
    }

    fn load<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Option<StoredRoom>> {
        Box::pin(observed("load", async move {
            let mut conn = self.conn.clone();
            load_room(&mut conn, code).await
        }))
    }

    fn load_open(&self) -> StoreFuture<'_, Vec<StoredRoom>> {
        Box::pin(observed("load", async move {
            let mut conn = self.conn.clone();
            let codes = smembers(&mut conn, OPEN_SET).await?;
            let mut rooms = Vec::new();
            for code in codes {
                match load_room(&mut conn, &code).await? {
                    Some(room) => rooms.push(room),
                    None => {
                        // Expired: nothing left to resume.
                        let _: i64 = redis::cmd("SREM")
                            .arg(OPEN_SET)
                            .arg(&code)
                            .query_async(&mut conn)
                            .await
                            .map_err(StoreError::from)?;
                    }
                }
            }
            Ok(rooms)
        }))
    }

    fn games<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Vec<String>> {
        Box::pin(observed("games", async move {
            let mut conn = self.conn.clone();
            let [_, _, games, _] = room_keys(code);
            let all: HashMap<u64, String> = redis::cmd("HGETALL")
                .arg(&games)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            let ordered: BTreeMap<u64, String> = all.into_iter().collect();
            Ok(ordered.into_values().collect())
        }))
    }

    fn ping(&self) -> StoreFuture<'_, ()> {
        Box::pin(observed("ping", async move {
            let mut conn = self.conn.clone();
            let _: String = redis::cmd("PING")
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(())
        }))
    }

    fn is_durable(&self) -> bool {
        true
    }

    fn open_codes(&self) -> StoreFuture<'_, Vec<String>> {
        Box::pin(observed("load", async move {
            smembers(&mut self.conn.clone(), OPEN_SET).await
        }))
    }

    fn rooms_of<'a>(&'a self, identity: &'a str) -> StoreFuture<'a, Vec<String>> {
        Box::pin(observed("load", async move {
            smembers(&mut self.conn.clone(), &mine_key(identity)).await
        }))
    }

    fn forget_rooms_of<'a>(
        &'a self,
        identity: &'a str,
        codes: &'a [String],
    ) -> StoreFuture<'a, ()> {
        Box::pin(observed("load", async move {
            if codes.is_empty() {
                return Ok(());
            }
            let mut conn = self.conn.clone();
            let _: i64 = redis::cmd("SREM")
                .arg(mine_key(identity))
                .arg(codes)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(())
        }))
    }

    fn open_records<'a>(&'a self, codes: &'a [String]) -> StoreFuture<'a, Vec<Option<OpenRecord>>> {
        Box::pin(observed("load", self.read_open_records(codes)))
    }
}
