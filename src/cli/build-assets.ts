import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { RENDERER_FILES } from "../docs/docs.routes";

/*
 * The Worker's static assets (wrangler.toml [assets], dist/assets): the OpenAPI document, built from the route
 * declarations here rather than in the Worker, so that its text and the generator cost the bundle nothing; and the
 * three Swagger UI files GET /docs loads, from the pinned swagger-ui-dist. wrangler's [build] runs this before `wrangler
 * dev` and `deploy`; test/vitest.config.ts before the tests.
 */
const root = path.resolve(import.meta.dirname, "../..");
const assets = path.join(root, "dist/assets");
const outputs = ["openapi.json", ...RENDERER_FILES].map((file) => path.join(assets, file));

/**
 * Whether every output is newer than every input (src/, and the lockfile that pins swagger-ui-dist): then there is
 * nothing to build. `wrangler dev` runs this at each start twice (once before serving, once when its watcher is ready),
 * and a start with nothing changed should cost no build.
 */
function upToDate(): boolean {
  if (!outputs.every((file) => existsSync(file))) return false;
  const sources = readdirSync(path.join(root, "src"), { recursive: true, encoding: "utf8" }).map((file) =>
    path.join(root, "src", file),
  );
  const newestInput = Math.max(...[path.join(root, "package-lock.json"), ...sources].map((file) => statSync(file).mtimeMs));
  return outputs.every((file) => statSync(file).mtimeMs > newestInput);
}

if (!upToDate()) {
  mkdirSync(assets, { recursive: true });
  // The declarations and schemas keep the document's text where DOCUMENTATION is true (src/http/documentation.ts): set
  // before they load.
  globalThis.DOCUMENTATION = true;
  const { openApiDocument } = await import("../openapi");
  // The document for BASE_PATH ""; the Worker rewrites its `servers` under another prefix.
  writeFileSync(path.join(assets, "openapi.json"), JSON.stringify(openApiDocument("")));
  for (const file of RENDERER_FILES) copyFileSync(path.join(root, "node_modules/swagger-ui-dist", file), path.join(assets, file));
}
