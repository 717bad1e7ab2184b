/*
 * Prints the OpenAPI documents the route declarations make under BASE_PATH "" and "/api", as one JSON object keyed by
 * BASE_PATH. test/vitest.config.ts hands them to openapi-fixture.cases.ts, which runs inside the Worker, where the
 * declarations have no documentation text (wrangler.toml [define]).
 */
import { stdout } from "node:process";

globalThis.DOCUMENTATION = true;
const { openApiDocument } = await import("../../src/openapi");
stdout.write(JSON.stringify(Object.fromEntries(["", "/api"].map((basePath) => [basePath, openApiDocument(basePath)]))));
