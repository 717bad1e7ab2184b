import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
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
mkdirSync(assets, { recursive: true });
// The declarations and schemas keep the document's text where DOCUMENTATION is true (src/http/documentation.ts): set
// before they load.
globalThis.DOCUMENTATION = true;
const { openApiDocument } = await import("../openapi");
// The document for BASE_PATH ""; the Worker rewrites its `servers` under another prefix.
writeFileSync(path.join(assets, "openapi.json"), JSON.stringify(openApiDocument("")));
for (const file of RENDERER_FILES) copyFileSync(path.join(root, "node_modules/swagger-ui-dist", file), path.join(assets, file));
