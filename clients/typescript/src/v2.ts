/**
 * Protocol 2's room (PROTOCOL.md section 21): a lobby arrives whole once as
 * `snapshot`, then as one event per version, `moved` for a move and `changed`
 * for anything else. {@link V2RoomView} keeps the room by applying them, step
 * for step as the Rust crate's `jumpgate_protocol::v2::RoomView` does, and
 * says when a version was missed so that the session sends `resync { since }`.
 *
 * The room is kept in the form a `snapshot` has on the wire: fields that are
 * absent there (an empty `legal_boosts`, no `draw_offer`, …) are absent here
 * too, never `null` or empty, so a room built from events compares equal to a
 * fresh `snapshot` of the same version with a plain deep comparison (piece
 * order and clock readings aside, PROTOCOL.md section 21.7).
 * @module
 */
import type {
  Changed,
  GameChanges,
  GameSnapshot,
  GameView,
  Moved,
  MoveView,
  RoomChanges,
  RoomSnapshot,
  RoomState,
  ServerMessage,
} from "./generated/messages.js";
import type { Applied, RoomView, StateHolder } from "./state.js";

/** What {@link V2RoomView.update} did with a message. */
export type Update =
  /** A `snapshot` replaced the whole room. */
  | "replaced"
  /** An event moved the room one version on. */
  | "applied"
  /** An event for a version already held (sent again after a `resync`): ignored. */
  | "already_held"
  /** `left` for this room: the view is empty again. */
  | "left"
  /** A message that does not concern the room (`ack`, `error`, v1's `state`…). */
  | "unrelated";

/** Why an event could not be applied; send `resync` with {@link gapSince}. */
export type Gap =
  /** An event arrived before any `snapshot`. */
  | { kind: "no_snapshot"; got: number }
  /** One or more versions were missed; the room is unchanged. */
  | { kind: "missed"; have: number; got: number }
  /** The event does not fit the room (a move from an empty square…): the room is dropped. */
  | { kind: "mismatch"; version: number; why: string };

/** The `since` to send in `resync` after `gap`: the version held, or 0 (a whole `snapshot`). */
export function gapSince(gap: Gap): number {
  return gap.kind === "missed" ? gap.have : 0;
}

/** The outcome of {@link V2RoomView.update}. */
export type UpdateResult = { ok: Update } | { gap: Gap };

/**
 * A protocol 2 member's copy of its room, kept current by applying events;
 * also the session's {@link StateHolder} on a v2 connection (solo games keep
 * protocol 1's `solo_state`, which replaces the view as it does there).
 */
export class V2RoomView implements StateHolder {
  #room: RoomSnapshot | undefined;
  #solo: RoomView | undefined;
  #lastGap: Gap | undefined;

  /** A view holding `snapshot`, or empty until the first `snapshot`. */
  constructor(snapshot?: RoomSnapshot) {
    this.#room = snapshot === undefined ? undefined : canonicalSnapshot(snapshot);
  }

  /** The room as of {@link roomVersion}, if a snapshot has arrived. */
  get room(): RoomSnapshot | undefined {
    return this.#room;
  }

  /** The room version held, if any. */
  get roomVersion(): number | undefined {
    return this.#room?.version;
  }

  /** The gap the latest {@link apply} reported, until the next one applies. */
  get lastGap(): Gap | undefined {
    return this.#lastGap;
  }

