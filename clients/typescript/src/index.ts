/**
 * The Jumpgate client package: message types generated from the protocol's
 * JSON Schemas, both wire encodings, and a {@link Session} that reconnects by
 * itself.
 * @module
 */
export * from "./generated/messages.js";
export {
  DecodeError,
  decodeMessage,
  encodeMessage,
  subprotocol,
  SUBPROTOCOLS,
  SUBPROTOCOLS_V2,
  type Encoding,
  type Frame,
  type ProtocolVersion,
} from "./codec.js";
export { ConnectionClosed, SubprotocolError, type WebSocketConstructor, type WebSocketLike } from "./connection.js";
export { JumpgateError, RequestNotResentError, RoomLostError, SessionEndedError } from "./errors.js";
export { HttpError, HttpPages } from "./pages.js";
export {
  backoffDelay,
  CLOSE_ROOM_MOVED,
  closeMeansReconnect,
  DEFAULT_BACKOFF,
  DEFAULT_POLICY,
  isRetryableCode,
  roomUrl,
  type Backoff,
  type ReconnectPolicy,
} from "./policy.js";
export {
  PROTOCOL_VERSION,
  Session,
  type Answer,
  type Disconnect,
  type Reconnection,
  type Reentry,
  type Request,
  type Room,
  type SessionEvents,
  type SessionOptions,
} from "./session.js";
export {
  isFinished,
  isMyTurn,
  playMark,
  seatOf,
  SnapshotStateHolder,
  type Applied,
  type RoomView,
  type StateHolder,
} from "./state.js";
export {
  compactGame,
  gapSince,
  legalMoves,
  snapshotFromState,
  V2RoomView,
  type Gap,
  type LegalMove,
  type Update,
  type UpdateResult,
} from "./v2.js";
