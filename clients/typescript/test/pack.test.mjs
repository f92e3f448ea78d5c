// Packaging from a clean source tree: a copy of the package's sources without
// dist/ packs (its `prepack` builds dist/ first), the tarball installs in a new
// project without an install script to approve, and the installed package
// imports and encodes a message.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

test("a clean copy of the sources packs, and the tarball installs and imports", { timeout: 240_000 }, () => {
  const work = mkdtempSync(path.join(os.tmpdir(), "jumpgate-pack-"));
  try {
    const source = path.join(work, "source");
    for (const entry of ["package.json", "package-lock.json", "tsconfig.json", "README.md", "src"]) {
      cpSync(path.join(packageRoot, entry), path.join(source, entry), { recursive: true });
    }
    // The build tools as `npm ci` installs them (linked, not fetched again).
    symlinkSync(path.join(packageRoot, "node_modules"), path.join(source, "node_modules"), "dir");
    assert.ok(!readdirSync(source).includes("dist"), "the copy has no dist/");
    const packed = execFileSync("npm", ["pack", "--json", "--pack-destination", work], { cwd: source, encoding: "utf8" });
    const [{ filename, files }] = JSON.parse(packed.slice(packed.indexOf("[")));
    const names = files.map((file) => file.path);
    assert.ok(names.includes("dist/index.js") && names.includes("dist/index.d.ts"), `dist/ is packed: ${names}`);

    const project = path.join(work, "project");
    cpSync(path.join(packageRoot, "test", "pack-project.json"), path.join(project, "package.json"));
    const install = spawnSync("npm", ["install", "--no-audit", "--no-fund", path.join(work, filename)], {
      cwd: project,
      encoding: "utf8",
    });
    assert.equal(install.status, 0, `npm install failed:\n${install.stdout}${install.stderr}`);
    assert.doesNotMatch(`${install.stdout}${install.stderr}`, /install-scripts|ERR/, "installs without an install script");
    writeFileSync(
      path.join(project, "check.mjs"),
      'import { encodeMessage, SUBPROTOCOLS_V2 } from "@jumpgate/client";\n' +
        'console.log(Object.keys(SUBPROTOCOLS_V2).length, encodeMessage({ type: "ping", seq: 1 }, "json"));\n',
    );
    const ran = execFileSync("node", ["check.mjs"], { cwd: project, encoding: "utf8" });
    assert.match(ran, /^2 \{"type":"ping","seq":1\}/, ran);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
