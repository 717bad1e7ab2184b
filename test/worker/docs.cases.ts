import { describe, expect, it } from "vitest";
import { send } from "./fixtures";

/*
 * GET /docs and the files it loads, through the Worker with its real static assets (the swagger-ui-dist package).
 * test/browser/docs.test.ts uses the page in Chromium; this checks what the Worker answers, under BASE_PATH too.
 */

const POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const under = (basePath: string) => ({ bindings: { BASE_PATH: basePath } });

/** Every attribute `name` of the page's `tag` elements, in order. */
function attributes(page: string, tag: string, name: string): (string | undefined)[] {
  return [...page.matchAll(new RegExp(`<${tag}\\b([^>]*)>`, "g"))].map(
    ([, attrs]) => new RegExp(`\\b${name}="([^"]*)"`).exec(attrs)?.[1],
  );
}

describe.each(["", "/api"])("GET %s/docs", (basePath) => {
  const get = (path: string, headers?: Record<string, string>) =>
    send("GET", `${basePath}${path}`, { headers, ...under(basePath) });

  it("is the page, with no key, under a strict Content-Security-Policy, loading only this Worker's files", async () => {
    for (const path of ["/docs", "/docs/"]) {
      const response = await get(path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get("Content-Type")).toBe("text/html; charset=UTF-8");
      expect(response.headers.get("Content-Security-Policy")).toBe(POLICY);
      expect(response.headers.get("X-Content-Type-Options")).toBe("nosniff");
      const page = await response.text();
      expect(attributes(page, "script", "src")).toEqual([`${basePath}/docs/swagger-ui-bundle.js`, `${basePath}/docs/start.js`]);
      expect(attributes(page, "link", "href")).toEqual([`${basePath}/docs/favicon-32x32.png`, `${basePath}/docs/swagger-ui.css`]);
      expect(attributes(page, "div", "data-openapi-url")).toEqual([`${basePath}/openapi.json`]);
      expect(page).not.toMatch(/<script>|<style|style="|https?:/);
    }
  });

  it.each([
    ["/docs/swagger-ui-bundle.js", "text/javascript", "SwaggerUIBundle"],
    ["/docs/swagger-ui.css", "text/css", ".swagger-ui"],
    ["/docs/start.js", "text/javascript", "SwaggerUIBundle({"],
  ])("serves %s (%s)", async (path, type, content) => {
    const response = await get(path);
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toMatch(new RegExp(`^${type}`));
    expect(response.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(await response.text()).toContain(content);
  });

  it("serves the favicon, and the renderer's files again as 304 to a browser that has them", async () => {
    const icon = await get("/docs/favicon-32x32.png");
    expect(icon.status).toBe(200);
    expect(icon.headers.get("Content-Type")).toBe("image/png");
    expect([...new Uint8Array(await icon.arrayBuffer()).slice(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]);
    for (const path of ["/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css"]) {
      const etag = (await get(path)).headers.get("ETag");
      expect(etag, path).toMatch(/^"[0-9a-f]+"$/);
      const again = await get(path, { "If-None-Match": etag ?? "" });
      expect(again.status, path).toBe(304);
      expect(await again.text()).toBe("");
    }
  });

  it.each([
    "/docs/index.html",
    "/docs/package.json",
    "/docs/swagger-initializer.js",
    "/docs/swagger-ui-bundle.js.map",
    "/docs/swagger-ui.js",
    "/docs/nope",
    "/swagger-ui-bundle.js",
    "/index.html",
  ])("answers 404 JSON for %s: no other file of the package is served", async (path) => {
    const response = await get(path);
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ detail: "Not Found" });
  });
});

it("is not served outside BASE_PATH", async () => {
  for (const path of ["/docs", "/docs/swagger-ui-bundle.js", "/docs/start.js"]) {
    const response = await send("GET", path, under("/api"));
    expect(response.status, path).toBe(404);
    expect(await response.json()).toEqual({ detail: "Not Found" });
  }
});
