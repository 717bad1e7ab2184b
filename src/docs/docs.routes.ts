import { type Context, Hono } from "hono";
import { html } from "hono/html";
import type { AppEnv } from "../types";

/*
 * GET /docs: the OpenAPI document as Swagger UI, the page FastAPI's users know from their /docs. The renderer's files
 * are Workers static assets (wrangler.toml [assets], the swagger-ui-dist package), so they cost the bundle nothing;
 * the page and its start-up script are the only parts in code. Nothing is loaded from anywhere but this Worker.
 */

/** The renderer's files the page loads, as the package names them: the only assets ever served. */
export const RENDERER_FILES = ["swagger-ui.css", "swagger-ui-bundle.js", "favicon-32x32.png"] as const;

// Scripts and styles from files of this origin only (no inline code, no eval); Swagger UI's stylesheet draws its icons
// as data: images; "Execute" calls the API on this origin.
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

// Started from a file, not inline, for the policy above. The document's URL comes from the page (BASE_PATH).
const START_SCRIPT = `const root = document.getElementById("swagger-ui");
window.ui = SwaggerUIBundle({
  url: root.dataset.openapiUrl,
  domNode: root,
  deepLinking: true,
  tryItOutEnabled: true,
});
`;

function page(basePath: string) {
  const docs = `${basePath}/docs`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>App Management Service API</title>
<link rel="icon" type="image/png" href="${docs}/favicon-32x32.png">
<link rel="stylesheet" href="${docs}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui" data-openapi-url="${basePath}/openapi.json"></div>
<script src="${docs}/swagger-ui-bundle.js"></script>
<script src="${docs}/start.js"></script>
</body>
</html>
`;
}

/** One of the renderer's files from the static assets, revalidated by its ETag (a 304 when the browser has it). */
async function rendererFile(c: Context<AppEnv>, file: string) {
  const asset = await c.env.ASSETS.fetch(new URL(`/${file}`, c.req.url), { headers: c.req.raw.headers });
  const response = new Response(asset.body, asset);
  response.headers.set("X-Content-Type-Options", "nosniff");
  return response;
}

/** The API reference at `${basePath}/docs`, needing no key, as /openapi.json needs none. */
export function docsRoutes(basePath: string) {
  const docs = new Hono<AppEnv>()
    .get("/", (c) => {
      c.header("Content-Security-Policy", CONTENT_SECURITY_POLICY);
      c.header("X-Content-Type-Options", "nosniff");
      c.header("Referrer-Policy", "no-referrer");
      c.header("Cache-Control", "no-cache");
      return c.html(page(basePath));
    })
    .get("/start.js", (c) => {
      c.header("Content-Type", "text/javascript; charset=utf-8");
      c.header("X-Content-Type-Options", "nosniff");
      c.header("Cache-Control", "no-cache");
      return c.body(START_SCRIPT);
    });
  for (const file of RENDERER_FILES) docs.get(`/${file}`, (c) => rendererFile(c, file));
  return docs;
}
