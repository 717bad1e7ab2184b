import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { type Account, BASE_URL, createAccount, createAppVia, send } from "./fixtures";
import { fingerprint } from "./harness";

let account: Account;
let appId: string;
beforeAll(async () => {
  account = await createAccount();
  appId = await createAppVia(account.key, { app_name: "routing" });
});

describe("routing", () => {
  it("answers GET /health without a key", async () => {
    const response = await send("GET", "/health");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
  });

  it.each(["/", "/nope", "/apps/x/revisions", "/apps/x/revisions/y/z", "/apps/x/nowhere"])(
    "answers 404 JSON for %s",
    async (path) => {
      const response = await send("GET", path, { key: account.key });
      expect(response.status).toBe(404);
      expect(response.headers.get("Content-Type")).toMatch(/^application\/json/);
      expect(await response.json()).toEqual({ detail: "Not Found" });
    },
  );

  it("answers 405 with Allow for another method on a known path, with or without a trailing slash", async () => {
    const cases: [string, string, string][] = [
      ["PUT", "/apps", "GET, HEAD, POST"],
      ["PUT", "/apps/", "GET, HEAD, POST"],
      ["GET", `/apps/${appId}`, "PATCH, DELETE"],
      ["GET", "/variants/configs/fetch", "POST"],
      ["DELETE", `/apps/${appId}/revisions/production`, "GET, HEAD"],
      ["POST", `/apps/${appId}/revisions/production/`, "GET, HEAD"],
    ];
    for (const [method, path, allow] of cases) {
      const response = await send(method, path, { key: account.key });
      expect(response.status, `${method} ${path}`).toBe(405);
      expect(response.headers.get("Allow")).toBe(allow);
      expect(response.headers.get("Content-Type")).toMatch(/^application\/json/);
      expect(await response.json()).toEqual({ detail: "Method Not Allowed" });
    }
  });

  it("answers HEAD on the list endpoint like GET, without a body", async () => {
    const response = await send("HEAD", `/apps/${appId}/revisions/production`, { key: account.key });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("");
  });
});

describe("BASE_PATH", () => {
  // The Worker reads BASE_PATH from its bindings, as wrangler passes it.
  const under = (basePath: string) => ({ bindings: { BASE_PATH: basePath } });

  it("defaults to the root", async () => {
    expect(env.BASE_PATH).toBe("");
    // Once through the Worker as wrangler.toml names it (`main`), which every other test calls directly.
    expect((await exports.default.fetch(`${BASE_URL}/health`)).status).toBe(200);
  });

  it("mounts every route under the prefix, and nothing outside it", async () => {
    const key = account.key;
    expect((await send("GET", "/api/health", under("/api"))).status).toBe(200);
    expect((await send("POST", "/api/apps/", { key, body: { app_name: "under-api" }, ...under("/api") })).status).toBe(200);
    expect((await send("GET", `/api/apps/${appId}/revisions/staging`, { key, ...under("/api") })).status).toBe(200);
    expect((await send("GET", "/api/health", under("/api/"))).status).toBe(200);
    const outside = await send("GET", `/apps/${appId}/revisions/staging`, { key, ...under("/api") });
    expect(outside.status).toBe(404);
    expect(await outside.json()).toEqual({ detail: "Not Found" });
    const wrongMethod = await send("PUT", "/api/apps", { key, ...under("/api") });
    expect(wrongMethod.status).toBe(405);
  });
});

describe("request bodies", () => {
  it("refuses a body that is not valid UTF-8 with a 422 on every operation that takes one, and writes nothing", async () => {
    const document = await (await send("GET", "/openapi.json")).json<{
      paths: Record<string, Record<string, { requestBody?: unknown }>>;
    }>();
    const operations = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([, operation]) => operation?.requestBody)
        .map(([method]) => [method.toUpperCase(), path.replaceAll(/\{\w+\}/g, () => crypto.randomUUID())] as const),
    );
    expect(operations.length).toBeGreaterThan(15);
    // "café" in Latin-1: a byte (0xE9) that starts a UTF-8 sequence the next byte does not continue.
    const latin1 = new Uint8Array([...new TextEncoder().encode('{"name": "caf'), 0xe9, ...new TextEncoder().encode('"}')]);
    const before = await fingerprint();
    for (const [method, path] of operations) {
      const response = await send(method, `${path}?project_id=${crypto.randomUUID()}`, {
        key: account.key,
        rawBody: latin1,
        headers: { "Content-Type": "application/json" },
      });
      // A split's verdict checks its body after its signature (README.md, "Splits"): here, of no split, a 404.
      const signed = path.endsWith("/split/verdicts");
      expect([response.status, await response.json()], `${method} ${path}`).toEqual(
        signed
          ? [404, { detail: "No split" }]
          : [422, { detail: [{ loc: ["body"], msg: "JSON decode error: the body is not valid UTF-8", type: "json_invalid" }] }],
      );
    }
    expect(await fingerprint()).toBe(before);
  });
});
