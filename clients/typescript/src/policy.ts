/**
 * How a session waits between attempts, and when it gives up (PROTOCOL.md
 * section 10).
 * @module
 */

/**
 * Exponential back-off with jitter: `firstMs`, then twice that, four times
 * that… up to `maxMs`, each scaled by a random factor between `1 - jitter`
 * and `1 + jitter`.
 */
export interface Backoff {
  firstMs: number;
  maxMs: number;
  /** 0.5 for ±50 %; kept within 0 to 1. */
  jitter: number;
}

/** How persistently a session reconnects and retries. */
export interface ReconnectPolicy {
  /** Waits between connection attempts, and between retries of a refused request. */
  backoff: Backoff;
  /** Connection attempts in one outage, and retries of one request, before giving up. */
  maxAttempts: number;
  /** How long one outage may last, from the lost connection, before giving up. */
  giveUpAfterMs: number;
  /** Limit on each step of connecting: opening the socket, `welcome`, re-entering the room. */
  stepTimeoutMs: number;
  /**
   * Messages sent per second at most on one connection: below the server's
   * limit, because a message dropped for the rate is refused without its
   * `seq`, so nobody could tell which one to send again.
   */
  messagesPerSecond: number;
}

/** 0.5 s, 1 s, 2 s, 4 s… capped at 15 s, each ±50 %, as PROTOCOL.md suggests. */
export const DEFAULT_BACKOFF: Readonly<Backoff> = { firstMs: 500, maxMs: 15_000, jitter: 0.5 };

export const DEFAULT_POLICY: Readonly<ReconnectPolicy> = {
  backoff: DEFAULT_BACKOFF,
  maxAttempts: 10,
  giveUpAfterMs: 120_000,
  stepTimeoutMs: 10_000,
  messagesPerSecond: 30,
};

/**
 * The wait before retry number `retry` (0 for the first), where `unit` is a
 * random draw from 0 (the shortest wait) to 1 (the longest).
 */
export function backoffDelay(backoff: Backoff, retry: number, unit: number = Math.random()): number {
  const base = Math.min(backoff.firstMs * 2 ** Math.min(retry, 52), backoff.maxMs);
  const jitter = clamp(backoff.jitter, 0, 1);
  return base * (1 - jitter + 2 * jitter * clamp(unit, 0, 1));
}

/**
 * Whether a connection closed with `code` should be replaced by a new one:
 * every close but 1002, 1007 and 1009, which mean the client sent something
 * it must not send and would only do so again (PROTOCOL.md section 1).
 */
export function closeMeansReconnect(code: number): boolean {
  return code !== 1002 && code !== 1007 && code !== 1009;
}

/** The close code of a room that moved to another server instance: come back at once. */
export const CLOSE_ROOM_MOVED = 4001;

/** The error codes after which the same request may succeed later unchanged. */
export function isRetryableCode(code: string): boolean {
  return code === "storage_unavailable" || code === "room_unavailable" || code === "rate_limited";
}

/** `base` with its `room` query parameter set to `room` (or as it is without one). */
export function roomUrl(base: string, room: string | undefined): string {
  if (room === undefined) {
    return base;
  }
  const cut = base.indexOf("?");
  const path = cut < 0 ? base : base.slice(0, cut);
  const query = cut < 0 ? "" : base.slice(cut + 1);
  const params = query
    .split("&")
    .filter((param) => param !== "" && param !== "room" && !param.startsWith("room="));
  params.push(`room=${encodeURIComponent(room)}`);
  return `${path}?${params.join("&")}`;
}

function clamp(value: number, low: number, high: number): number {
  return Math.min(Math.max(value, low), high);
}
