/**
 * The two wire encodings, the same in protocols 1 and 2: JSON in text frames
 * and MessagePack (maps keyed by field name) in binary frames (PROTOCOL.md
 * section 2).
 * @module
 */
import { decode as decodeMsgPack, encode as encodeMsgPack } from "@msgpack/msgpack";
import type { ClientMessage, ServerMessage } from "./generated/messages.js";

/** How a connection's messages are written; chosen by its subprotocol. */
export type Encoding = "json" | "msgpack";

/** A protocol version this package speaks (PROTOCOL.md section 21.1). */
export type ProtocolVersion = 1 | 2;

/** The WebSocket subprotocol that selects protocol 1 with each encoding. */
export const SUBPROTOCOLS: Readonly<Record<Encoding, string>> = {
  json: "jumpgate.v1.json",
  msgpack: "jumpgate.v1.msgpack",
};

/** The WebSocket subprotocol that selects protocol 2 with each encoding. */
export const SUBPROTOCOLS_V2: Readonly<Record<Encoding, string>> = {
  json: "jumpgate.v2.json",
  msgpack: "jumpgate.v2.msgpack",
};

/** The subprotocol that selects `protocol` with `encoding`. */
export function subprotocol(protocol: ProtocolVersion, encoding: Encoding): string {
  return (protocol === 2 ? SUBPROTOCOLS_V2 : SUBPROTOCOLS)[encoding];
}

/** A message's frame: text for JSON, bytes for MessagePack. */
export type Frame = string | Uint8Array;

/** A frame that is not a message of the protocol; `reason` says why. */
export class DecodeError extends Error {
  override readonly name = "DecodeError";
  constructor(readonly reason: string) {
    super(`undecodable message: ${reason}`);
  }
}

/** Writes `message` as one frame of `encoding`. */
export function encodeMessage(message: ClientMessage | ServerMessage, encoding: Encoding): Frame {
  if (encoding === "json") {
    return JSON.stringify(message);
  }
  // `ignoreUndefined` leaves absent optional fields out, as the protocol asks,
  // instead of writing them as nil.
  return encodeMsgPack(message, { ignoreUndefined: true });
}

/**
 * Reads one frame of `encoding` as a message map with a string `type`.
 *
 * It refuses what PROTOCOL.md's strict decoding refuses at the level of the
 * encoding: a frame of the other kind, bytes that do not parse or that go on
 * after the message, a top level that is not a map, a `type` that is missing
 * or not a string, and, in MessagePack, keys that are not strings, `bin`
 * values and extension values. It does not check fields against the
 * message's schema: which `type`s and enum values exist is for the caller.
 */
export function decodeMessage(frame: Frame | ArrayBuffer, encoding: Encoding): Record<string, unknown> & { type: string } {
  let value: unknown;
  if (encoding === "json") {
    if (typeof frame !== "string") {
      throw new DecodeError("a binary frame on a JSON connection");
    }
    try {
      value = JSON.parse(frame);
    } catch (err) {
      throw new DecodeError(`not JSON (${(err as Error).message})`);
    }
  } else {
    if (typeof frame === "string") {
      throw new DecodeError("a text frame on a MessagePack connection");
    }
    const bytes = frame instanceof Uint8Array ? frame : new Uint8Array(frame);
    try {
      value = decodeMsgPack(bytes, { mapKeyConverter: stringKeyOnly });
    } catch (err) {
      throw new DecodeError(`not MessagePack (${(err as Error).message})`);
    }
    refuseWhatJsonCannotSay(value, 0);
  }
  if (!isPlainMap(value)) {
    throw new DecodeError("the message is not a map");
  }
  if (typeof value.type !== "string") {
    throw new DecodeError("`type` is missing or not a string");
  }
  return value as Record<string, unknown> & { type: string };
}

function stringKeyOnly(key: unknown): string {
  if (typeof key !== "string") {
    throw new DecodeError("a map key that is not a string");
  }
  return key;
}

function isPlainMap(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/** MessagePack may carry only what JSON can: no `bin`, no extensions. */
function refuseWhatJsonCannotSay(value: unknown, depth: number): void {
  if (depth > 128) {
    throw new DecodeError("nested too deeply");
  }
  if (value === null || typeof value !== "object") {
    if (typeof value === "bigint") {
      throw new DecodeError("an integer too large for a number");
    }
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) {
      refuseWhatJsonCannotSay(item, depth + 1);
    }
    return;
  }
  if (!isPlainMap(value)) {
    // Uint8Array (bin), Date (the timestamp extension), ExtData (any other).
    throw new DecodeError(value instanceof Uint8Array ? "a bin value" : "an extension value");
  }
  for (const item of Object.values(value)) {
    refuseWhatJsonCannotSay(item, depth + 1);
  }
}
