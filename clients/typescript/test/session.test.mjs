// Sessions against a real `jumpgate serve` (memory store), in both
// encodings: greeting, a lobby created and joined, moves played between two
// sessions, refusals with their codes.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { HttpError, HttpPages, JumpgateError, Session, SessionEndedError } from "../dist/index.js";
import { JumpgateServer, lobbyState, WebSocketClass, webSocketName } from "./harness.mjs";

/** Each test normally takes well under a second; this only stops a hang. */
const LIMIT = 30_000;

let server;
before(async () => {
  server = await JumpgateServer.start();
});
after(async () => {
  await server?.kill();
});

const connect = (encoding, extra = {}) =>
  Session.connect({ url: server.wsUrl, protocol: 1, encoding, client: "jumpgate-ts-test", WebSocket: WebSocketClass, ...extra });

for (const encoding of ["json", "msgpack"]) {
  describe(`a ${encoding} session over ${webSocketName}`, () => {
    test("is welcomed as a new guest, and again as the same one with its token", { timeout: LIMIT }, async () => {
      const first = await connect(encoding);
      assert.match(first.identity.id, /^g_/);
      assert.equal(first.identity.guest, true);
      assert.ok(first.token.length > 20);
      assert.equal(first.lastSeq, 1, "hello took seq 1");
      const again = await connect(encoding, { token: first.token });
      assert.equal(again.identity.id, first.identity.id);
      first.close();
      again.close();
    });

    test("creates a lobby, a second session joins it, and they play moves in turn", { timeout: LIMIT }, async () => {
      const host = await connect(encoding, { name: "Ada" });
      const guest = await connect(encoding, { name: "Grace" });
      const seen = [];
      host.on("message", (message) => seen.push(message.type));

      const created = await host.createLobby({ rule_set: "american", series_length: 3 });
      assert.equal(created.kind, "lobby", "resolves with the lobby's view");
      assert.ok(seen.includes("ack") && seen.includes("state"), `after its ack and state: ${seen}`);
      const waiting = await lobbyState(host, (state) => state.phase === "waiting");
      assert.equal(created.state.code, waiting.code);
      assert.equal(waiting.version, 1);
      assert.deepStrictEqual(host.room, { kind: "lobby", code: waiting.code, seated: true });

      const info = await guest.lobbyInfo(waiting.code);
      assert.equal(info.type, "lobby_info");
      assert.equal(info.lobby.host_name, "Ada");
      assert.equal(info.lobby.series_length, 3);

      await guest.joinLobby(waiting.code);
      const playing = await lobbyState(guest, (state) => state.phase === "playing");
      assert.equal(guest.room.seated, true);
      const hostSeat = playing.players.findIndex((player) => player?.id === host.identity.id);
      const darkIsHost = playing.game.dark_seat === hostSeat;

      // Six plies, each side choosing from its own view's legal moves, by
      // path on one side and by notation on the other.
      for (let ply = 0; ply < 6; ply += 1) {
        // Dark moves at even plies.
        const hostToMove = darkIsHost === (ply % 2 === 0);
        const mover = hostToMove ? host : guest;
        const watcher = hostToMove ? guest : host;
        const view = await lobbyState(mover, (state) => state.game?.ply === ply);
        const [choice] = view.game.legal_moves;
        assert.ok(choice, `a legal move at ply ${ply}`);
        const ack = await mover.move(hostToMove ? choice.path : choice.notation);
        assert.equal(ack.type, "ack");
        const seenByOther = await lobbyState(watcher, (state) => state.game?.ply === ply + 1);
        assert.equal(seenByOther.game.moves[ply], choice.notation);
        assert.ok(seenByOther.version > view.version);
      }
      assert.ok(seen.includes("ack") && seen.includes("state"));
      host.close();
      guest.close();
    });

    test("a refusal rejects with a JumpgateError carrying its code and seq", { timeout: LIMIT }, async () => {
      const host = await connect(encoding);
      const guest = await connect(encoding);
      await host.createLobby();
      const { code } = await lobbyState(host, () => true);
      await guest.joinLobby(code);
      const playing = await lobbyState(guest, (state) => state.phase === "playing");
      const hostSeat = playing.players.findIndex((player) => player?.id === host.identity.id);
      const notToMove = playing.game.dark_seat === hostSeat ? guest : host;
      const [someMove] = playing.game.legal_moves;

      const refusal = await notToMove.move(someMove.path).then(
        () => assert.fail("a move out of turn was acknowledged"),
        (err) => err,
      );
      assert.ok(refusal instanceof JumpgateError, String(refusal));
      assert.equal(refusal.code, "not_your_turn");
      assert.equal(refusal.seq, notToMove.lastSeq);
      assert.equal(refusal.request.type, "move");

      const unknown = await guest.lobbyInfo("ZZZZZZZZ").catch((err) => err);
      assert.equal(unknown.code, "unknown_lobby");
      // The session goes on after a refusal.
      assert.equal((await guest.ping()).type, "ack");
      host.close();
      guest.close();
    });

    test("a forged token ends the connect with invalid_token", { timeout: LIMIT }, async () => {
      const err = await connect(encoding, { token: "eyJhbGciOiJIUzI1NiJ9.e30.c2lnbmF0dXJl" }).catch((e) => e);
      assert.ok(err instanceof SessionEndedError, String(err));
      assert.equal(err.refusal?.code, "invalid_token");
    });

    test("requests made after close reject, and nothing is sent", { timeout: LIMIT }, async () => {
      const session = await connect(encoding);
      const sent = [];
      session.on("sent", (message) => sent.push(message));
      session.close();
      await assert.rejects(session.ping(), SessionEndedError);
      assert.deepStrictEqual(sent, []);
    });
  });
}

