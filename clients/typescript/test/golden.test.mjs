// Every golden vector of protocol/tests/vectors decodes the same in both
// encodings and encodes back to its exact bytes; the refusals the codec can
// see are refused.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { DecodeError, decodeMessage, encodeMessage } from "../dist/index.js";
import { repoRoot } from "./harness.mjs";

const vectors = path.join(repoRoot, "protocol/tests/vectors");
/** A file's frame: each file ends with one newline that is not part of it. */
const read = (name) => readFileSync(path.join(vectors, name), "utf8").replace(/\n$/, "");
const bytes = (name) => Buffer.from(read(name), "hex");

const names = readdirSync(vectors)
  .filter((file) => /^(client|server)_.*\.json$/.test(file))
  .map((file) => file.replace(/\.json$/, ""));

test("there are golden vectors of both directions to check", () => {
  assert.ok(names.filter((name) => name.startsWith("client_")).length >= 20, names.join(" "));
  assert.ok(names.filter((name) => name.startsWith("server_")).length >= 20, names.join(" "));
});

for (const name of names) {
  test(`golden vector ${name} round-trips in both encodings`, () => {
    const json = read(`${name}.json`);
    const msgpack = bytes(`${name}.msgpack.hex`);
    const fromJson = decodeMessage(json, "json");
    // The connection hands the codec an ArrayBuffer.
    const fromMsgPack = decodeMessage(msgpack.buffer.slice(msgpack.byteOffset, msgpack.byteOffset + msgpack.length), "msgpack");
    assert.deepStrictEqual(fromMsgPack, fromJson);
    assert.equal(encodeMessage(fromJson, "json"), json);
    assert.equal(Buffer.from(encodeMessage(fromJson, "msgpack")).toString("hex"), msgpack.toString("hex"));
  });
}

test("absent optional fields are left out, never written as null", () => {
  const message = { type: "join_lobby", seq: 2, code: "K7QP2DXM", invite: undefined };
  assert.equal(encodeMessage(message, "json"), '{"type":"join_lobby","seq":2,"code":"K7QP2DXM"}');
  assert.deepStrictEqual(decodeMessage(encodeMessage(message, "msgpack"), "msgpack"), { type: "join_lobby", seq: 2, code: "K7QP2DXM" });
});

// The refusals of refusals.index.json that the codec itself must refuse: the
// ones about the encoding. Enum values and field types are the schema's
// business, which this package leaves to the types (see the README).
const REFUSED_BY_THE_CODEC = [
  "not_a_map",
  "trailing_bytes",
  "truncated",
  "type_array",
  "type_bin",
  "type_integer",
  "type_missing",
  "type_null",
  "key_bin",
  "key_integer",
  "extension",
  "string_bin",
];

test("the refusals about the encoding are refused in both encodings", () => {
  const index = JSON.parse(readFileSync(path.join(vectors, "refusals.index.json"), "utf8"));
  let checked = 0;
  for (const refusal of index) {
    const kind = refusal.name.replace(/^refused_(client|server)_/, "");
    if (!REFUSED_BY_THE_CODEC.includes(kind)) {
      continue;
    }
    const hex = bytes(`${refusal.name}.msgpack.hex`);
    assert.throws(() => decodeMessage(new Uint8Array(hex), "msgpack"), DecodeError, `${refusal.name} (msgpack): ${refusal.about}`);
    checked += 1;
    let json;
    try {
      json = read(`${refusal.name}.json`);
    } catch {
      continue; // MessagePack only: a bin, an extension or an integer key has no JSON form.
    }
    assert.throws(() => decodeMessage(json, "json"), DecodeError, `${refusal.name} (json): ${refusal.about}`);
    checked += 1;
  }
  assert.ok(checked >= REFUSED_BY_THE_CODEC.length, `checked ${checked}`);
});

test("a frame of the other kind is refused", () => {
  assert.throws(() => decodeMessage(new Uint8Array([0x80]), "json"), DecodeError);
  assert.throws(() => decodeMessage('{"type":"ack","seq":1}', "msgpack"), DecodeError);
});
