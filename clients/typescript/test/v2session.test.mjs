// Protocol 2 sessions against a real `jumpgate serve`, in both encodings: two
// players build their room from `snapshot`, `moved` and `changed` events
// while they play, offer and decline a draw and resign, and after every step
// each player's room equals a fresh snapshot of the same version (a third
// connection asking `resync { since: 0 }`), piece order and clock readings
// aside (PROTOCOL.md section 21.7). One player loses an event on the way; the
// gap is seen at the next one and the `resync` that follows fills it with
// exactly the missing events.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { decode } from "@msgpack/msgpack";
import { Session } from "../dist/index.js";
import { JumpgateServer, lobbyState, lossyWebSocket, nextEvent, roomV2, WebSocketClass, webSocketName } from "./harness.mjs";

/** Each test normally takes a few seconds; this only stops a hang. */
const LIMIT = 60_000;
/** Plies played before the draw offer and before the resignation. */
const PLIES_BEFORE_OFFER = 4;
const PLIES = 12;

let server;
before(async () => {
  server = await JumpgateServer.start();
});
after(async () => {
  await server?.kill();
});

/** A holder that keeps only the latest `snapshot`, for the observer. */
class LatestSnapshot {
  snapshot = undefined;
  get view() {
    return this.snapshot && { kind: "lobby_v2", state: this.snapshot };
  }
  get version() {
    return 0;
  }
  apply(message) {
    if (message.type !== "snapshot") {
      return "unchanged";
    }
    const { type: _type, ...room } = message;
    this.snapshot = room;
    return "changed";
  }
  clear() {
    this.snapshot = undefined;
  }
}

/** `room` with its pieces in square order and without the clock's readings. */
function comparable(room) {
  const copy = structuredClone(room);
  if (copy.game) {
    copy.game.pieces.sort((a, b) => a.square.localeCompare(b.square));
    delete copy.game.remaining_ms;
    delete copy.game.deadline;
  }
  return copy;
}

/** The type and version of a frame, in either encoding. */
function peek(data) {
  const message = typeof data === "string" ? JSON.parse(data) : decode(new Uint8Array(data));
  return { type: message.type, version: message.version };
}

