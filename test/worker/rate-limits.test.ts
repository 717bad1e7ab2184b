import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { type Account, countRows, createAccount, createAppVia } from "./fixtures";
import { fetchWithEnv } from "./instrumented-d1";

// The Worker runs with the strict emulated limiters of test/vitest.config.ts: 5 requests per key, 3 failed
// authentications per address, per minute.
const strict = () => ({
  KEY_RATE_LIMITER: env.TEST_STRICT_KEY_LIMITER,
  AUTH_FAILURE_RATE_LIMITER: env.TEST_STRICT_AUTH_FAILURE_LIMITER,
});

async function expectTooManyRequests(response: Response) {
  expect(response.status).toBe(429);
  expect(response.headers.get("Retry-After")).toBe("60");
  expect(await response.json()).toEqual({ detail: "Too Many Requests" });
}

let account: Account;
let appId: string;
beforeAll(async () => {
  account = await createAccount();
  appId = await createAppVia(account.key, { app_name: "limited" });
});

describe("rate limits", () => {
  it("answers 429 with Retry-After once a key has spent its budget, and writes nothing then", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++)
      statuses.push((await fetchWithEnv(strict(), "GET", `/apps/${appId}/revisions/production`, account.key)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    const before = await countRows("apps");
    await expectTooManyRequests(await fetchWithEnv(strict(), "POST", "/apps", account.key, '{"app_name":"over-budget"}'));
    expect(await countRows("apps")).toBe(before);
  });

  it("keeps each key's budget to itself", async () => {
    const other = await createAccount();
    expect((await fetchWithEnv(strict(), "GET", `/apps/${appId}/revisions/production`, other.key)).status).toBe(404);
  });

  it("answers 429 instead of 401 once an address has failed authentication too often; other addresses still get 401", async () => {
    const from = (address: string) => ({ "CF-Connecting-IP": address });
    const wrong = `${account.key.slice(0, 9)}${"0".repeat(64)}`;
    const statuses: number[] = [];
    for (const authorization of [wrong, "malformed", wrong]) {
      const response = await fetchWithEnv(strict(), "GET", `/apps/${appId}/revisions/production`, undefined, undefined, {
        ...from("203.0.113.7"),
        Authorization: authorization,
      });
      statuses.push(response.status);
    }
    expect(statuses).toEqual([401, 401, 401]);
    const limited = await fetchWithEnv(strict(), "GET", `/apps/${appId}/revisions/production`, undefined, undefined, {
      ...from("203.0.113.7"),
      Authorization: wrong,
    });
    await expectTooManyRequests(limited);
    expect(limited.headers.get("WWW-Authenticate")).toBeNull();
    const elsewhere = await fetchWithEnv(strict(), "GET", `/apps/${appId}/revisions/production`, undefined, undefined, {
      ...from("198.51.100.2"),
      Authorization: wrong,
    });
    expect(elsewhere.status).toBe(401);
  });
});
