/**
 * The server's public HTTP pages for a lobby: its JSON summary and its
 * finished games as PDN, read with the platform's `fetch`.
 * @module
 */
import type { LobbySummary } from "./generated/messages.js";

/** How long one GET may take, in milliseconds. */
const PATIENCE_MS = 10_000;
/** How many times a `503` is asked again, after its `Retry-After` (at most 5 s). */
const RETRIES = 5;

/**
 * A page could not be read. `status` is the HTTP status when the server
 * answered (absent when it did not: refused, dropped, over 10 s), `code` the
 * stable code of its JSON error body (`unknown_lobby`, `room_unavailable`,
 * `storage_unavailable`, `rate_limited`; PROTOCOL.md section 1) when it sent one.
 */
export class HttpError extends Error {
  override readonly name = "HttpError";
  constructor(
    readonly url: string,
    message: string,
    readonly status?: number,
    readonly code?: string,
  ) {
    super(message);
  }
}

/**
 * Reads a server's lobby pages (`GET /r/{CODE}?format=json` and
 * `GET /r/{CODE}/games.pdn`, PROTOCOL.md section 1).
 *
 * Made from the WebSocket URL a session connects to (`ws://host:port/ws`
 * reads pages from `http://host:port`, `wss://` from `https://`; a path before
 * `/ws`, as an Ingress may add, is kept), or taken from `session.pages`. A
 * `503` is asked again up to five times after its `Retry-After`; any other
 * error status rejects with {@link HttpError}.
 *
 * ```ts
 * import { HttpPages } from "@jumpgate/client";
 *
 * const pages = new HttpPages("ws://127.0.0.1:8080/ws");
 * const summary = await pages.lobbySummary("K7QP2DXM");
 * console.log(summary.rule_set, summary.phase);
 * console.log(await pages.finishedGamesPdn("K7QP2DXM"));
 * ```
 */
export class HttpPages {
  /** Where the pages are: `http(s)://host:port` and the path before `/ws`. */
  readonly base: string;

  constructor(url: string) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new HttpError(url, `not a server URL: ${JSON.stringify(url)}`);
    }
    const schemes: Record<string, string> = { "ws:": "http:", "wss:": "https:", "http:": "http:", "https:": "https:" };
    const scheme = schemes[parsed.protocol];
    if (scheme === undefined || parsed.host === "") {
      throw new HttpError(url, `not a ws://, wss://, http:// or https:// URL: ${JSON.stringify(url)}`);
    }
    const path = parsed.pathname.replace(/\/+$/, "");
    const prefix = path.endsWith("/ws") ? path.slice(0, -3) : path;
    this.base = `${scheme}//${parsed.host}${prefix}`;
  }

  /** The lobby's public summary (what `lobby_info` answers), read over HTTP. */
  async lobbySummary(code: string, invite?: string): Promise<LobbySummary> {
    const url = `${this.base}/r/${encodeURIComponent(code)}?format=json${query(invite, "&")}`;
    const text = await this.#get(url, "application/json");
    try {
      return JSON.parse(text) as LobbySummary;
    } catch (error) {
      throw new HttpError(url, `${url} sent a body that is not JSON: ${String(error)}`);
    }
  }

  /** Every game of the lobby that has ended so far, as PDN text (empty when none has). */
  finishedGamesPdn(code: string, invite?: string): Promise<string> {
    const url = `${this.base}/r/${encodeURIComponent(code)}/games.pdn${query(invite, "?")}`;
    return this.#get(url, "application/x-pdn");
  }

  async #get(url: string, accept: string): Promise<string> {
    for (let tries = 0; ; tries += 1) {
      let response: Response;
      try {
        response = await fetch(url, { headers: { accept }, signal: AbortSignal.timeout(PATIENCE_MS) });
      } catch (error) {
        const reason = error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
        throw new HttpError(url, `no answer from ${url}: ${reason}`);
      }
      if (response.ok) {
        return response.text();
      }
      if (response.status === 503 && tries < RETRIES) {
        await response.body?.cancel();
        const seconds = Number(response.headers.get("retry-after") ?? "1");
        await new Promise((resolve) => setTimeout(resolve, Math.min(Number.isFinite(seconds) ? seconds : 1, 5) * 1000));
        continue;
      }
      let code: string | undefined;
      let message: string | undefined;
      try {
        const body = (await response.json()) as { error?: unknown; message?: unknown };
        code = typeof body.error === "string" ? body.error : undefined;
        message = typeof body.message === "string" ? body.message : undefined;
      } catch {
        // Not a JSON error body: the status says it all.
      }
      throw new HttpError(url, `${url} answered ${response.status}: ${message ?? code ?? "(no error code)"}`, response.status, code);
    }
  }
}

function query(invite: string | undefined, separator: "?" | "&"): string {
  return invite === undefined ? "" : `${separator}invite=${encodeURIComponent(invite)}`;
}
