// V2RoomView against protocol 2's golden vectors, the cases of the Rust
// crate's protocol/tests/protocol/room_view.rs ported one for one: events
// applied to snapshots give the rooms they describe (in both encodings),
// gaps, duplicates and misfits are told apart, and each `changed` example is
// exactly the difference between the room before and after it.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { decodeMessage, gapSince, legalMoves, snapshotFromState, V2RoomView } from "../dist/index.js";
import { repoRoot } from "./harness.mjs";

const vectors = path.join(repoRoot, "protocol/tests/vectors");
const read = (name) => readFileSync(path.join(vectors, name), "utf8").replace(/\n$/, "");

/** Vector `name` as a client receives it in `encoding`. */
function received(name, encoding) {
  if (encoding === "json") {
    return decodeMessage(read(`${name}.json`), "json");
  }
  return decodeMessage(new Uint8Array(Buffer.from(read(`${name}.msgpack.hex`), "hex")), "msgpack");
}

const ENCODINGS = ["json", "msgpack"];
const withoutType = ({ type: _type, ...rest }) => rest;
const snapshot = (name) => withoutType(received(name, "json"));
const snapshotPlaying = () => snapshot("server_v2_snapshot_playing");
const snapshotSpace = () => snapshot("server_v2_snapshot_space");
const snapshotBreak = () => snapshotFromState(received("server_state_break", "json"));
const orbitWaiting = () => snapshotFromState(received("server_state_orbit_waiting", "json"));
const movedQuiet = () => received("server_v2_moved", "json");

function viewOf(room) {
  const view = new V2RoomView();
  assert.deepStrictEqual(view.update({ type: "snapshot", ...room }), { ok: "replaced" });
  return view;
}

/** `snapshotPlaying` after Dark's 9-14, written out by hand. */
function expectedAfterMovedQuiet() {
  const room = snapshotPlaying();
  room.version = 43;
  const game = room.game;
  game.pieces.find((p) => p.square === "g3").square = "f4";
  game.moves.push("9-14");
  game.last_move = { notation: "9-14", path: ["g3", "f4"], captures: [] };
  game.turn = "light";
  game.ply = 3;
  game.deadline = 1_767_225_690_000;
  game.remaining_ms = 45_000;
  game.legal = movedQuiet().legal;
  delete game.draw_offer;
  game.draw_declined = "light";
  return room;
}

test("there are protocol 2 vectors of every kind", () => {
  const names = readdirSync(vectors).filter((f) => /^server_v2_.*\.json$/.test(f));
  for (const kind of ["snapshot", "moved", "changed"]) {
    assert.ok(names.some((n) => n.startsWith(`server_v2_${kind}`)), kind);
  }
});

test("a snapshot is v1's state with a compact game (snapshotFromState, as RoomSnapshot::from)", () => {
  for (const encoding of ENCODINGS) {
    const fromVector = withoutType(received("server_v2_snapshot_orbit_waiting", encoding));
    assert.deepStrictEqual(snapshotFromState(received("server_state_orbit_waiting", encoding)), fromVector);
  }
  const breakRoom = snapshotBreak();
  assert.equal(breakRoom.game.fen, undefined);
  assert.equal(breakRoom.game.legal_moves, undefined);
  assert.ok(Array.isArray(breakRoom.game.legal));
});

test("a move plays on the snapshot", () => {
  for (const encoding of ENCODINGS) {
    const view = viewOf(snapshotPlaying());
    assert.deepStrictEqual(view.update(received("server_v2_moved", encoding)), { ok: "applied" });
    assert.deepStrictEqual(view.room, expectedAfterMovedQuiet());
    assert.equal(view.roomVersion, 43);
  }
});

