/**
 * The errors a session's promises reject with.
 * @module
 */
import type { ClientMessage, ErrorCode } from "./generated/messages.js";

/**
 * The server refused a request: `code` is the stable error code to branch on
 * (PROTOCOL.md section 15), `message` a sentence for people.
 */
export class JumpgateError extends Error {
  override readonly name = "JumpgateError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** The refused request's `seq`; absent when the server could not read it. */
    readonly seq?: number,
    /** The refused request, when it was one of this session's. */
    readonly request?: ClientMessage,
  ) {
    super(message);
  }
}

/**
 * A request that was waiting for its answer when the connection dropped and
 * that the session did not send again, because the server does not apply a
 * repeat of it only once: a move or undo in a solo game (PROTOCOL.md
 * section 14). The fresh `solo_state` after the reconnection shows whether it
 * took effect.
 */
export class RequestNotResentError extends Error {
  override readonly name = "RequestNotResentError";
  constructor(readonly request: ClientMessage) {
    super(`${request.type} (seq ${request.seq}) was unanswered when the connection dropped and is not sent again`);
  }
}

/**
 * A request that acted in a room (a move, a resignation, ...) was unanswered
 * when the connection dropped, and the server then refused to let the session
 * back into that room (`refusal`, e.g. `unknown_lobby` from a server restarted
 * without Redis): the room is gone, so the request was not sent again. The
 * session is in no room now.
 */
export class RoomLostError extends Error {
  override readonly name = "RoomLostError";
  constructor(
    readonly request: ClientMessage,
    readonly room: string,
    readonly refusal: JumpgateError,
  ) {
    super(`the room ${room} is gone (${refusal.code} on re-entering it); ${request.type} (seq ${request.seq}) was not sent again`);
  }
}

/**
 * The session has stopped and will not reconnect: the server refused it
 * (a close with 1002, 1007 or 1009, `hello` refused, the wrong subprotocol),
 * reconnecting failed for longer than the policy allows, the server welcomed
 * the token as someone else, or the user closed it.
 */
export class SessionEndedError extends Error {
  override readonly name = "SessionEndedError";
  constructor(
    message: string,
    /** The server's refusal, when the end was one (say, `invalid_token`). */
    readonly refusal?: JumpgateError,
    /** The close code of the connection that ended it, when there was one. */
    readonly closeCode?: number,
  ) {
    super(message);
  }
}
