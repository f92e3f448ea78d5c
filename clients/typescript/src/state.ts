/**
 * What a session knows of the room it is in: the latest lobby state or solo
 * game state, kept by a {@link StateHolder}.
 *
 * Protocol 1 sends the whole room after every change, so its holder simply
 * keeps the newest snapshot. Protocol 2 sends events instead; its holder
 * (`V2RoomView` in v2.ts) applies them to the snapshot it keeps and asks for
 * a `resync` when it sees a gap; the session does not change.
 * @module
 */
import type { RoomSnapshot, RoomState, ServerMessage, SoloState } from "./generated/messages.js";

/** The latest view of the room, as the session's events carry it. */
export type RoomView =
  /** A lobby on a protocol 1 connection: the latest `state`. */
  | { kind: "lobby"; state: RoomState }
  /** A lobby on a protocol 2 connection: the room built from `snapshot` and events. */
  | { kind: "lobby_v2"; state: RoomSnapshot }
  /** A solo game (the same `solo_state` in both protocols). */
  | { kind: "solo"; state: SoloState };

/**
 * Where play stands in `view`, changing with every move applied: the
 * lobby's code, round and ply, or the solo game's id and ply ("" in no room).
 */
export function playMark(view: RoomView | undefined): string {
  if (view === undefined) return "";
  if (view.kind === "solo") return `solo/${view.state.id}/${view.state.game.ply}`;
  return `lobby/${view.state.code}/${view.state.series.round}/${view.state.game?.ply ?? 0}`;
}

/** The seat (0 or 1) `identityId` holds in the lobby of `view`, if any. */
export function seatOf(view: RoomView | undefined, identityId: string): number | undefined {
  if (view === undefined || view.kind === "solo") return undefined;
  const seat = view.state.players.findIndex((player) => player?.id === identityId);
  return seat < 0 ? undefined : seat;
}

/**
 * Whether `identityId` is to move in `view`: in a lobby, seated and on turn
 * in a round being played; in a solo game, always on one device, and against
 * the computer when it is not thinking.
 */
export function isMyTurn(view: RoomView | undefined, identityId: string): boolean {
  if (view === undefined) return false;
  if (view.kind === "solo") {
    const solo = view.state;
    return !solo.game.result && !solo.thinking && (solo.you == null || solo.you === solo.game.turn);
  }
  const room = view.state;
  const game = room.game;
  if (!game || room.phase !== "playing" || game.result) return false;
  const seat = seatOf(view, identityId);
  if (seat === undefined) return false;
  return (game.dark_seat === seat ? "dark" : "light") === game.turn;
}

/**
 * Whether nothing more will be played in `view`: no room, a lobby whose
 * series is over (`finished`, `ended`), or a solo game with a result.
 */
export function isFinished(view: RoomView | undefined): boolean {
  if (view === undefined) return true;
  if (view.kind === "solo") return Boolean(view.state.game.result);
  return view.state.phase === "finished" || view.state.phase === "ended";
}

/** What applying one server message did to the view. */
export type Applied =
  /** Nothing changed (another kind of message, or a stale snapshot). */
  | "unchanged"
  /** The view changed; the session emits it. */
  | "changed"
  /**
   * The message could not be applied because earlier ones are missing: the
   * session sends `resync` with `since` set to {@link StateHolder.version}.
   */
  | "gap"
  /**
   * The message did not fit the view, which was dropped (the session emits
   * the empty view) and needs a whole snapshot: the session sends `resync`
   * with `since` 0 ({@link StateHolder.version} is 0 by then).
   */
  | "dropped";

/** Keeps the view of the room from the server's messages. */
export interface StateHolder {
  /** The latest view; `undefined` while the session is in no room. */
  readonly view: RoomView | undefined;
  /** The version of the view, for `resync` (0 when there is none). */
  readonly version: number;
  /** Applies one message from the server. */
  apply(message: ServerMessage): Applied;
  /** Forgets the view: the session left the room or could not re-enter it. */
  clear(): void;
}

/**
 * Protocol 1's holder: every `state` and `solo_state` is complete, so the
 * newest replaces the view and one older than the view is ignored
 * (PROTOCOL.md section 9). `left` empties it.
 */
export class SnapshotStateHolder implements StateHolder {
  #view: RoomView | undefined;

  get view(): RoomView | undefined {
    return this.#view;
  }

  get version(): number {
    return this.#view?.state.version ?? 0;
  }

  apply(message: ServerMessage): Applied {
    switch (message.type) {
      case "state": {
        const { type: _type, ...state } = message;
        const current = this.#view;
        // Versions count per room: a state of another lobby replaces the view.
        if (current?.kind === "lobby" && current.state.code === state.code && state.version < current.state.version) {
          return "unchanged";
        }
        this.#view = { kind: "lobby", state };
        return "changed";
      }
      case "solo_state": {
        const { type: _type, ...state } = message;
        const current = this.#view;
        if (current?.kind === "solo" && current.state.id === state.id && state.version < current.state.version) {
          return "unchanged";
        }
        this.#view = { kind: "solo", state };
        return "changed";
      }
      case "left":
        if (this.#view === undefined) {
          return "unchanged";
        }
        this.#view = undefined;
        return "changed";
      default:
        return "unchanged";
    }
  }

  clear(): void {
    this.#view = undefined;
  }
}
