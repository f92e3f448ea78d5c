// The pure parts of the session: back-off, close codes, room URLs and the
// protocol 1 state holder.
import assert from "node:assert/strict";
import { test } from "node:test";
import { backoffDelay, closeMeansReconnect, DEFAULT_BACKOFF, isRetryableCode, roomUrl, SnapshotStateHolder } from "../dist/index.js";

test("back-off doubles up to its cap, with jitter around it", () => {
  const middle = [0, 1, 2, 3, 4, 5, 6, 7].map((retry) => backoffDelay(DEFAULT_BACKOFF, retry, 0.5));
  assert.deepStrictEqual(middle, [500, 1000, 2000, 4000, 8000, 15000, 15000, 15000]);
  assert.equal(backoffDelay(DEFAULT_BACKOFF, 0, 0), 250);
  assert.equal(backoffDelay(DEFAULT_BACKOFF, 0, 1), 750);
  assert.equal(backoffDelay(DEFAULT_BACKOFF, 6, 1), 22500);
  assert.equal(backoffDelay(DEFAULT_BACKOFF, 4_000_000_000, 0.5), 15000, "huge retry counts stay at the cap");
  for (let retry = 0; retry < 12; retry += 1) {
    const delay = backoffDelay(DEFAULT_BACKOFF, retry);
    const base = backoffDelay(DEFAULT_BACKOFF, retry, 0.5);
    assert.ok(delay >= base / 2 && delay <= (base * 3) / 2, `${delay}`);
  }
});

test("every close but 1002, 1007 and 1009 means reconnect", () => {
  for (const code of [1000, 1001, 1005, 1006, 1008, 1011, 4000, 4001]) {
    assert.ok(closeMeansReconnect(code), `${code}`);
  }
  for (const code of [1002, 1007, 1009]) {
    assert.ok(!closeMeansReconnect(code), `${code}`);
  }
});

test("the retryable codes are the three PROTOCOL.md names", () => {
  assert.deepStrictEqual(
    ["storage_unavailable", "room_unavailable", "rate_limited", "illegal_move", "not_now"].filter(isRetryableCode),
    ["storage_unavailable", "room_unavailable", "rate_limited"],
  );
});

test("a room URL names the room once", () => {
  assert.equal(roomUrl("ws://h/ws", undefined), "ws://h/ws");
  assert.equal(roomUrl("ws://h/ws", "K7QP2DXM"), "ws://h/ws?room=K7QP2DXM");
  assert.equal(roomUrl("ws://h/ws?room=OLDCODE2&x=1", "S7K2QP4XZ"), "ws://h/ws?x=1&room=S7K2QP4XZ");
});

test("the snapshot holder keeps the newest state of a room and forgets it on left", () => {
  const holder = new SnapshotStateHolder();
  const state = (code, version) => ({ type: "state", code, version, players: [null, null] });
  assert.equal(holder.apply(state("AAAAAAAA", 3)), "changed");
  assert.equal(holder.version, 3);
  assert.equal(holder.apply(state("AAAAAAAA", 2)), "unchanged", "a stale state is ignored");
  assert.equal(holder.version, 3);
  assert.equal(holder.apply(state("AAAAAAAA", 5)), "changed", "a gap is harmless: states are complete");
  assert.equal(holder.apply(state("BBBBBBBB", 1)), "changed", "another room counts its own versions");
  assert.equal(holder.view.state.code, "BBBBBBBB");
  assert.equal(holder.view.state.type, undefined, "the view holds the room's fields");
  assert.equal(holder.apply({ type: "ack", seq: 4 }), "unchanged");
  assert.equal(holder.apply({ type: "left", code: "BBBBBBBB" }), "changed");
  assert.equal(holder.view, undefined);
  assert.equal(holder.apply({ type: "solo_state", id: "S1234ABCD", version: 0 }), "changed");
  assert.equal(holder.view.kind, "solo");
});
