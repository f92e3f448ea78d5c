// Every `ts` code block of the package's README and of CLIENTS.md, type-checked
// against the built package (dist/) with tsc --strict, so a snippet that no
// longer matches the API fails the suite. Each block becomes a module: its
// imports at the top (the package's name pointing at dist/), the rest inside an
// async function, with the names the prose supplies (`session`, `host`, `url`,
// `game`, ...) declared around it.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const sources = [path.join(packageRoot, "README.md"), path.resolve(packageRoot, "../../CLIENTS.md")];

/** The names the documents' prose gives the snippets. */
const AMBIENT = `
declare const session: Session;
declare const host: Session;
declare const guest: Session;
declare const url: string;
declare const game: Parameters<typeof import("../../dist/index.js").legalMoves>[0];
declare function showBanner(text: string): void;
declare function hideBanner(): void;
declare const localStorage: { getItem(key: string): string | null; setItem(key: string, value: string): void };
`;

function blocks(file) {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
}

function moduleFor(block) {
  const lines = block.split("\n");
  const imports = lines.filter((l) => l.startsWith("import "));
  const body = lines.filter((l) => !l.startsWith("import "));
  const header = imports.map((l) => l.replace('"@jumpgate/client"', '"../../dist/index.js"'));
  if (!imports.some((l) => /\bSession\b/.test(l) && l.includes("@jumpgate/client"))) {
    header.push('import { Session } from "../../dist/index.js";');
  }
  return `${header.join("\n")}\n${AMBIENT}\nexport async function snippet(): Promise<void> {\n${body.join("\n")}\n}\n`;
}

test("every ts block of the README and CLIENTS.md type-checks against the package", () => {
  const dir = path.join(packageRoot, "test", ".doc-blocks");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const files = [];
  for (const source of sources) {
    blocks(source).forEach((block, i) => {
      const file = path.join(dir, `${path.basename(source, ".md").toLowerCase()}-${i}.ts`);
      writeFileSync(file, moduleFor(block));
      files.push(file);
    });
  }
  assert.ok(files.length >= 8, `found ${files.length} blocks`);
  const tsc = path.join(packageRoot, "node_modules", ".bin", "tsc");
  const run = spawnSync(
    tsc,
    ["--ignoreConfig", "--noEmit", "--strict", "--skipLibCheck", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext", "--types", "node", ...files],
    { cwd: packageRoot, encoding: "utf8" },
  );
  assert.equal(run.status, 0, `tsc found errors in the documents' code:\n${run.stdout}${run.stderr}`);
  rmSync(dir, { recursive: true, force: true });
});
