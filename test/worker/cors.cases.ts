import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { type Account, createAccount, createAppVia, type RequestOptions, send } from "./fixtures";

const APP_ORIGIN = "https://app.example.com";
const ADMIN_ORIGIN = "https://admin.example.com";

let account: Account;
let revisionsPath: string;
beforeAll(async () => {
  account = await createAccount();
  revisionsPath = `/apps/${await createAppVia(account.key, { app_name: "cross-origin" })}/revisions/production`;
});

// The Worker reads CORS_ORIGINS from its bindings, as wrangler passes it.
const fetchWith = (
  corsOrigins: string,
  path: string,
  { method = "GET", ...options }: RequestOptions & { method?: string } = {},
) => send(method, path, { ...options, bindings: { CORS_ORIGINS: corsOrigins } });

const preflight = (origin: string, method: string, requestHeaders = "authorization, content-type") => ({
  method: "OPTIONS",
  headers: { Origin: origin, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": requestHeaders },
});

const listed = (value: string | null) => (value ?? "").split(",").map((item) => item.trim().toLowerCase());

describe("CORS off (CORS_ORIGINS empty, the default)", () => {
  it("is the default", () => {
    expect(env.CORS_ORIGINS).toBe("");
  });

  it("answers a preflight like any other method: 405 on a known path, 404 elsewhere, no CORS headers", async () => {
    const onApps = await fetchWith("", "/apps", preflight(APP_ORIGIN, "POST"));
    expect(onApps.status).toBe(405);
    expect(onApps.headers.get("Allow")).toBe("GET, HEAD, POST");
    expect(onApps.headers.get("Access-Control-Allow-Origin")).toBeNull();
    expect((await fetchWith("", revisionsPath, preflight(APP_ORIGIN, "GET"))).status).toBe(405);
    expect((await fetchWith("", "/nowhere", preflight(APP_ORIGIN, "GET"))).status).toBe(404);
  });

  it("adds no CORS headers to a cross-origin request", async () => {
    const response = await fetchWith("", revisionsPath, { headers: { Origin: APP_ORIGIN }, key: account.key });
    expect(response.status).toBe(200);
    expect([...response.headers.keys()].filter((name) => name.startsWith("access-control-"))).toEqual([]);
  });
});

describe("CORS on (CORS_ORIGINS lists origins)", () => {
  const origins = `${APP_ORIGIN}, ${ADMIN_ORIGIN}/`;

  it("answers a preflight from a listed origin with 204, the methods, and Authorization and Content-Type allowed", async () => {
    for (const [origin, path, method] of [
      [APP_ORIGIN, "/apps", "POST"],
      [ADMIN_ORIGIN, `${revisionsPath}/`, "GET"],
    ]) {
      const response = await fetchWith(origins, path, preflight(origin, method));
      expect(response.status, `${method} ${path}`).toBe(204);
      expect(response.headers.get("Access-Control-Allow-Origin")).toBe(origin);
      expect(listed(response.headers.get("Access-Control-Allow-Methods"))).toEqual([
        "get",
        "head",
        "post",
        "put",
        "patch",
        "delete",
      ]);
      expect(listed(response.headers.get("Access-Control-Allow-Headers"))).toEqual(
        expect.arrayContaining([
          "authorization",
          "content-type",
          "x-request-id",
          "x-d1-bookmark",
          "if-none-match",
          "if-match",
          "idempotency-key",
          "protection-bypass",
        ]),
      );
      expect(listed(response.headers.get("Vary"))).toContain("origin");
      expect(response.headers.get("X-Request-Id")).toBeTruthy();
    }
  });

  it("does not allow an origin it does not list", async () => {
    const response = await fetchWith(origins, "/apps", preflight("https://evil.example.com", "POST"));
    expect(response.headers.get("Access-Control-Allow-Origin")).toBeNull();
  });

  it("lets a listed origin read responses, errors included, and the headers clients use", async () => {
    const cases: [number, RequestOptions, string][] = [
      [200, { headers: { Origin: APP_ORIGIN }, key: account.key }, revisionsPath],
      [401, { headers: { Origin: APP_ORIGIN } }, revisionsPath],
      [405, { headers: { Origin: APP_ORIGIN } }, "/variants/configs/fetch"],
    ];
    for (const [status, init, path] of cases) {
      const response = await fetchWith(origins, path, init);
      expect(response.status).toBe(status);
      expect(response.headers.get("Access-Control-Allow-Origin")).toBe(APP_ORIGIN);
      expect(listed(response.headers.get("Access-Control-Expose-Headers"))).toEqual(
        expect.arrayContaining(["x-request-id", "x-d1-bookmark", "etag", "retry-after", "idempotent-replayed"]),
      );
    }
  });

  it("allows any origin with *", async () => {
    const response = await fetchWith("*", "/apps", preflight("https://anywhere.example.org", "POST"));
    expect(response.status).toBe(204);
    expect(response.headers.get("Access-Control-Allow-Origin")).toBe("*");
  });
});
