import { type Context, Hono } from "hono";
import type { AppEnv } from "../types";

/*
 * GET /console: the console (docs/CONSOLE.md), a client of this API built from console/ into the static assets by
 * src/cli/build-assets.ts. Its files are handed over as they are; every other path under /console is one of the page's
 * own routes and answers its index.html, so that a reload or a shared link works. The page's <base href> is set to
 * BASE_PATH here, so that one build serves under any prefix.
 */

// Scripts, styles and connections to this origin only (no inline code, no eval); the page has no frame.
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const CONSOLE_HEADERS = {
  "Content-Security-Policy": CONTENT_SECURITY_POLICY,
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "X-Content-Type-Options": "nosniff",
};

/** The response with the console's headers set. */
function withConsoleHeaders(response: Response): Response {
  const answer = new Response(response.body, response);
  for (const [name, value] of Object.entries(CONSOLE_HEADERS)) answer.headers.set(name, value);
  return answer;
}

/** A built file (named by content hash, so revalidated by its ETag), or the 404 of an unknown one. */
async function builtFile(c: Context<AppEnv>, file: string) {
  const asset = await c.env.ASSETS.fetch(new URL(`/console/assets/${file}`, c.req.url), { headers: c.req.raw.headers });
  if (asset.status === 404) return c.notFound();
  return withConsoleHeaders(asset);
}

/** The page, its <base href> under `basePath`. */
async function indexPage(c: Context<AppEnv>, basePath: string) {
  const page = await (await c.env.ASSETS.fetch(new URL("/console/", c.req.url))).text();
  const html = page.replace('<base href="/console/">', `<base href="${basePath}/console/">`);
  return withConsoleHeaders(c.html(html, 200, { "Cache-Control": "no-cache" }));
}

/** The console at `${basePath}/console`, needing no key: it asks for one. */
export function consoleRoutes(basePath: string) {
  return new Hono<AppEnv>()
    .get("/assets/:file", (c) => builtFile(c, c.req.param("file")))
    .get("/*", (c) => indexPage(c, basePath));
}
