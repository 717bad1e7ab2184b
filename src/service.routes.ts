import { jsonResponse } from "./http/openapi-parts";
import { route } from "./http/route";
import { openApiDocument } from "./openapi";

/** The document per BASE_PATH (its `servers`), built on its first request, then kept for the isolate. */
const documents = new Map<string, ReturnType<typeof openApiDocument>>();

/** GET /health and GET /openapi.json: no key. */
export const serviceRoutes = [
  route(
    {
      method: "get",
      path: "/health",
      auth: "none",
      doc: {
        operationId: "health",
        tag: "Service",
        summary: "Check that the service is up",
        description: "The platform client's health check. No key needed (an empty Authorization header is fine).",
        ok: jsonResponse(
          "The service is up",
          { type: "object", properties: { status: { const: "ok" } }, required: ["status"] },
          { example: { status: "ok" } },
        ),
      },
    },
    (c) => c.json({ status: "ok" }),
  ),
  route(
    {
      method: "get",
      path: "/openapi.json",
      auth: "none",
      doc: {
        operationId: "openApiDocument",
        tag: "Service",
        summary: "Read this OpenAPI document",
        description: "This API's OpenAPI 3.1 description, as JSON. No key needed.",
        ok: jsonResponse("The OpenAPI 3.1 document", { type: "object" }),
      },
    },
    (c) => {
      // The route's pattern is the document's path under BASE_PATH.
      const basePath = c.req.routePath.slice(0, -"/openapi.json".length);
      if (!documents.has(basePath)) documents.set(basePath, openApiDocument(basePath));
      return c.json(documents.get(basePath));
    },
  ),
];