test("a boost spends a charge and captures go", () => {
  for (const encoding of ENCODINGS) {
    const view = viewOf(snapshotSpace());
    assert.deepStrictEqual(view.update(received("server_v2_moved_space_boost", encoding)), { ok: "applied" });
    const game = view.room.game;
    assert.equal(game.space.boosts.light, 2);
    assert.deepStrictEqual(game.space.wormholes, ["f4", "g5"]);
    assert.ok(game.pieces.some((p) => p.square === "c5"));
    assert.ok(!game.pieces.some((p) => p.square === "a7"));
    assert.equal(game.must_capture, undefined);
    assert.equal(game.legal_boosts.length, 1);
    assert.equal(game.legal_teleports.length, game.legal.length);
    assert.deepStrictEqual(game.legal_teleports[2], [["f4", "g5"]]);
    assert.deepStrictEqual(legalMoves(game)[2], { path: ["e3", "f4"], captures: [], boost: false, teleports: [["f4", "g5"]] });
    assert.deepStrictEqual(game.last_move, { notation: "28-19", path: ["a7", "c5"], captures: [], boost: true });

    // A capture takes the jumped pieces off and crowns the capturer.
    const room = snapshotPlaying();
    room.game.pieces = room.game.pieces.filter((p) => !["e3", "g1"].includes(p.square));
    const capturing = new V2RoomView(room);
    const moved = { ...received("server_v2_moved_game_over", encoding), version: 43 };
    assert.deepStrictEqual(capturing.update(moved), { ok: "applied" });
    const after = capturing.room;
    const king = after.game.pieces.find((p) => p.square === "g1");
    assert.ok(king.king && king.color === "light");
    assert.ok(!after.game.pieces.some((p) => ["c5", "d4", "f2"].includes(p.square)));
    assert.deepStrictEqual(after.game.result, moved.result);
    assert.equal(after.phase, "finished");
    assert.deepStrictEqual(after.series, moved.room.series);
  }
});

test("changes patch fields in place", () => {
  for (const encoding of ENCODINGS) {
    const view = viewOf(snapshotPlaying());
    view.update(received("server_v2_moved", encoding));
    assert.deepStrictEqual(view.update(received("server_v2_changed_draw_offer", encoding)), { ok: "applied" });
    assert.equal(view.room.game.draw_offer, "light");
    assert.ok(!("draw_declined" in view.room.game), "null removes the field");

    const connected = viewOf(snapshotPlaying());
    connected.update(received("server_v2_changed_connected", encoding));
    assert.equal(connected.room.players[0].connected, true);
    assert.equal(connected.room.players[1].connected, false);
  }
});

test("gaps, duplicates and misfits are told apart", () => {
  const empty = new V2RoomView();
  const early = empty.update(movedQuiet());
  assert.deepStrictEqual(early, { gap: { kind: "no_snapshot", got: 43 } });
  assert.equal(gapSince(early.gap), 0);

  const view = viewOf(snapshotPlaying());
  const skipped = view.update(received("server_v2_changed_draw_offer", "json"));
  assert.deepStrictEqual(skipped, { gap: { kind: "missed", have: 42, got: 44 } });
  assert.equal(gapSince(skipped.gap), 42);
  assert.deepStrictEqual(view.room, snapshotPlaying(), "a gap changes nothing");

  view.update(movedQuiet());
  assert.deepStrictEqual(view.update(movedQuiet()), { ok: "already_held" });
  assert.deepStrictEqual(view.room, expectedAfterMovedQuiet());

  // A move from an empty square cannot be right: the view starts over.
  const misfitView = viewOf(snapshotPlaying());
  const wrong = movedQuiet();
  wrong.path[0] = "h4";
  const misfit = misfitView.update(wrong);
  assert.equal(misfit.gap.kind, "mismatch");
  assert.equal(misfit.gap.version, 43);
  assert.equal(gapSince(misfit.gap), 0);
  assert.equal(misfitView.room, undefined);

  // Other messages pass by; `left` empties the view.
  const leaving = viewOf(snapshotPlaying());
  assert.deepStrictEqual(leaving.update({ type: "ack", seq: 1 }), { ok: "unrelated" });
  assert.deepStrictEqual(leaving.update({ type: "left", code: "K7QP2D" }), { ok: "left" });
  assert.equal(leaving.roomVersion, undefined);
});

test("as the session's state holder it reports gaps, drops misfits and keeps solo games", () => {
  const holder = new V2RoomView();
  assert.equal(holder.apply(movedQuiet()), "gap");
  assert.equal(holder.version, 0, "resync from 0 when nothing is held");
  assert.equal(holder.apply({ type: "snapshot", ...snapshotPlaying() }), "changed");
  assert.equal(holder.view.kind, "lobby_v2");
  assert.equal(holder.apply(received("server_v2_changed_draw_offer", "json")), "gap");
  assert.equal(holder.version, 42, "resync from the version held");
  assert.equal(holder.apply(movedQuiet()), "changed");
  assert.equal(holder.apply(movedQuiet()), "unchanged");
  const wrong = { ...movedQuiet(), version: 44, path: ["h4", "g5"] }; // h4 is empty
  assert.equal(holder.apply(wrong), "dropped");
  assert.equal(holder.view, undefined);
  assert.equal(holder.version, 0);
  const solo = received("server_solo_state", "json");
  assert.equal(holder.apply(solo), "changed");
  assert.equal(holder.view.kind, "solo");
  assert.equal(holder.view.state.type, undefined, "the view holds the game's fields");
});

