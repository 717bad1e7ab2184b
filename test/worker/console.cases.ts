import { describe, expect, it } from "vitest";
import { send } from "./fixtures";

/*
 * GET /console and its files, through the Worker with its real static assets (console/ built by
 * src/cli/build-assets.ts). test/browser/console.test.ts uses the console in Chromium; this checks what the Worker
 * answers, under BASE_PATH too: the same page for every path of its own, the built files, and docs/CONSOLE.md's
 * headers on each.
 */

const HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'self'; form-action 'none'; frame-ancestors 'none'",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
};

const under = (basePath: string) => ({ bindings: { BASE_PATH: basePath } });

/** The console's headers of a response. */
const consoleHeaders = (response: Response) =>
  Object.fromEntries(Object.keys(HEADERS).map((name) => [name, response.headers.get(name)]));

/** The built files the page loads: its scripts' src and stylesheets' href. */
const builtFiles = (page: string) =>
  [...page.matchAll(/<(?:script|link)\b[^>]*\b(?:src|href)="(\.\/assets\/[^"]+)"/g)].map(([, file]) => file);

describe.each(["", "/api"])("GET %s/console", (basePath) => {
  const get = (path: string, headers?: Record<string, string>) =>
    send("GET", `${basePath}${path}`, { headers, ...under(basePath) });

  it.each([
    "/console",
    "/console/",
    "/console/organizations/00000000-0000-7000-8000-000000000001/workspaces/00000000-0000-7000-8000-000000000003",
    "/console/apps/00000000-0000-7000-8000-000000000005",
    "/console/variants/some/deep/link?with=query",
  ])("answers the page at %s, its base under BASE_PATH, no key needed, with the console's headers", async (path) => {
    const response = await get(path);
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toBe("text/html; charset=UTF-8");
    expect(consoleHeaders(response)).toEqual(HEADERS);
    const page = await response.text();
    expect([...page.matchAll(/<base href="([^"]*)">/g)].map(([, href]) => href)).toEqual([`${basePath}/console/`]);
    // Its script and style are files of the build, no inline code, nothing from elsewhere.
    expect(builtFiles(page)).toEqual([
      expect.stringMatching(/^\.\/assets\/index-[\w-]+\.js$/),
      expect.stringMatching(/^\.\/assets\/index-[\w-]+\.css$/),
    ]);
    expect(page).not.toMatch(/<script>|<script [^>]*>[^<]|<style|style="|https?:/);
  });

  it("serves the built files with the console's headers, and again as 304 to a browser that has them", async () => {
    const page = await (await get("/console")).text();
    const types = { js: "text/javascript", css: "text/css" };
    const files = builtFiles(page);
    expect(files).toHaveLength(2); // the script and the stylesheet
    for (const file of files) {
      const path = `/console/${file.slice(2)}`;
      const response = await get(path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get("Content-Type"), path).toMatch(new RegExp(`^${types[file.split(".").pop() as "js" | "css"]}`));
      expect(consoleHeaders(response), path).toEqual(HEADERS);
      expect((await response.text()).length, path).toBeGreaterThan(1000);
      const again = await get(path, { "If-None-Match": response.headers.get("ETag") ?? "" });
      expect(again.status, path).toBe(304);
    }
  });

  it("serves the production build, whatever NODE_ENV built it under (the tests set it to test): no Preact debug code", async () => {
    const page = await (await get("/console")).text();
    const script = builtFiles(page).find((file) => file.endsWith(".js")) ?? "";
    const code = await (await get(`/console/${script.slice(2)}`)).text();
    expect(code.length).toBeGreaterThan(10_000);
    expect(code).not.toContain("__PREACT_DEVTOOLS__");
  });

  it.each(["/console/assets/nope.js", "/console/assets/index.html"])(
    "answers 404 JSON for %s: only built files are served as files",
    async (path) => {
      const response = await get(path);
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ detail: "Not Found" });
    },
  );
});

it("is not served outside BASE_PATH", async () => {
  for (const path of ["/console", "/console/apps/x"]) {
    const response = await send("GET", path, under("/api"));
    expect(response.status, path).toBe(404);
    expect(await response.json()).toEqual({ detail: "Not Found" });
  }
});
