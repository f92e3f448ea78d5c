/**
 * Compiled, never run (`npm test` type-checks it): the README's snippets as
 * they are written there, and what the types must refuse, each marked with
 * `@ts-expect-error` so that types that let it through fail the build.
 * @module
 */
import WebSocket from "ws";
import { JumpgateError, Session, type ServerMessage } from "../src/index.js";

declare function showBanner(text: string): void;
declare function hideBanner(): void;

export async function readmeSnippets(url: string, host: Session, guest: Session): Promise<void> {
  const session = await Session.connect({
    url: "ws://127.0.0.1:8080/ws",
    encoding: "msgpack",
    client: "my-client/1.0",
    name: "Ada",
    token: undefined,
  });
  await Session.connect({ url, WebSocket });
  console.log(`playing as ${session.identity.name} (${session.identity.id})`);

  try {
    await session.move("15-19");
  } catch (err) {
    if (err instanceof JumpgateError && err.code === "illegal_move") {
      // pick one of room.game.legal (paths) instead
    }
  }

  await host.createLobby({ rule_set: "american", series_length: 3 });
  const code = host.view?.kind === "lobby_v2" ? host.view.state.code : "";
  await guest.lobbyInfo(code);
  await guest.joinLobby(code);
  guest.on("view", (view) => {
    if (view?.kind !== "lobby_v2" || !view.state.game) return;
    const { game, players } = view.state;
    const mySeat = players.findIndex((p) => p?.id === guest.identity.id);
    const myColour = game.dark_seat === mySeat ? "dark" : "light";
    const [first] = game.legal; // each legal move as its path
    if (game.turn === myColour && first !== undefined) {
      guest.move(first).catch(console.error);
    }
  });
  await session.startSolo({ level: "warden" });

  session.on("disconnected", ({ delayMs }) => showBanner(`reconnecting in ${Math.round(delayMs)} ms`));
  session.on("reconnected", ({ room }) => {
    hideBanner();
    if (room.kind === "lost") console.warn(`could not re-enter: ${room.refusal.code}`);
  });
  session.on("ended", (err) => console.error(`stopped: ${err.message}`));
}

export async function answersAreTyped(session: Session): Promise<void> {
  const info = await session.lobbyInfo("K7QP2DXM");
  const stake: number = info.lobby.stake;
  const games = await session.myGames();
  const kinds: ("lobby" | "solo")[] = games.games.map((game) => game.kind);
  const ack = await session.request({ type: "resign" });
  const seq: number = ack.seq;
  void [stake, kinds, seq];
}

export function whatTheTypesRefuse(session: Session, message: ServerMessage): void {
  // @ts-expect-error the session numbers requests itself
  void session.request({ type: "ping", seq: 4 });
  // @ts-expect-error hello is the session's own
  void session.request({ type: "hello", protocol: 1, client: "x" });
  // @ts-expect-error not a message type
  void session.request({ type: "teleport" });
  // @ts-expect-error not a rule set
  void session.createLobby({ rule_set: "chess" });
  // @ts-expect-error a field move does not have
  void session.request({ type: "move", notation: "11-15", square: "c3" });
  // @ts-expect-error join_lobby needs its code
  void session.request({ type: "join_lobby" });
  if (message.type === "state") {
    // @ts-expect-error states have no seq
    void message.seq;
  }
}
