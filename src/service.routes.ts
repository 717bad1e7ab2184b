import * as z from "zod/mini";
import { route } from "./http/route";

/** The document per BASE_PATH, read from the static assets on its first request, then kept for the isolate. */
const documents = new Map<string, Promise<string>>();

/** The document src/cli/build-assets.ts built (for BASE_PATH ""), with its `servers` under `basePath`. */
async function documentUnder(assets: Fetcher, basePath: string): Promise<string> {
  const built = await (await assets.fetch("https://assets.invalid/openapi.json")).text();
  if (basePath === "") return built;
  const document = JSON.parse(built) as { servers: { url: string }[] };
  return JSON.stringify({ ...document, servers: document.servers.map((server) => ({ ...server, url: basePath })) });
}

/** GET /health and GET /openapi.json: no key. */
export const serviceRoutes = [
  route(
    {
      method: "get",
      path: "/health",
      roundTrips: globalThis.ROUTE_FACTS && { cases: [{ name: "GET /health", path: "/health", key: "none", trips: 0 }] },
      auth: "none",
      doc: globalThis.DOCUMENTATION && {
        operationId: "health",
        tag: "Service",
        summary: "Check that the service is up",
        description: "The platform client's health check. No key needed (an empty Authorization header is fine).",
        ok: {
          schema: z.object({ status: z.literal("ok") }),
          documentedAs: { type: "object", properties: { status: { const: "ok" } }, required: ["status"] },
          description: "The service is up",
          example: { status: "ok" },
        },
      },
    },
    (c) => c.json({ status: "ok" } as const),
  ),
  route(
    {
      method: "get",
      path: "/openapi.json",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "GET /openapi.json", path: "/openapi.json", key: "none", trips: 0 }],
      },
      auth: "none",
      doc: globalThis.DOCUMENTATION && {
        operationId: "openApiDocument",
        tag: "Service",
        summary: "Read this OpenAPI document",
        description: "This API's OpenAPI 3.1 description, as JSON. No key needed.",
        // The document is a static asset, answered as it is: no schema types it.
        ok: { description: "The OpenAPI 3.1 document", documentedAs: { type: "object" } },
      },
    },
    async (c) => {
      // The route's pattern is the document's path under BASE_PATH.
      const basePath = c.req.routePath.slice(0, -"/openapi.json".length);
      if (!documents.has(basePath)) documents.set(basePath, documentUnder(c.env.ASSETS, basePath));
      const document = documents.get(basePath) as Promise<string>;
      return c.body(await document, 200, { "Content-Type": "application/json" });
    },
  ),
];
