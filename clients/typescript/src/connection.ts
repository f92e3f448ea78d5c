/**
 * One WebSocket to the server, speaking one encoding: opens it, checks the
 * subprotocol the server chose, writes and reads messages, and reports how
 * it closed. It knows nothing of requests, rooms or reconnecting.
 * @module
 */
import { DecodeError, decodeMessage, encodeMessage, subprotocol, type Encoding, type ProtocolVersion } from "./codec.js";
import type { ClientMessage, ServerMessage } from "./generated/messages.js";

/**
 * The part of the WHATWG WebSocket interface a session uses. The platform's
 * `WebSocket` (browsers, Node 22 and later, Deno, Bun) has it, and so does
 * the `ws` package's for older Node.
 */
export interface WebSocketLike {
  binaryType: string;
  readonly protocol: string;
  onopen: ((event: any) => void) | null;
  onmessage: ((event: any) => void) | null;
  onclose: ((event: any) => void) | null;
  onerror: ((event: any) => void) | null;
  send(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
}

/** A WebSocket constructor such as the platform's `WebSocket`. */
export type WebSocketConstructor = new (url: string, protocols: string[]) => WebSocketLike;

/**
 * The server message types of protocols 1 and 2; clients ignore any other
 * (PROTOCOL.md section 2). The server sends `state` only to v1 connections and
 * `snapshot`, `moved` and `changed` only to v2 ones.
 */
const KNOWN_TYPES: Readonly<Record<ServerMessage["type"], true>> = {
  welcome: true,
  ack: true,
  error: true,
  state: true,
  left: true,
  shutdown: true,
  solo_state: true,
  lobby_info: true,
  my_games: true,
  snapshot: true,
  moved: true,
  changed: true,
};

/** How a connection ended. 1006 stands for a connection that dropped without a close frame. */
export class ConnectionClosed extends Error {
  override readonly name = "ConnectionClosed";
  constructor(
    readonly code: number,
    readonly reason: string,
  ) {
    super(`connection closed with code ${code}${reason ? ` (${reason})` : ""}`);
  }
}

/** The server chose no subprotocol, or one this client did not offer. */
export class SubprotocolError extends Error {
  override readonly name = "SubprotocolError";
  constructor(
    readonly expected: string,
    readonly chosen: string,
  ) {
    super(`the server chose the subprotocol ${JSON.stringify(chosen)}, not ${expected}`);
  }
}

/** A step that took longer than its limit. */
export class StepTimeout extends Error {
  override readonly name = "StepTimeout";
  constructor(step: string, ms: number) {
    super(`${step}: no answer within ${ms} ms`);
  }
}

/** What a connection hands its owner once it delivers messages as they come. */
export interface ConnectionHandlers {
  message(message: ServerMessage): void;
  decodeError(error: DecodeError): void;
  closed(closed: ConnectionClosed): void;
}

export class Connection {
  readonly #socket: WebSocketLike;
  readonly #encoding: Encoding;
  /** Messages read before `deliverTo`, and the reader waiting for one. */
  readonly #inbox: ServerMessage[] = [];
  #reader: { resolve: (message: ServerMessage) => void; reject: (err: Error) => void } | undefined;
  #handlers: ConnectionHandlers | undefined;
  #closed: ConnectionClosed | undefined;

  private constructor(socket: WebSocketLike, encoding: Encoding) {
    this.#socket = socket;
    this.#encoding = encoding;
    socket.onmessage = (event: { data: unknown }) => this.#received(event.data);
    socket.onclose = (event: { code?: number; reason?: string }) => this.#ended(event.code ?? 1006, event.reason ?? "");
    // An error is always followed by a close, which says how it ended.
    socket.onerror = () => {};
  }

