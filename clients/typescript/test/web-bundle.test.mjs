// The browser client's bundle of the room applier (server/web/jumpgate-client.js)
// is exactly what `npm run bundle:web` builds from src/ now.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { bundle, OUTPUT } from "../scripts/bundle-web.mjs";

test("the web client's bundle matches the package's source", async () => {
  const fresh = await bundle();
  const checkedIn = readFileSync(OUTPUT, "utf8");
  assert.ok(
    fresh === checkedIn,
    "server/web/jumpgate-client.js is stale: run `npm run bundle:web` in clients/typescript and commit it",
  );
});

test("the bundle exports the applier and the legal-move reader the page imports", async () => {
  const module = await import(`data:text/javascript,${encodeURIComponent(await bundle())}`);
  assert.equal(typeof module.V2RoomView, "function");
  assert.equal(typeof module.gapSince, "function");
  assert.equal(typeof module.legalMoves, "function");
  const moves = module.legalMoves({
    legal: [["d4", "f6"], ["d4", "b6"]],
    legal_captures: [["e5"], ["c5"]],
    legal_boosts: [["c3", "e5"]],
  });
  assert.deepEqual(moves, [
    { path: ["d4", "f6"], captures: ["e5"], boost: false, teleports: [] },
    { path: ["d4", "b6"], captures: ["c5"], boost: false, teleports: [] },
    { path: ["c3", "e5"], captures: [], boost: true, teleports: [] },
  ]);
});
