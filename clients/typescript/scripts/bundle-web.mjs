// Builds the browser client's copy of this package's protocol 2 room applier:
// one ES module, server/web/jumpgate-client.js, which the server embeds and
// serves at /assets/jumpgate-client.js. `npm run bundle:web` writes it; the
// test `web-bundle.test.mjs` fails when the checked-in file differs from a
// fresh build, so it cannot drift from src/.
import { build } from "esbuild";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const OUTPUT = join(here, "..", "..", "..", "server", "web", "jumpgate-client.js");

const BANNER = `// jumpgate-client.js: generated from clients/typescript/src/v2.ts by
// \`npm run bundle:web\` in clients/typescript; do not edit by hand.`;

/** The bundle's text, built in memory. */
export async function bundle() {
  const result = await build({
    entryPoints: [join(here, "..", "src", "v2.ts")],
    bundle: true,
    format: "esm",
    target: "es2022",
    platform: "browser",
    write: false,
    legalComments: "none",
    banner: { js: BANNER },
    logLevel: "silent",
  });
  return result.outputFiles[0].text;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = await bundle();
  const before = (() => {
    try {
      return readFileSync(OUTPUT, "utf8");
    } catch {
      return undefined;
    }
  })();
  writeFileSync(OUTPUT, text);
  console.log(`${OUTPUT}: ${text.length} bytes${before === text ? " (unchanged)" : ""}`);
}