  /** Opens a WebSocket to `url` offering the subprotocol of `protocol` and `encoding`, within `timeoutMs`. */
  static open(
    url: string,
    protocol: ProtocolVersion,
    encoding: Encoding,
    WebSocketClass: WebSocketConstructor,
    timeoutMs: number,
  ): Promise<Connection> {
    const expected = subprotocol(protocol, encoding);
    return new Promise((resolve, reject) => {
      let socket: WebSocketLike;
      try {
        socket = new WebSocketClass(url, [expected]);
      } catch (err) {
        reject(err);
        return;
      }
      socket.binaryType = "arraybuffer";
      const timer = setTimeout(() => {
        socket.onopen = socket.onclose = null;
        socket.close();
        reject(new StepTimeout(`opening ${url}`, timeoutMs));
      }, timeoutMs);
      // What went wrong before the close, when the WebSocket says (the `ws`
      // package and Node's own: "connect ECONNREFUSED …", "Unexpected server
      // response: 404"), so that a refused port and a wrong path read apart.
      let failure = "";
      socket.onerror = (event: { message?: string; error?: { message?: string } }) => {
        failure = event?.message ?? event?.error?.message ?? "";
        // An HTTP answer instead of the upgrade: the URL names no WebSocket.
        if (/Unexpected server response/i.test(failure)) {
          failure += `: ${url} is not a Jumpgate WebSocket (its path is /ws)`;
        }
      };
      socket.onclose = (event: { code?: number; reason?: string }) => {
        clearTimeout(timer);
        reject(new ConnectionClosed(event.code ?? 1006, event.reason || failure));
      };
      socket.onopen = () => {
        clearTimeout(timer);
        socket.onopen = null;
        if (socket.protocol !== expected) {
          socket.onclose = null;
          socket.close(1000);
          reject(new SubprotocolError(expected, socket.protocol));
          return;
        }
        resolve(new Connection(socket, encoding));
      };
    });
  }

  get closed(): ConnectionClosed | undefined {
    return this.#closed;
  }

  send(message: ClientMessage): void {
    this.#socket.send(encodeMessage(message, this.#encoding));
  }

  /**
   * The next message, before `deliverTo` is called, within `timeoutMs`.
   * Rejects when the connection closes first.
   */
  next(timeoutMs: number, step: string): Promise<ServerMessage> {
    const queued = this.#inbox.shift();
    if (queued !== undefined) {
      return Promise.resolve(queued);
    }
    if (this.#closed !== undefined) {
      return Promise.reject(this.#closed);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#reader = undefined;
        reject(new StepTimeout(step, timeoutMs));
      }, timeoutMs);
      this.#reader = {
        resolve: (message) => {
          clearTimeout(timer);
          resolve(message);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
    });
  }

  /**
   * Reads until the answer to request `seq` (its `ack`, `error`, or the
   * message that answers it in place of an `ack`), passing every other
   * message to `other`. Resolves with the answer.
   */
  async answer(seq: number, timeoutMs: number, step: string, other: (message: ServerMessage) => void): Promise<ServerMessage> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const message = await this.next(Math.max(deadline - Date.now(), 0), step);
      if ("seq" in message && message.seq === seq) {
        return message;
      }
      other(message);
    }
  }

  /** From now on, hands every message to `handlers` as it comes, starting with any read already. */
  deliverTo(handlers: ConnectionHandlers): void {
    this.#handlers = handlers;
    for (const message of this.#inbox.splice(0)) {
      handlers.message(message);
    }
    if (this.#closed !== undefined) {
      handlers.closed(this.#closed);
    }
  }

  /** Closes the socket with `code`; the owner hears of it no more. */
  close(code = 1000, reason = ""): void {
    this.#handlers = undefined;
    this.#socket.onmessage = this.#socket.onclose = null;
    if (this.#closed === undefined) {
      this.#closed = new ConnectionClosed(code, reason);
    }
    this.#reader?.reject(this.#closed);
    this.#reader = undefined;
    try {
      this.#socket.close(code, reason);
    } catch {
      // Closing a socket that is already closing is not worth reporting.
    }
  }

  #received(data: unknown): void {
    let raw: Record<string, unknown> & { type: string };
    try {
      raw = decodeMessage(data as string | ArrayBuffer, this.#encoding);
    } catch (err) {
      const error = err instanceof DecodeError ? err : new DecodeError(String(err));
      this.#handlers?.decodeError(error);
      return;
    }
    if (!Object.hasOwn(KNOWN_TYPES, raw.type)) {
      return;
    }
    const message = raw as unknown as ServerMessage;
    if (this.#handlers !== undefined) {
      this.#handlers.message(message);
    } else if (this.#reader !== undefined) {
      const reader = this.#reader;
      this.#reader = undefined;
      reader.resolve(message);
    } else {
      this.#inbox.push(message);
    }
  }

  #ended(code: number, reason: string): void {
    if (this.#closed !== undefined) {
      return;
    }
    this.#closed = new ConnectionClosed(code, reason);
    if (this.#reader !== undefined) {
      const reader = this.#reader;
      this.#reader = undefined;
      reader.reject(this.#closed);
    }
    this.#handlers?.closed(this.#closed);
  }
}
