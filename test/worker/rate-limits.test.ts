import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type Account,
  countRows,
  createAccount,
  createAppVia,
  expectJson,
  type IssuedInvitation,
  invite,
  issueKey,
  send,
  withinOneWindow,
} from "./fixtures";

// The Worker runs with the strict emulated limiters of test/vitest.config.ts: 5 requests per key, 3 failed
// authentications and 3 requests without a key per address, per minute. Each attempt uses a key or an address of its
// own, within one window.
const bindings = {
  KEY_RATE_LIMITER: env.TEST_STRICT_KEY_LIMITER,
  AUTH_FAILURE_RATE_LIMITER: env.TEST_STRICT_AUTH_FAILURE_LIMITER,
  KEYLESS_RATE_LIMITER: env.TEST_STRICT_KEYLESS_LIMITER,
};

async function expectTooManyRequests(response: Response) {
  expect(response.status).toBe(429);
  expect(response.headers.get("Retry-After")).toBe("60");
  expect(await response.json()).toEqual({ detail: "Too Many Requests" });
}

let account: Account;
let revisionsPath: string;
beforeAll(async () => {
  account = await createAccount();
  revisionsPath = `/apps/${await createAppVia(account.key, { app_name: "limited" })}/revisions/production`;
});

const freshKey = () => issueKey(account.userId, account.projectId);
let addresses = 0;
const freshAddress = () => `2001:db8::${++addresses}`;
/** A well-formed key that does not exist, of its own (its hash is counted against the key limiter too). */
const unknownKey = () => `${crypto.randomUUID().replaceAll("-", "").slice(0, 8)}.${"0".repeat(64)}`;

describe("rate limits", () => {
  it("answers 429 with Retry-After once a key has spent its budget, and writes nothing then", async () => {
    const { statuses, limited, appsBefore, appsAfter } = await withinOneWindow(env.TEST_STRICT_KEY_LIMITER, async () => {
      const key = await freshKey();
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await send("GET", revisionsPath, { key, bindings })).status);
      const appsBefore = await countRows("apps");
      const limited = await send("POST", "/apps", { key, body: { app_name: `over-budget ${key.slice(0, 8)}` }, bindings });
      return { statuses, limited, appsBefore, appsAfter: await countRows("apps") };
    });
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    await expectTooManyRequests(limited);
    expect(appsAfter).toBe(appsBefore);
  });

  it("keeps each key's budget to itself", async () => {
    const [spent, other] = await withinOneWindow(env.TEST_STRICT_KEY_LIMITER, async () => {
      const [key, otherKey] = [await freshKey(), await freshKey()];
      for (let i = 0; i < 5; i++) await send("GET", revisionsPath, { key, bindings });
      return [await send("GET", revisionsPath, { key, bindings }), await send("GET", revisionsPath, { key: otherKey, bindings })];
    });
    expect(spent.status).toBe(429);
    expect(other.status).toBe(200);
  });

  it("answers 429 instead of 401 once an address has failed authentication too often; other addresses still get 401", async () => {
    const { statuses, limited, elsewhere } = await withinOneWindow(env.TEST_STRICT_AUTH_FAILURE_LIMITER, async () => {
      const [address, wrong] = [freshAddress(), unknownKey()];
      const from = (at: string, authorization: string) =>
        send("GET", revisionsPath, { authorization, headers: { "CF-Connecting-IP": at }, bindings });
      const statuses: number[] = [];
      for (const authorization of [wrong, "malformed", wrong]) statuses.push((await from(address, authorization)).status);
      return { statuses, limited: await from(address, wrong), elsewhere: await from(freshAddress(), wrong) };
    });
    expect(statuses).toEqual([401, 401, 401]);
    await expectTooManyRequests(limited);
    expect(limited.headers.get("WWW-Authenticate")).toBeNull();
    expect(elsewhere.status).toBe(401);
  });

  it("answers 429 to accepts without a key once an address has sent its budget of them, accepting nothing; other addresses and keys go on", async () => {
    const email = `limited-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const invitation = await expectJson<IssuedInvitation>(
      await invite(account.key, account.organizationId, account.workspaceId, email, "viewer"),
    );
    const acceptPath = `/organizations/${account.organizationId}/workspaces/${account.workspaceId}/invite/accept?project_id=${invitation.project_id}`;
    const { guesses, limited, withKey, elsewhere } = await withinOneWindow(env.TEST_STRICT_KEYLESS_LIMITER, async () => {
      const address = freshAddress();
      const acceptFrom = (at: string, token: string, authorization = "") =>
        send("POST", acceptPath, { authorization, body: { token }, headers: { "CF-Connecting-IP": at }, bindings });
      const guesses: number[] = [];
      for (let i = 0; i < 3; i++) guesses.push((await acceptFrom(address, "0".repeat(64))).status);
      return {
        guesses,
        // The right token, past the address's budget.
        limited: await acceptFrom(address, invitation.token),
        // Not the invitee's key: refused, but not counted as keyless.
        withKey: await acceptFrom(address, invitation.token, `ApiKey ${await freshKey()}`),
        elsewhere: await acceptFrom(freshAddress(), invitation.token),
      };
    });
    expect(guesses).toEqual([404, 404, 404]);
    await expectTooManyRequests(limited);
    expect(withKey.status).toBe(403);
    // The limited accept made nothing: the invitation was still open for the accept from another address.
    expect(elsewhere.status).toBe(200);
    expect(await elsewhere.json()).toEqual({
      user_id: expect.any(String),
      email,
      role: "viewer",
      organization_id: account.organizationId,
      workspace_id: account.workspaceId,
      project_id: invitation.project_id,
      api_key: expect.any(String),
    });
  });
});
