// jumpgate-client.js: generated from clients/typescript/src/v2.ts by
// `npm run bundle:web` in clients/typescript; do not edit by hand.

// src/v2.ts
function gapSince(gap) {
  return gap.kind === "missed" ? gap.have : 0;
}
var V2RoomView = class {
  #room;
  #solo;
  #lastGap;
  /** A view holding `snapshot`, or empty until the first `snapshot`. */
  constructor(snapshot) {
    this.#room = snapshot === void 0 ? void 0 : canonicalSnapshot(snapshot);
  }
  /** The room as of {@link roomVersion}, if a snapshot has arrived. */
  get room() {
    return this.#room;
  }
  /** The room version held, if any. */
  get roomVersion() {
    return this.#room?.version;
  }
  /** The gap the latest {@link apply} reported, until the next one applies. */
  get lastGap() {
    return this.#lastGap;
  }
  /**
   * Applies one message, exactly as the Rust `RoomView::apply`: a `snapshot`
   * replaces the room; `moved` and `changed` must carry the next version
   * (older ones are ignored as already held); `left` for this room empties
   * it. A refused event leaves the room as it was, except a misfit, which
   * drops it.
   */
  update(message) {
    switch (message.type) {
      case "snapshot": {
        const { type: _type, ...snapshot } = message;
        this.#room = canonicalSnapshot(snapshot);
        return { ok: "replaced" };
      }
      case "moved":
      case "changed": {
        const room = this.#room;
        if (room === void 0) {
          return { gap: { kind: "no_snapshot", got: message.version } };
        }
        if (message.version <= room.version) {
          return { ok: "already_held" };
        }
        if (message.version !== room.version + 1) {
          return { gap: { kind: "missed", have: room.version, got: message.version } };
        }
        const { type: _type, ...event } = message;
        const next = structuredClone(room);
        const why = message.type === "moved" ? applyMoved(next, event) : applyChanged(next, event);
        if (why !== void 0) {
          this.#room = void 0;
          return { gap: { kind: "mismatch", version: message.version, why } };
        }
        this.#room = next;
        return { ok: "applied" };
      }
      case "left":
        if (this.#room !== void 0 && this.#room.code === message.code) {
          this.#room = void 0;
          return { ok: "left" };
        }
        return { ok: "unrelated" };
      default:
        return { ok: "unrelated" };
    }
  }
  // The StateHolder side, for the session.
  get view() {
    if (this.#room !== void 0) {
      return { kind: "lobby_v2", state: this.#room };
    }
    return this.#solo;
  }
  get version() {
    return this.#room?.version ?? 0;
  }
  apply(message) {
    if (message.type === "solo_state") {
      const { type: _type, ...state } = message;
      const current = this.#solo;
      if (current?.kind === "solo" && current.state.id === state.id && state.version < current.state.version) {
        return "unchanged";
      }
      this.#room = void 0;
      this.#solo = { kind: "solo", state };
      return "changed";
    }
    if (message.type === "left" && this.#room === void 0 && this.#solo !== void 0) {
      this.#solo = void 0;
      return "changed";
    }
    const result = this.update(message);
    if ("gap" in result) {
      this.#lastGap = result.gap;
      return result.gap.kind === "mismatch" ? "dropped" : "gap";
    }
    this.#lastGap = void 0;
    switch (result.ok) {
      case "replaced":
        this.#solo = void 0;
        return "changed";
      case "applied":
      case "left":
        return "changed";
      default:
        return "unchanged";
    }
  }
  clear() {
    this.#room = void 0;
    this.#solo = void 0;
    this.#lastGap = void 0;
  }
};
function withoutNulls(value) {
  for (const key of Object.keys(value)) {
    if (value[key] === null || value[key] === void 0) {
      delete value[key];
    }
  }
  return value;
}
function canonicalSnapshot(snapshot) {
  const room = withoutNulls(structuredClone(snapshot));
  if (room.game !== void 0) {
    canonicalGame(room.game);
  }
  return room;
}
var OPTIONAL_LISTS = ["legal_captures", "legal_teleports", "legal_boosts", "legal_boost_teleports"];
function canonicalGame(game) {
  withoutNulls(game);
  for (const key of OPTIONAL_LISTS) {
    if (game[key]?.length === 0) {
      delete game[key];
    }
  }
  if (game.must_capture?.length === 0) {
    delete game.must_capture;
  }
  return game;
}
function setOrRemove(target, key, value) {
  if (value === null || value === void 0) {
    delete target[key];
  } else {
    target[key] = value;
  }
}
function played(moved) {
  return {
    notation: moved.notation,
    path: [...moved.path],
    captures: [...moved.captures ?? []],
    ...moved.boost === true ? { boost: true } : {},
    ...moved.teleports !== void 0 && moved.teleports.length > 0 ? { teleports: structuredClone(moved.teleports) } : {}
  };
}
function applyMoved(room, moved) {
  const game = room.game ?? void 0;
  if (game === void 0) {
    return "a move with no game";
  }
  const from = moved.path[0];
  const to = moved.to ?? moved.path[moved.path.length - 1];
  if (from === void 0 || to === void 0) {
    return "a move with no path";
  }
  const mover = game.pieces.find((piece) => piece.square === from);
  if (mover === void 0) {
    return "no piece on the move's start square";
  }
  const captures = moved.captures ?? [];
  if (captures.some((square) => !game.pieces.some((piece) => piece.square === square))) {
    return "a capture of an empty square";
  }
  const boosts = moved.boosts ?? void 0;
  const wormholes = moved.wormholes ?? void 0;
  if ((boosts !== void 0 || wormholes !== void 0) && game.space == null) {
    return "Space Mode fields outside Space Mode";
  }
  mover.square = to;
  mover.king = mover.king || moved.crowned === true;
  const moverColor = mover.color;
  game.pieces = game.pieces.filter((piece) => piece.color === moverColor || !captures.includes(piece.square));
  game.moves.push(moved.notation);
  game.last_move = played(moved);
  game.turn = moved.turn;
  game.ply = moved.ply;
  game.deadline = moved.deadline;
  game.remaining_ms = moved.remaining_ms;
  game.legal = structuredClone(moved.legal);
  for (const key of OPTIONAL_LISTS) {
    const list = moved[key];
    setOrRemove(game, key, list?.length ? structuredClone(list) : void 0);
  }
  setOrRemove(game, "must_capture", moved.must_capture?.length ? [...moved.must_capture] : void 0);
  setOrRemove(game, "draw_offer", moved.draw_offer);
  setOrRemove(game, "draw_declined", moved.draw_declined);
  if (game.space != null) {
    if (boosts !== void 0) {
      game.space.boosts = { ...boosts };
    }
    if (wormholes !== void 0) {
      game.space.wormholes = [...wormholes];
    }
  }
  if (moved.points != null) {
    game.points = { ...moved.points };
  }
  setOrRemove(game, "result", moved.result == null ? void 0 : { ...moved.result });
  applyRoomChanges(room, moved.room ?? {});
  room.version = moved.version;
  return void 0;
}
function applyChanged(room, changed) {
  const roomChanges = changed.room ?? {};
  const gameChanges = changed.game ?? {};
  const gameAfter = "game" in roomChanges && roomChanges.game !== void 0 ? roomChanges.game !== null : room.game != null;
  if (!gameChangesEmpty(gameChanges) && !gameAfter) {
    return "a game change with no game";
  }
  applyRoomChanges(room, roomChanges);
  if (room.game != null) {
    applyGameChanges(room.game, gameChanges);
  }
  room.version = changed.version;
  return void 0;
}
function gameChangesEmpty(changes) {
  const removable = /* @__PURE__ */ new Set(["draw_offer", "draw_declined", "result"]);
  return Object.entries(changes).every(([key, value]) => value === void 0 || value === null && !removable.has(key));
}
function applyRoomChanges(room, changes) {
  if (changes.host != null) {
    room.host = changes.host;
  }
  if (changes.players != null) {
    room.players = structuredClone(changes.players);
  }
  if (changes.connected != null) {
    changes.connected.forEach((connected, seat) => {
      const player = room.players[seat];
      if (player != null) {
        player.connected = connected;
      }
    });
  }
  if (changes.head_to_head !== void 0) {
    setOrRemove(room, "head_to_head", structuredClone(changes.head_to_head));
  }
  if (changes.spectators != null) {
    room.spectators = changes.spectators;
  }
  if (changes.phase != null) {
    room.phase = changes.phase;
  }
  if (changes.series != null) {
    room.series = structuredClone(changes.series);
  }
  if (changes.expires_at !== void 0) {
    setOrRemove(room, "expires_at", changes.expires_at);
  }
  if (changes.game !== void 0) {
    setOrRemove(room, "game", changes.game === null ? null : canonicalGame(structuredClone(changes.game)));
  }
  if (changes.board !== void 0) {
    setOrRemove(room, "board", structuredClone(changes.board));
  }
  if (changes.break_ends_at !== void 0) {
    setOrRemove(room, "break_ends_at", changes.break_ends_at);
  }
  if (changes.next_round != null) {
    room.next_round = [...changes.next_round];
  }
  if (changes.rematch != null) {
    room.rematch = [...changes.rematch];
  }
}
function applyGameChanges(game, changes) {
  if (changes.deadline != null) {
    game.deadline = changes.deadline;
  }
  if (changes.remaining_ms != null) {
    game.remaining_ms = changes.remaining_ms;
  }
  if (changes.legal != null) {
    game.legal = structuredClone(changes.legal);
  }
  for (const key of OPTIONAL_LISTS) {
    const list = changes[key];
    if (list != null) {
      setOrRemove(game, key, list.length > 0 ? structuredClone(list) : void 0);
    }
  }
  if (changes.must_capture != null) {
    setOrRemove(game, "must_capture", changes.must_capture.length > 0 ? [...changes.must_capture] : void 0);
  }
  if (changes.draw_offer !== void 0) {
    setOrRemove(game, "draw_offer", changes.draw_offer);
  }
  if (changes.draw_declined !== void 0) {
    setOrRemove(game, "draw_declined", changes.draw_declined);
  }
  if (changes.result !== void 0) {
    setOrRemove(game, "result", changes.result === null ? null : { ...changes.result });
  }
  if (changes.points != null) {
    game.points = { ...changes.points };
  }
}
function snapshotFromState(state) {
  const { game, ...room } = structuredClone(state);
  delete room.type;
  const snapshot = room;
  if (game != null) {
    snapshot.game = compactGame(game);
  }
  return canonicalSnapshot(snapshot);
}
function listedIfAny(lists) {
  return lists.some((list) => list.length > 0) ? lists : [];
}
function compactGame(game) {
  const { fen: _fen, legal_moves: legalMoves2, ...rest } = game;
  const compact = rest;
  const plain = legalMoves2.filter((m) => m.boost !== true);
  const boosted = legalMoves2.filter((m) => m.boost === true);
  compact.legal = plain.map((m) => m.path);
  compact.legal_captures = listedIfAny(plain.map((m) => m.captures));
  compact.legal_teleports = listedIfAny(plain.map((m) => m.teleports ?? []));
  compact.legal_boosts = boosted.map((m) => m.path);
  compact.legal_boost_teleports = listedIfAny(boosted.map((m) => m.teleports ?? []));
  return canonicalGame(compact);
}
function legalMoves(game) {
  const plain = game.legal.map((path, i) => ({
    path,
    captures: game.legal_captures?.[i] ?? [],
    boost: false,
    teleports: game.legal_teleports?.[i] ?? []
  }));
  const boosted = (game.legal_boosts ?? []).map((path, i) => ({
    path,
    captures: [],
    boost: true,
    teleports: game.legal_boost_teleports?.[i] ?? []
  }));
  return [...plain, ...boosted];
}
export {
  V2RoomView,
  compactGame,
  gapSince,
  legalMoves,
  snapshotFromState
};
