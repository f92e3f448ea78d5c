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