// --- The difference between two rooms, as the Rust `Changed::between` writes it.

const same = (a, b) => {
  try {
    assert.deepStrictEqual(a, b);
    return true;
  } catch {
    return false;
  }
};
const FIXED = ["code", "rule_set", "series_length", "invite_only", "pace", "draw_rules", "stake", "invite", "invite_link"];
const ROOM_FIELDS = ["head_to_head", "spectators", "phase", "series", "expires_at", "board", "break_ends_at", "next_round", "rematch"];
const GAME_FIELDS = ["deadline", "remaining_ms", "legal", "legal_boosts", "must_capture", "draw_offer", "draw_declined", "result"];
const BOARD = ["dark_seat", "pieces", "turn", "ply", "moves", "last_move", "board", "space"];
/** Fields a snapshot leaves out when empty, which an event names as `null` (or, for lists, []). */
const absentAs = (field, value) => value ?? (["legal_boosts", "must_capture"].includes(field) ? [] : null);

function changedBetween(old, now) {
  if (!FIXED.every((f) => same(old[f], now[f]))) {
    return undefined;
  }
  const room = {};
  const game = {};
  if (old.host !== now.host) room.host = now.host;
  if (!same(old.players, now.players)) {
    const onlyPresence =
      old.players.length === now.players.length &&
      old.players.every((a, i) => {
        const b = now.players[i];
        return (a == null && b == null) || (a != null && b != null && a.id === b.id && a.name === b.name && same(a.record, b.record));
      });
    if (onlyPresence) room.connected = now.players.map((p) => p?.connected ?? false);
    else room.players = now.players;
  }
  for (const f of ROOM_FIELDS) {
    if (!same(old[f], now[f])) room[f] = absentAs(f, now[f]);
  }
  if (old.game !== undefined && now.game !== undefined) {
    if (BOARD.every((f) => same(old.game[f], now.game[f]))) {
      for (const f of GAME_FIELDS) {
        if (!same(old.game[f], now.game[f])) game[f] = absentAs(f, now.game[f]);
      }
      if (now.game.points !== undefined && !same(old.game.points, now.game.points)) game.points = now.game.points;
    } else {
      room.game = now.game;
    }
  } else if (old.game !== undefined || now.game !== undefined) {
    room.game = now.game ?? null;
  }
  return {
    type: "changed",
    version: now.version,
    ...(Object.keys(room).length > 0 ? { room } : {}),
    ...(Object.keys(game).length > 0 ? { game } : {}),
  };
}

test("each changed example is exactly what differs between the room before and after it", () => {
  const playingThenMoved = (() => {
    const view = viewOf(snapshotPlaying());
    view.update(movedQuiet());
    return view.room;
  })();
  const cases = [
    [snapshotPlaying(), "server_v2_changed_connected"],
    [playingThenMoved, "server_v2_changed_draw_offer"],
    [snapshotPlaying(), "server_v2_changed_resigned"],
    [snapshotBreak(), "server_v2_changed_next_round"],
    [orbitWaiting(), "server_v2_changed_seat_taken"],
  ];
  for (const [before, name] of cases) {
    for (const encoding of ENCODINGS) {
      const event = received(name, encoding);
      const view = viewOf(before);
      assert.deepStrictEqual(view.update(event), { ok: "applied" }, `${name} (${encoding})`);
      assert.deepStrictEqual(changedBetween(before, view.room), received(name, "json"), `${name} (${encoding})`);
    }
  }
  // A lobby's fixed settings change only with a snapshot.
  assert.equal(changedBetween(snapshotPlaying(), { ...snapshotPlaying(), stake: 100 }), undefined);
});

test("the captures of legal moves are read beside their paths", () => {
  for (const encoding of ENCODINGS) {
    const moved = received("server_v2_moved_capture_ahead", encoding);
    assert.deepStrictEqual(moved.legal_captures, [["e5"]]);
    const game = { legal: moved.legal, legal_captures: moved.legal_captures, must_capture: moved.must_capture };
    assert.deepStrictEqual(legalMoves(game), [{ path: ["d4", "f6"], captures: ["e5"], boost: false, teleports: [] }]);
  }
});
