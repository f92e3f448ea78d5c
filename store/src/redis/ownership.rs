//! The Redis store's ownership commands: fences, claims, releases, homes,
//! heartbeats, orphans and handover requests.

use super::*;

impl OwnershipStore for RedisStore {
    fn fence<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Option<Fence>> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let [room, _, _, fence] = room_keys(code);
            // The room's slot in one round trip, the open set (another
            // slot) beside it.
            type Read = (
                Option<String>,
                Option<u64>,
                Option<u8>,
                Option<u8>,
                Option<String>,
                Option<String>,
                bool,
            );
            let mut other = self.conn.clone();
            let mut room_pipe = redis::pipe();
            room_pipe
                .hget(&fence, "owner")
                .hget(&fence, "epoch")
                .hget(&fence, "handed")
                .hget(&fence, "parked")
                .hget(&fence, "wake")
                .hget(&fence, "home")
                .exists(&room);
            let room_read = room_pipe.query_async::<Read>(&mut conn);
            let mut open_cmd = redis::cmd("SISMEMBER");
            open_cmd.arg(OPEN_SET).arg(code);
            let open_read = open_cmd.query_async::<bool>(&mut other);
            let (read, open) = futures_util::future::join(room_read, open_read).await;
            let (owner, epoch, handed, parked, wake, home, exists) =
                read.map_err(StoreError::from)?;
            let open = open.map_err(StoreError::from)?;
            Ok((exists && open).then(|| Fence {
                owner: owner.filter(|o| !o.is_empty()),
                epoch: epoch.unwrap_or(0),
                handed: handed == Some(1),
                parked: parked == Some(1),
                wake: wake.filter(|_| parked == Some(1)),
                home: home.filter(|h| !h.is_empty()),
            }))
        }))
    }

    fn claim<'a>(
        &'a self,
        code: &'a str,
        seen: &'a Fence,
        me: &'a Arc<str>,
    ) -> StoreFuture<'a, Option<OwnerEpoch>> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let [room, _, _, fence] = room_keys(code);
            let mut invocation = self.claim.prepare_invoke();
            invocation
                .key(&room)
                .key(&fence)
                .arg(&**me)
                .arg(seen.owner.as_deref().unwrap_or(""))
                .arg(seen.epoch);
            // Listed under its claimer first, so it is never owned by an
            // instance whose rooms do not list it (another slot: a command
            // of its own).
            sadd(&mut conn, &owned_key(me), code).await?;
            let mut pipe = redis::pipe();
            pipe.invoke_script(&invocation);
            let (epoch,): (u64,) = self.query_scripted(&mut conn, &pipe, &invocation).await?;
            Ok((epoch > 0).then(|| OwnerEpoch {
                instance: me.clone(),
                epoch,
            }))
        }))
    }

    fn release<'a>(
        &'a self,
        code: &'a str,
        owner: &'a OwnerEpoch,
        to: Option<&'a str>,
    ) -> StoreFuture<'a, bool> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let [_, _, _, fence] = room_keys(code);
            let mut invocation = self.release.prepare_invoke();
            invocation
                .key(&fence)
                .arg(&*owner.instance)
                .arg(owner.epoch)
                .arg(to.unwrap_or(""));
            // Listed for its next owner (or as released) before it is given
            // up, unlisted from this owner's rooms after: at every moment
            // some list names it.
            match to {
                Some(to) => sadd(&mut conn, &owned_key(to), code).await?,
                None => sadd(&mut conn, RELEASED, code).await?,
            }
            let mut pipe = redis::pipe();
            pipe.invoke_script(&invocation);
            let (released,): (u8,) = self.query_scripted(&mut conn, &pipe, &invocation).await?;
            srem(&mut conn, &owned_key(&owner.instance), code).await?;
            Ok(released == 1)
        }))
    }

    fn set_home<'a>(
        &'a self,
        code: &'a str,
        me: &'a str,
        home: &'a str,
        only_if_unset: bool,
    ) -> StoreFuture<'a, Option<String>> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let [_, _, _, fence] = room_keys(code);
            let mut invocation = self.set_home.prepare_invoke();
            invocation
                .key(&fence)
                .arg(me)
                .arg(home)
                .arg(if only_if_unset { "1" } else { "0" });
            let mut pipe = redis::pipe();
            pipe.invoke_script(&invocation);
            let (named,): (Option<String>,) =
                self.query_scripted(&mut conn, &pipe, &invocation).await?;
            Ok(named.filter(|h| !h.is_empty()))
        }))
    }

    fn heartbeat<'a>(
        &'a self,
        me: &'a str,
        token: &'a str,
        ttl: Duration,
    ) -> StoreFuture<'a, Beat> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
            let mut other = self.conn.clone();
            let mut set = redis::cmd("SET");
            set.arg(alive_key(me))
                .arg(token)
                .arg("PX")
                .arg(ttl_ms)
                .arg("GET");
            let beat = set.query_async::<Option<String>>(&mut conn);
            let listed = sadd(&mut other, INSTANCES, me);
            let (previous, listed) = futures_util::future::join(beat, listed).await;
            listed?;
            let previous = previous.map_err(StoreError::from)?;
            Ok(match previous {
                None => Beat::Lapsed,
                Some(previous) if previous == token => Beat::Continued,
                Some(_) => Beat::Shared,
            })
        }))
    }

    fn retire<'a>(&'a self, me: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let _: i64 = redis::cmd("DEL")
                .arg(alive_key(me))
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(())
        }))
    }

    fn mark_unready<'a>(&'a self, me: &'a str, unready: bool) -> StoreFuture<'a, ()> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let cmd = if unready {
                let mut set = redis::cmd("SET");
                set.arg(unready_key(me)).arg(1).arg("PX").arg(UNREADY_MS);
                set
            } else {
                let mut del = redis::cmd("DEL");
                del.arg(unready_key(me));
                del
            };
            let _: redis::Value = cmd.query_async(&mut conn).await.map_err(StoreError::from)?;
            Ok(())
        }))
    }

    fn up<'a>(&'a self, instances: &'a [String]) -> StoreFuture<'a, Vec<bool>> {
        Box::pin(observed("ownership", self.read_up(instances)))
    }

    fn is_alive<'a>(&'a self, instance: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let alive: bool = redis::cmd("EXISTS")
                .arg(alive_key(instance))
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(alive)
        }))
    }

    fn orphans<'a>(&'a self, me: &'a str, limit: usize) -> StoreFuture<'a, Vec<Orphan>> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let instances = smembers(&mut conn, INSTANCES).await?;
            let others: Vec<String> = instances.into_iter().filter(|i| i != me).collect();
            let mut found = Vec::new();
            if !others.is_empty() {
                // Every heartbeat is in a slot of its own.
                let reads = others.iter().map(|other| {
                    let mut conn = self.conn.clone();
                    async move {
                        redis::cmd("EXISTS")
                            .arg(alive_key(other))
                            .query_async::<bool>(&mut conn)
                            .await
                    }
                });
                let alive: Vec<bool> = futures_util::future::try_join_all(reads)
                    .await
                    .map_err(StoreError::from)?;
                for (dead, _) in others.iter().zip(alive).filter(|(_, alive)| !alive) {
                    let codes: Vec<String> = redis::cmd("SRANDMEMBER")
                        .arg(owned_key(dead))
                        .arg(limit)
                        .query_async(&mut conn)
                        .await
                        .map_err(StoreError::from)?;
                    if codes.is_empty() {
                        // Nothing left to adopt: forget the instance (it
                        // lists itself again if it was only slow).
                        srem(&mut conn, INSTANCES, dead).await?;
                    }
                    found.extend(codes.into_iter().map(|code| Orphan {
                        code,
                        dead_owner: Some(dead.clone()),
                    }));
                }
            }
            let mut other = self.conn.clone();
            let mut released_cmd = redis::cmd("SRANDMEMBER");
            released_cmd.arg(RELEASED).arg(limit);
            let released = released_cmd.query_async::<Vec<String>>(&mut conn);
            let mut own_cmd = redis::cmd("SRANDMEMBER");
            own_cmd.arg(owned_key(me)).arg(limit);
            let own = own_cmd.query_async::<Vec<String>>(&mut other);
            let (released, own) = futures_util::future::join(released, own).await;
            let (released, own) = (
                released.map_err(StoreError::from)?,
                own.map_err(StoreError::from)?,
            );
            found.extend(released.into_iter().map(|code| Orphan {
                code,
                dead_owner: None,
            }));
            found.extend(own.into_iter().map(|code| Orphan {
                code,
                dead_owner: Some(me.to_owned()),
            }));
            Ok(found)
        }))
    }

    fn forget_orphan<'a>(&'a self, orphan: &'a Orphan) -> StoreFuture<'a, ()> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let list = orphan
                .dead_owner
                .as_deref()
                .map_or(RELEASED.to_owned(), owned_key);
            srem(&mut conn, &list, &orphan.code).await
        }))
    }

    fn ask_handover<'a>(
        &'a self,
        owner: &'a str,
        code: &'a str,
        to: &'a str,
    ) -> StoreFuture<'a, ()> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let _: i64 = redis::cmd("PUBLISH")
                .arg(handover_channel(owner))
                .arg(format!("{code} {to}"))
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(())
        }))
    }

    fn handover_requests(&self, me: &str) -> mpsc::Receiver<String> {
        let (tx, rx) = mpsc::channel(1024);
        let client = self.client.clone();
        let channel = handover_channel(me);
        tokio::spawn(async move {
            use futures_util::StreamExt;
            // Subscribes, and subscribes again whenever the connection is
            // lost; a request lost meanwhile is asked again by its sender.
            while !tx.is_closed() {
                let subscribed = async {
                    let mut pubsub = client.get_async_pubsub().await?;
                    pubsub.subscribe(&channel).await?;
                    Ok::<_, redis::RedisError>(pubsub)
                };
                match subscribed.await {
                    Ok(mut pubsub) => {
                        let mut messages = pubsub.on_message();
                        while let Some(message) = messages.next().await {
                            if let Ok(code) = message.get_payload::<String>()
                                && tx.send(code).await.is_err()
                            {
                                return;
                            }
                        }
                        tracing::warn!("handover subscription lost; subscribing again");
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot subscribe to handover requests; retrying");
                    }
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        });
        rx
    }

    fn fences<'a>(&'a self, codes: &'a [String]) -> StoreFuture<'a, PerRoom<Option<Fence>>> {
        Box::pin(observed("resume", self.read_fences(codes)))
    }

    fn alive<'a>(&'a self, instances: &'a [String]) -> StoreFuture<'a, Vec<bool>> {
        Box::pin(observed("resume", self.read_alive(instances)))
    }

    fn claim_and_load<'a>(
        &'a self,
        rooms: &'a [(String, Fence)],
        me: &'a Arc<str>,
    ) -> StoreFuture<'a, PerRoom<Claimed>> {
        Box::pin(observed("resume", self.claim_and_read(rooms, me)))
    }
}