for (const encoding of ["json", "msgpack"]) {
  describe(`protocol 2 sessions in ${encoding} over ${webSocketName}`, () => {
    test("two players' rooms, built from events, equal a fresh snapshot after every step, across a lost event", { timeout: LIMIT }, async () => {
      const { network, LossyWebSocket } = lossyWebSocket();
      const connect = (WebSocket) => Session.connect({ url: server.wsUrl, encoding, client: "jumpgate-ts-test", WebSocket });
      const host = await connect(WebSocketClass);
      const guest = await connect(LossyWebSocket);
      assert.equal(host.protocol, 2, "protocol 2 is the default");
      const observer = await Session.connect({
        url: server.wsUrl,
        encoding,
        WebSocket: WebSocketClass,
        stateHolder: new LatestSnapshot(),
      });

      // What each player received, by type, and what the guest sent.
      const received = { host: [], guest: [] };
      host.on("message", (m) => received.host.push(m));
      guest.on("message", (m) => received.guest.push(m));
      const guestSent = [];
      guest.on("sent", (m) => guestSent.push(m));

      await host.createLobby({ rule_set: "american", series_length: 1 });
      const { code } = await roomV2(host, () => true);
      await guest.joinLobby(code);
      await observer.watch(code);
      let steps = 0;

      /** Both players hold the room a fresh snapshot shows, at its version. */
      const checkBothMatchASnapshot = async (why) => {
        for (;;) {
          // Listening first: the snapshot may come in the same read as the ack.
          const answer = nextEvent(observer, "view", () => true);
          await observer.request({ type: "resync", since: 0 });
          const fresh = (await answer).state;
          const rooms = await Promise.all(
            [host, guest].map((player) => roomV2(player, (room) => room.version >= fresh.version)),
          );
          if (rooms.some((room) => room.version !== fresh.version)) {
            continue; // the room moved on meanwhile: ask again
          }
          for (const room of rooms) {
            assert.deepStrictEqual(comparable(room), comparable(fresh), `${why}: a player's room differs from the snapshot at version ${fresh.version}`);
          }
          steps += 1;
          return fresh;
        }
      };

      let room = await checkBothMatchASnapshot("after joining");
      assert.equal(room.phase, "playing");
      const hostSeat = room.players.findIndex((player) => player?.id === host.identity.id);
      const darkIsHost = room.game.dark_seat === hostSeat;
      let lostVersion;

      for (let ply = 0; ply < PLIES && room.game.result === undefined; ply += 1) {
        const hostToMove = darkIsHost === (ply % 2 === 0);
        const mover = hostToMove ? host : guest;
        const moverRoom = await roomV2(mover, (r) => r.game?.ply === ply);
        const [path] = moverRoom.game.legal;
        assert.ok(path, `a legal path at ply ${ply}`);
        if (ply > PLIES_BEFORE_OFFER && mover === guest && lostVersion === undefined) {
          // The guest loses the event of its own move: it learns of the gap
          // from the host's next move, and its resync brings the event back.
          lostVersion = room.version + 1;
          network.dropWhen = (data) => {
            const { type, version } = peek(data);
            if (type === "moved" && version === lostVersion) {
              network.dropWhen = undefined;
              return true;
            }
            return false;
          };
          await mover.move(path);
          await roomV2(host, (r) => r.version === lostVersion);
          assert.equal(guest.view.state.version, lostVersion - 1, "the guest missed the move");
          continue;
        }
        await mover.move(path);
        room = await checkBothMatchASnapshot(`after ply ${ply}`);
        assert.deepStrictEqual(room.game.last_move.path, path);

        if (ply === PLIES_BEFORE_OFFER) {
          const offerer = hostToMove ? guest : host; // the side to move now
          await offerer.offerDraw();
          room = await checkBothMatchASnapshot("after a draw offer");
          assert.ok(room.game.draw_offer !== undefined, "the offer stands");
          await (offerer === host ? guest : host).declineDraw();
          room = await checkBothMatchASnapshot("after the offer was declined");
          assert.equal(room.game.draw_offer, undefined);
          assert.ok(room.game.draw_declined !== undefined);
        }
      }

      await host.resign();
      room = await checkBothMatchASnapshot("after a resignation");
      assert.equal(room.phase, "finished");
      assert.ok(room.game.result !== undefined);

      // The gap: one resync from the version before the lost event, answered
      // by events only (the server keeps the last 64), the lost one among them.
      assert.ok(lostVersion !== undefined, "an event was lost on the way");
      const resyncs = guestSent.filter((m) => m.type === "resync");
      assert.deepStrictEqual(
        resyncs.map((m) => m.since),
        [lostVersion - 1],
        "the guest asked once, from the version it held",
      );
      const guestSnapshots = received.guest.filter((m) => m.type === "snapshot");
      assert.equal(guestSnapshots.length, 1, "only the snapshot on joining: the gap was filled with events");
      assert.ok(received.guest.some((m) => m.type === "moved" && m.version === lostVersion), "the lost move came again");
      for (const [name, messages] of Object.entries(received)) {
        assert.ok(!messages.some((m) => m.type === "state"), `${name} got no v1 state`);
        assert.ok(messages.filter((m) => m.type === "moved").length >= PLIES_BEFORE_OFFER, `${name} applied moves`);
        assert.ok(messages.some((m) => m.type === "changed"), `${name} applied changes`);
      }
      assert.ok(steps >= PLIES_BEFORE_OFFER + 4, `checked ${steps} steps`);
      for (const session of [host, guest, observer]) {
        session.close();
      }
    });

    test("a session asked for protocol 1 gets v1 states", { timeout: LIMIT }, async () => {
      const session = await Session.connect({ url: server.wsUrl, encoding, protocol: 1, WebSocket: WebSocketClass });
      const hello = [];
      assert.equal(session.protocol, 1);
      session.on("message", (m) => hello.push(m.type));
      await session.createLobby();
      const state = await lobbyState(session, () => true);
      assert.equal(state.phase, "waiting");
      assert.ok(hello.includes("state") && !hello.includes("snapshot"));
      session.close();
    });

    test("waitForView sees what a request caused, after its ack", { timeout: LIMIT }, async () => {
      const connect = () => Session.connect({ url: server.wsUrl, encoding, WebSocket: WebSocketClass });
      const [host, guest] = [await connect(), await connect()];
      await host.createLobby({ rule_set: "american", series_length: 1 });
      const lobby = await host.waitForView((v) => v?.kind === "lobby_v2", 10_000);
      await guest.joinLobby(lobby.state.code);
      const playing = await guest.waitForView((v) => v?.kind === "lobby_v2" && v.state.game !== undefined, 10_000);
      assert.equal(playing.state.phase, "playing");
      // Already true: resolves at once with the view held.
      assert.deepEqual(await guest.waitForView(() => true), guest.view);
      const mover = playing.state.game.dark_seat === 0 ? host : guest;
      const before = (await mover.waitForView((v) => v?.state.game !== undefined, 10_000)).state.version;
      const [path] = (await mover.waitForView((v) => (v?.state.game?.legal.length ?? 0) > 0, 10_000)).state.game.legal;
      await mover.move(path);
      const after = await mover.waitForView((v) => v.state.version > before, 10_000);
      assert.deepEqual(after.state.game.last_move.path, path);
      // A timeout rejects; an ended session rejects.
      await assert.rejects(guest.waitForView(() => false, 50), /within 50 ms/);
      const pending = guest.waitForView(() => false);
      guest.close();
      await assert.rejects(pending);
      host.close();
    });
  });
}