test("a refused port and a wrong path fail to connect with different messages", async () => {
  const { freePort } = await import("./harness.mjs");
  const port = await freePort();
  const attempt = async (url) => {
    try {
      await Session.connect({ url, WebSocket: WebSocketClass });
    } catch (err) {
      assert.ok(err instanceof SessionEndedError, String(err));
      return err.message;
    }
    assert.fail(`${url} connected`);
  };
  const refused = await attempt(`ws://127.0.0.1:${port}/ws`);
  const notFound = await attempt(server.wsUrl.replace(/\/ws$/, "/nowhere"));
  assert.notEqual(refused, notFound, `both said: ${refused}`);
  assert.match(notFound, /404.*not a Jumpgate WebSocket \(its path is \/ws\)/, notFound);
  assert.match(refused, /ECONNREFUSED|refused/i, refused);
});

test("session.pages reads an invite-only lobby's summary and finished games, with its invite only", { timeout: LIMIT }, async () => {
  const host = await connect("json", { name: "Ada" });
  const guest = await connect("msgpack", { name: "Grace" });
  const created = await host.createLobby({ rule_set: "american", invite_only: true });
  const { code, invite_link: link } = created.state;
  const invite = new URL(link).searchParams.get("invite");
  assert.ok(invite, `an invite-only lobby's link has its invite: ${link}`);
  await guest.joinLobby(code, invite);
  const pages = guest.pages;
  assert.equal(pages.base, server.wsUrl.replace(/^ws:/, "http:").replace(/\/ws$/, ""));
  assert.equal(await pages.finishedGamesPdn(code, invite), "", "no game has ended yet");

  await host.resign();
  await guest.waitForView(() => guest.finished, LIMIT);
  const summary = await pages.lobbySummary(code, invite);
  assert.equal(summary.code, code);
  assert.equal(summary.invite_only, true);
  assert.equal(summary.phase, "finished");
  const pdn = await pages.finishedGamesPdn(code, invite);
  assert.equal(pdn.match(/\[Result "/g)?.length, 1, pdn);

  // Without its invite an invite-only lobby answers as a code without a lobby does.
  for (const [missingCode, missingInvite] of [[code, undefined], ["ZZZZZZZZ", undefined]]) {
    await assert.rejects(pages.lobbySummary(missingCode, missingInvite), (err) => {
      assert.ok(err instanceof HttpError, String(err));
      assert.equal(err.status, 404, err.message);
      assert.equal(err.code, "unknown_lobby", err.message);
      return true;
    });
  }
  host.close();
  guest.close();
});

test("HttpPages turns a WebSocket URL into the pages' address, and says when nothing answers", async () => {
  assert.equal(new HttpPages("ws://example.test:8080/ws").base, "http://example.test:8080");
  assert.equal(new HttpPages("wss://example.test/play/ws/").base, "https://example.test/play");
  assert.equal(new HttpPages("http://127.0.0.1:9000").base, "http://127.0.0.1:9000");
  assert.throws(() => new HttpPages("ftp://example.test/"), HttpError);
  assert.throws(() => new HttpPages("not a url"), HttpError);
  const { freePort } = await import("./harness.mjs");
  const nobody = new HttpPages(`ws://127.0.0.1:${await freePort()}/ws`);
  await assert.rejects(nobody.lobbySummary("K7QP2DXM"), (err) => {
    assert.ok(err instanceof HttpError && err.status === undefined, String(err));
    assert.match(err.message, /no answer from .*ECONNREFUSED|refused/i, err.message);
    return true;
  });
});

test("startSolo and resumeSolo resolve with the solo game's view, as Rust's start_solo returns its state", { timeout: LIMIT }, async () => {
  const session = await connect("json");
  const first = await session.startSolo({ mode: "same_device" });
  assert.equal(first.kind, "solo");
  assert.equal(first.state.game.ply, 0);
  assert.equal(session.myTurn, true, "on one device every turn is yours");
  await session.play(first.state.game.legal_moves[0].path);
  const second = await session.startSolo({ mode: "same_device" });
  assert.notEqual(second.state.id, first.state.id, "a new game, not the first one's next state");
  assert.equal(second.state.game.ply, 0);
  const resumed = await session.resumeSolo();
  assert.equal(resumed.state.id, second.state.id);
  session.close();
});

test("an http:// address or an invite link is refused as not a WebSocket URL, before any connection", async () => {
  for (const url of ["http://127.0.0.1:8080/r/K7QP2DXM", "https://example.test/ws"]) {
    await assert.rejects(Session.connect({ url, WebSocket: WebSocketClass }), (err) => {
      assert.ok(err instanceof SessionEndedError, String(err));
      assert.match(err.message, /is not a WebSocket URL: .*ws:\/\/127\.0\.0\.1:8080\/ws/, err.message);
      return true;
    });
  }
});
