// The checked-in message types are what the generator makes of the
// protocol's JSON Schemas today, so they cannot drift from the Rust crate
// (whose schemas are drift-checked by its own tests).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { generate, outputFile } from "../scripts/generate-types.mjs";

test("src/generated/messages.ts is what npm run generate writes", async () => {
  const fresh = await generate();
  const checkedIn = await readFile(outputFile, "utf8");
  assert.ok(fresh.includes("export type ClientMessage"), "the generator made the message types");
  assert.ok(checkedIn === fresh, "src/generated/messages.ts differs from the schemas: run `npm run generate` and commit it");
});