  /**
   * Applies one message, exactly as the Rust `RoomView::apply`: a `snapshot`
   * replaces the room; `moved` and `changed` must carry the next version
   * (older ones are ignored as already held); `left` for this room empties
   * it. A refused event leaves the room as it was, except a misfit, which
   * drops it.
   */
  update(message: ServerMessage): UpdateResult {
    switch (message.type) {
      case "snapshot": {
        const { type: _type, ...snapshot } = message;
        this.#room = canonicalSnapshot(snapshot);
        return { ok: "replaced" };
      }
      case "moved":
      case "changed": {
        const room = this.#room;
        if (room === undefined) {
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
        const why = message.type === "moved" ? applyMoved(next, event as Moved) : applyChanged(next, event as Changed);
        if (why !== undefined) {
          this.#room = undefined;
          return { gap: { kind: "mismatch", version: message.version, why } };
        }
        this.#room = next;
        return { ok: "applied" };
      }
      case "left":
        if (this.#room !== undefined && this.#room.code === message.code) {
          this.#room = undefined;
          return { ok: "left" };
        }
        return { ok: "unrelated" };
      default:
        return { ok: "unrelated" };
    }
  }

  // The StateHolder side, for the session.

  get view(): RoomView | undefined {
    if (this.#room !== undefined) {
      return { kind: "lobby_v2", state: this.#room };
    }
    return this.#solo;
  }

  get version(): number {
    return this.#room?.version ?? 0;
  }

  apply(message: ServerMessage): Applied {
    if (message.type === "solo_state") {
      const { type: _type, ...state } = message;
      const current = this.#solo;
      if (current?.kind === "solo" && current.state.id === state.id && state.version < current.state.version) {
        return "unchanged";
      }
      this.#room = undefined;
      this.#solo = { kind: "solo", state };
      return "changed";
    }
    if (message.type === "left" && this.#room === undefined && this.#solo !== undefined) {
      this.#solo = undefined;
      return "changed";
    }
    const result = this.update(message);
    if ("gap" in result) {
      this.#lastGap = result.gap;
      // A misfit dropped the room: that is a change the session shows.
      return result.gap.kind === "mismatch" ? "dropped" : "gap";
    }
    this.#lastGap = undefined;
    switch (result.ok) {
      case "replaced":
        this.#solo = undefined;
        return "changed";
      case "applied":
      case "left":
        return "changed";
      default:
        return "unchanged";
    }
  }

  clear(): void {
    this.#room = undefined;
    this.#solo = undefined;
    this.#lastGap = undefined;
  }
}

/** `value` without the keys whose value is `null` or `undefined` (absent on the wire). */
function withoutNulls<T extends object>(value: T): T {
  for (const key of Object.keys(value) as (keyof T)[]) {
    if (value[key] === null || value[key] === undefined) {
      delete value[key];
    }
  }
  return value;
}

/** The snapshot as the server writes it: no `null`s, no empty lists that it leaves out. */
function canonicalSnapshot(snapshot: RoomSnapshot): RoomSnapshot {
  const room = withoutNulls(structuredClone(snapshot));
  if (room.game !== undefined) {
    canonicalGame(room.game as GameSnapshot);
  }
  return room;
}

/** The lists beside `legal` a snapshot leaves out when empty. */
const OPTIONAL_LISTS = ["legal_captures", "legal_teleports", "legal_boosts", "legal_boost_teleports"] as const;

function canonicalGame(game: GameSnapshot): GameSnapshot {
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

/** Sets `key` of `target` to `value`, or removes it when `value` is `null`/absent. */
function setOrRemove<T extends object, K extends keyof T>(target: T, key: K, value: T[K] | null | undefined): void {
  if (value === null || value === undefined) {
    delete target[key];
  } else {
    target[key] = value;
  }
}

/** The move as `last_move` holds it (a `MoveView`: `captures` always written). */
function played(moved: Moved): MoveView {
  return {
    notation: moved.notation,
    path: [...moved.path],
    captures: [...(moved.captures ?? [])],
    ...(moved.boost === true ? { boost: true } : {}),
    ...(moved.teleports !== undefined && moved.teleports.length > 0 ? { teleports: structuredClone(moved.teleports) } : {}),
  };
}

/**
 * Plays `moved` on `room`'s game (PROTOCOL.md section 21.4). Checks
 * everything first; returns why it does not fit, or `undefined` when applied.
 */
function applyMoved(room: RoomSnapshot, moved: Moved): string | undefined {
  const game = room.game ?? undefined;
  if (game === undefined) {
    return "a move with no game";
  }
  const from = moved.path[0];
  const to = moved.to ?? moved.path[moved.path.length - 1];
  if (from === undefined || to === undefined) {
    return "a move with no path";
  }
  const mover = game.pieces.find((piece) => piece.square === from);
  if (mover === undefined) {
    return "no piece on the move's start square";
  }
  const captures = moved.captures ?? [];
  if (captures.some((square) => !game.pieces.some((piece) => piece.square === square))) {
    return "a capture of an empty square";
  }
  const boosts = moved.boosts ?? undefined;
  const wormholes = moved.wormholes ?? undefined;
  if ((boosts !== undefined || wormholes !== undefined) && game.space == null) {
    return "Space Mode fields outside Space Mode";
  }
  mover.square = to;
  mover.king = mover.king || moved.crowned === true;
  const moverColor = mover.color;
  // Only the other side's pieces are taken (the mover may end where it started).
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
    setOrRemove(game, key, list?.length ? structuredClone(list) : undefined);
  }
  setOrRemove(game, "must_capture", moved.must_capture?.length ? [...moved.must_capture] : undefined);
  setOrRemove(game, "draw_offer", moved.draw_offer);
  setOrRemove(game, "draw_declined", moved.draw_declined);
  if (game.space != null) {
    if (boosts !== undefined) {
      game.space.boosts = { ...boosts };
    }
    if (wormholes !== undefined) {
      game.space.wormholes = [...wormholes];
    }
  }
  if (moved.points != null) {
    game.points = { ...moved.points };
  }
  setOrRemove(game, "result", moved.result == null ? undefined : { ...moved.result });
  applyRoomChanges(room, moved.room ?? {});
  room.version = moved.version;
  return undefined;
}

/** Applies `changed` (PROTOCOL.md section 21.5): `room` first, then `game`. */
function applyChanged(room: RoomSnapshot, changed: Changed): string | undefined {
  const roomChanges = changed.room ?? {};
  const gameChanges = changed.game ?? {};
  const gameAfter = "game" in roomChanges && roomChanges.game !== undefined ? roomChanges.game !== null : room.game != null;
  if (!gameChangesEmpty(gameChanges) && !gameAfter) {
    return "a game change with no game";
  }
  applyRoomChanges(room, roomChanges);
  if (room.game != null) {
    applyGameChanges(room.game, gameChanges);
  }
  room.version = changed.version;
  return undefined;
}

/**
 * Whether `changes` changes nothing, read as the Rust crate reads it: `null`
 * is a change only for the fields it removes.
 */
function gameChangesEmpty(changes: GameChanges): boolean {
  const removable = new Set(["draw_offer", "draw_declined", "result"]);
  return Object.entries(changes).every(([key, value]) => value === undefined || (value === null && !removable.has(key)));
}

/**
 * New values of top-level fields. As in the Rust crate, `null` removes the
 * fields a snapshot may leave out (`head_to_head`, `expires_at`, `game`,
 * `board`, `break_ends_at`) and means "unchanged" for the others.
 */
function applyRoomChanges(room: RoomSnapshot, changes: RoomChanges): void {
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
  if (changes.head_to_head !== undefined) {
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
  if (changes.expires_at !== undefined) {
    setOrRemove(room, "expires_at", changes.expires_at);
  }
  if (changes.game !== undefined) {
    setOrRemove(room, "game", changes.game === null ? null : canonicalGame(structuredClone(changes.game)));
  }
  if (changes.board !== undefined) {
    setOrRemove(room, "board", structuredClone(changes.board));
  }
  if (changes.break_ends_at !== undefined) {
    setOrRemove(room, "break_ends_at", changes.break_ends_at);
  }
  if (changes.next_round != null) {
    room.next_round = [...changes.next_round];
  }
  if (changes.rematch != null) {
    room.rematch = [...changes.rematch];
  }
}

/**
 * New values of the game's small fields. `null` removes `draw_offer`,
 * `draw_declined` and `result` and means "unchanged" for the others; empty
 * lists beside `legal` and `must_capture` are left out, as a snapshot leaves them.
 */
function applyGameChanges(game: GameSnapshot, changes: GameChanges): void {
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
      setOrRemove(game, key, list.length > 0 ? structuredClone(list) : undefined);
    }
  }
  if (changes.must_capture != null) {
    setOrRemove(game, "must_capture", changes.must_capture.length > 0 ? [...changes.must_capture] : undefined);
  }
  if (changes.draw_offer !== undefined) {
    setOrRemove(game, "draw_offer", changes.draw_offer);
  }
  if (changes.draw_declined !== undefined) {
    setOrRemove(game, "draw_declined", changes.draw_declined);
  }
  if (changes.result !== undefined) {
    setOrRemove(game, "result", changes.result === null ? null : { ...changes.result });
  }
  if (changes.points != null) {
    game.points = { ...changes.points };
  }
}

/**
 * The protocol 2 form of a v1 `state` (the Rust `RoomSnapshot::from`): the
 * same room with a compact game, no `fen`, legal moves as paths.
 */
export function snapshotFromState(state: RoomState): RoomSnapshot {
  const { game, ...room } = structuredClone(state) as RoomState & { type?: string };
  delete (room as { type?: string }).type;
  const snapshot = room as unknown as RoomSnapshot;
  if (game != null) {
    snapshot.game = compactGame(game);
  }
  return canonicalSnapshot(snapshot);
}

/** Lists beside `legal`, one per move, are sent only when some move's list is not empty. */
function listedIfAny<T>(lists: T[][]): T[][] {
  return lists.some((list) => list.length > 0) ? lists : [];
}

/** A v1 game view without its FEN, legal moves split into plain and boosted paths. */
export function compactGame(game: GameView): GameSnapshot {
  const { fen: _fen, legal_moves: legalMoves, ...rest } = game;
  const compact = rest as unknown as GameSnapshot;
  const plain = legalMoves.filter((m) => m.boost !== true);
  const boosted = legalMoves.filter((m) => m.boost === true);
  compact.legal = plain.map((m) => m.path);
  compact.legal_captures = listedIfAny(plain.map((m) => m.captures));
  compact.legal_teleports = listedIfAny(plain.map((m) => m.teleports ?? []));
  compact.legal_boosts = boosted.map((m) => m.path);
  compact.legal_boost_teleports = listedIfAny(boosted.map((m) => m.teleports ?? []));
  return canonicalGame(compact);
}

/** A legal move of a compact game, as {@link legalMoves} lists it. */
export interface LegalMove {
  /** What `move.path` takes to play it. */
  path: string[];
  /** The squares it takes, in jump order; empty for a quiet move. */
  captures: string[];
  /** A Space Mode thruster boost. */
  boost: boolean;
  /** Space Mode wormhole jumps, as [entrance, exit], in order. */
  teleports: [string, string][];
}

/**
 * The legal moves of a compact game with the lists beside `legal` read into
 * each move: plain moves first, then boosts, in the order sent.
 */
export function legalMoves(game: GameSnapshot): LegalMove[] {
  const plain = game.legal.map((path, i) => ({
    path,
    captures: game.legal_captures?.[i] ?? [],
    boost: false,
    teleports: game.legal_teleports?.[i] ?? [],
  }));
  const boosted = (game.legal_boosts ?? []).map((path, i) => ({
    path,
    captures: [],
    boost: true,
    teleports: game.legal_boost_teleports?.[i] ?? [],
  }));
  return [...plain, ...boosted];
}
