import { beforeAll, describe, expect, it } from "vitest";
import {
  type Account,
  createAccount,
  createAppVia,
  createTeam,
  expectError,
  expectJson,
  FORBIDDEN,
  hashApiKey,
  issueKey,
  markKeyUsed,
  send,
} from "../fixtures";
import { fingerprint } from "../harness";
import { databaseOf } from "../pool";

/** The key's row, as stored. */
const storedKey = async (key: string) =>
  databaseOf(key)
    .prepare("SELECT prefix, last_used_at, revoked_at, read_only, project_id FROM api_keys WHERE key_hash = ?")
    .bind(await hashApiKey(key))
    .first<{ prefix: string; last_used_at: string | null; revoked_at: string | null; read_only: number; project_id: string }>();

const prefixOf = (key: string) => key.split(".")[0];
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
const HOUR = 3_600_000;

let account: Account;
let other: Account;
let team: Awaited<ReturnType<typeof createTeam>>;
beforeAll(async () => {
  account = await createAccount();
  other = await createAccount();
  team = await createTeam(other, [[account, "viewer"]]);
});

describe("GET /keys", () => {
  it("lists the caller's own live keys, oldest first, without secrets, expired ones included", async () => {
    const mine = await createAccount();
    const expiring = await issueKey(mine.userId, mine.projectId, { expiresAt: ago(-HOUR) });
    const expired = await issueKey(mine.userId, mine.projectId, { expiresAt: ago(HOUR) });
    const deleted = await issueKey(mine.userId, mine.projectId);
    await databaseOf(deleted)
      .prepare("UPDATE api_keys SET revoked_at = '2026-01-01T00:00:00.000Z' WHERE key_hash = ?")
      .bind(await hashApiKey(deleted))
      .run();
    // Keys issued within one millisecond would tie; a minute apart, the order is the one the list promises.
    for (const [key, minutesAgo] of [
      [mine.key, 3],
      [expiring, 2],
      [expired, 1],
    ] as const) {
      await databaseOf(key)
        .prepare("UPDATE api_keys SET created_at = ? WHERE key_hash = ?")
        .bind(ago(minutesAgo * 60_000), await hashApiKey(key))
        .run();
    }
    await markKeyUsed(mine.key);
    const listed = await expectJson<Record<string, unknown>[]>(await send("GET", "/keys", { key: mine.key }));
    const personal = { project_id: mine.projectId, workspace_id: mine.workspaceId, organization_id: mine.organizationId };
    expect(listed).toEqual([
      {
        prefix: prefixOf(mine.key),
        created_at: expect.any(String),
        last_used_at: expect.any(String),
        expiration_date: null,
        read_only: false,
        ...personal,
      },
      {
        prefix: prefixOf(expiring),
        created_at: expect.any(String),
        last_used_at: null,
        expiration_date: expect.any(String),
        read_only: false,
        ...personal,
      },
      {
        prefix: prefixOf(expired),
        created_at: expect.any(String),
        last_used_at: null,
        expiration_date: expect.any(String),
        read_only: false,
        ...personal,
      },
    ]);
    expect(JSON.stringify(listed)).not.toContain(mine.key.split(".")[1]);
  });
});

describe("POST /keys", () => {
  it("makes a key for the default project of the workspace named, answered once as a JSON string", async () => {
    const response = await send("POST", `/keys?workspace_id=${team.workspaceId}`, { key: account.key });
    const key = await expectJson<string>(response);
    expect(key).toMatch(/^[A-Za-z0-9]{8}\.[0-9a-f]{64}$/);
    expect(await storedKey(key)).toEqual({
      prefix: prefixOf(key),
      last_used_at: null,
      revoked_at: null,
      read_only: 0,
      project_id: team.projectId,
    });
    // It works at once, in the team, with the caller's role there (a viewer).
    expect((await send("GET", "/apps", { key })).status).toBe(200);
    await expectError(await send("POST", "/apps", { key, body: { app_name: "by-new-key" } }), 403, FORBIDDEN);
  });

  it("is 404 for a workspace the caller is not a member of, and for one that does not exist; nothing is made", async () => {
    const before = await fingerprint();
    for (const workspaceId of [other.workspaceId, "01900000-0000-7000-8000-000000000000"]) {
      await expectError(
        await send("POST", `/keys?workspace_id=${workspaceId}`, { key: account.key }),
        404,
        "Workspace not found in this organization",
      );
    }
    expect(await fingerprint()).toBe(before);
  });

  it("makes a read-only key on read_only=true: it reads what its user reads and is refused every write", async () => {
    const owner = await createAccount();
    const appId = await createAppVia(owner.key, { app_name: "readable" });
    const key = await expectJson<string>(
      await send("POST", `/keys?workspace_id=${owner.workspaceId}&read_only=true`, { key: owner.key }),
    );
    expect((await storedKey(key))?.read_only).toBe(1);
    expect((await send("GET", `/apps/${appId}/revisions/production`, { key })).status).toBe(200);
    const before = await fingerprint();
    await expectError(await send("POST", "/apps", { key, body: { app_name: "nope" } }), 403, FORBIDDEN);
    await expectError(await send("POST", `/keys?workspace_id=${owner.workspaceId}`, { key }), 403, FORBIDDEN);
    await expectError(await send("DELETE", `/keys/${prefixOf(key)}`, { key }), 403, FORBIDDEN);
    await expectError(
      await send("PUT", `/organizations/${owner.organizationId}`, { key, body: { name: "renamed" } }),
      403,
      FORBIDDEN,
    );
    expect(await fingerprint()).toBe(before);
  });

  it("serves the expiration_date asked for; a key past it fails", async () => {
    const owner = await createAccount();
    const expiry = new Date(Date.now() + 2 * HOUR).toISOString();
    const key = await expectJson<string>(
      await send(
        "POST",
        `/keys?workspace_id=${owner.workspaceId}&expiration_date=${encodeURIComponent(expiry.replace("Z", "+00:00"))}`,
        {
          key: owner.key,
        },
      ),
    );
    const listed = await expectJson<{ prefix: string; expiration_date: string }[]>(await send("GET", "/keys", { key }));
    expect(listed.find(({ prefix }) => prefix === prefixOf(key))?.expiration_date).toBe(expiry);
    await databaseOf(key)
      .prepare("UPDATE api_keys SET expires_at = ? WHERE key_hash = ?")
      .bind(ago(1000), await hashApiKey(key))
      .run();
    expect((await send("GET", "/keys", { key })).status).toBe(401);
  });

  it.each([
    ["no workspace_id", "", ["query", "workspace_id"]],
    ["a workspace_id that is not a UUID", "?workspace_id=abc", ["query", "workspace_id"]],
    [
      "read_only that is not a boolean",
      `?workspace_id=${"01900000-0000-7000-8000-000000000000"}&read_only=yes`,
      ["query", "read_only"],
    ],
    [
      "an expiration_date in the past",
      `?workspace_id=${"01900000-0000-7000-8000-000000000000"}&expiration_date=2020-01-01T00:00:00Z`,
      ["query", "expiration_date"],
    ],
    [
      "an expiration_date that is not a date-time",
      `?workspace_id=${"01900000-0000-7000-8000-000000000000"}&expiration_date=tomorrow`,
      ["query", "expiration_date"],
    ],
  ])("answers 422 for %s, and makes nothing", async (_name, query, loc) => {
    const before = await fingerprint();
    const response = await send("POST", `/keys${query}`, { key: account.key });
    expect(response.status).toBe(422);
    expect(((await response.json()) as { detail: { loc: unknown[] }[] }).detail.map((issue) => issue.loc)).toEqual([loc]);
    expect(await fingerprint()).toBe(before);
  });
});

describe("DELETE /keys/{prefix}", () => {
  it("deletes the caller's key: the very next request with it fails, and it leaves the list", async () => {
    const mine = await createAccount();
    const spare = await issueKey(mine.userId, mine.projectId);
    const deleted = await expectJson<{ prefix: string; revoked_at: string }>(
      await send("DELETE", `/keys/${prefixOf(spare)}`, { key: mine.key }),
    );
    expect(deleted).toEqual({ prefix: prefixOf(spare), revoked_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    expect((await send("GET", "/keys", { key: spare })).status).toBe(401);
    const listed = await expectJson<{ prefix: string }[]>(await send("GET", "/keys", { key: mine.key }));
    expect(listed.map(({ prefix }) => prefix)).toEqual([prefixOf(mine.key)]);
    // A key may delete itself; then it fails too.
    await expectJson(await send("DELETE", `/keys/${prefixOf(mine.key)}`, { key: mine.key }));
    expect((await send("GET", "/keys", { key: mine.key })).status).toBe(401);
  });

  it("is 404 for another user's prefix, an unknown one and one already deleted; the other user's key keeps working", async () => {
    const mine = await createAccount();
    const spare = await issueKey(mine.userId, mine.projectId);
    await expectJson(await send("DELETE", `/keys/${prefixOf(spare)}`, { key: mine.key }));
    for (const prefix of [prefixOf(other.key), "ZZZZZZZZ", prefixOf(spare)]) {
      await expectError(await send("DELETE", `/keys/${prefix}`, { key: mine.key }), 404, "API key not found");
    }
    expect((await send("GET", "/keys", { key: other.key })).status).toBe(200);
  });
});

describe("GET /keys/{prefix}/validate", () => {
  it("is true only for a live key of the caller's", async () => {
    const mine = await createAccount();
    const expired = await issueKey(mine.userId, mine.projectId, { expiresAt: ago(HOUR) });
    const deleted = await issueKey(mine.userId, mine.projectId);
    await expectJson(await send("DELETE", `/keys/${prefixOf(deleted)}`, { key: mine.key }));
    const validate = async (prefix: string) =>
      expectJson<boolean>(await send("GET", `/keys/${prefix}/validate`, { key: mine.key }));
    expect(await validate(prefixOf(mine.key))).toBe(true);
    expect(await validate(prefixOf(other.key))).toBe(false);
    expect(await validate(prefixOf(expired))).toBe(false);
    expect(await validate(prefixOf(deleted))).toBe(false);
    expect(await validate("ZZZZZZZZ")).toBe(false);
  });
});

describe("a key's last use", () => {
  /** last_used_at once the request's after-answer write (if any) has landed: it runs in waitUntil. */
  async function lastUsedAfter(key: string, request: () => Promise<Response>) {
    await request();
    for (let attempt = 0; attempt < 50; attempt++) {
      await scheduler.wait(10);
      const row = await storedKey(key);
      if (row?.last_used_at) return row.last_used_at;
    }
    return (await storedKey(key))?.last_used_at ?? null;
  }

  it("is recorded by a key's first request, and again only once the record is an hour old", async () => {
    const mine = await createAccount();
    const first = await lastUsedAfter(mine.key, () => send("GET", "/keys", { key: mine.key }));
    expect(Date.parse(first ?? "")).toBeGreaterThan(Date.now() - 60_000);
    const hash = await hashApiKey(mine.key);
    const setLastUse = (at: string) =>
      databaseOf(mine.key).prepare("UPDATE api_keys SET last_used_at = ? WHERE key_hash = ?").bind(at, hash).run();
    const recent = ago(30 * 60_000);
    await setLastUse(recent);
    await send("GET", "/profile", { key: mine.key });
    await scheduler.wait(50);
    expect((await storedKey(mine.key))?.last_used_at).toBe(recent);
    await setLastUse(ago(2 * HOUR));
    await send("GET", "/profile", { key: mine.key });
    let updated = "";
    for (let attempt = 0; attempt < 50 && !(Date.parse(updated) > Date.now() - 60_000); attempt++) {
      await scheduler.wait(10);
      updated = (await storedKey(mine.key))?.last_used_at ?? "";
    }
    expect(Date.parse(updated)).toBeGreaterThan(Date.now() - 60_000);
  });

  it("is not recorded for a key that fails", async () => {
    const mine = await createAccount();
    const wrong = `${prefixOf(mine.key)}.${"0".repeat(64)}`;
    expect((await send("GET", "/keys", { key: wrong })).status).toBe(401);
    await scheduler.wait(50);
    expect((await storedKey(mine.key))?.last_used_at).toBeNull();
  });
});

describe("GET /profile", () => {
  it("is the caller's own user, also when asked for by its id", async () => {
    const me = await expectJson(await send("GET", "/profile", { key: account.key }));
    const expected = {
      id: account.userId,
      username: account.username,
      email: `${account.username}@example.com`,
      created_at: expect.any(String),
    };
    expect(me).toEqual(expected);
    expect(await expectJson(await send("GET", `/profile?user_id=${account.userId}`, { key: account.key }))).toEqual(expected);
  });

  it("is 404 for anybody else's id, a member of the same organization included", async () => {
    for (const userId of [other.userId, "01900000-0000-7000-8000-000000000000"]) {
      await expectError(await send("GET", `/profile?user_id=${userId}`, { key: account.key }), 404, "User not found");
    }
  });
});

describe("GET /health", () => {
  it("needs no key: none, an empty Authorization (as the client sends it) or a wrong one", async () => {
    for (const authorization of [undefined, "", "ApiKey nonsense"]) {
      expect(await expectJson(await send("GET", "/health", { authorization }))).toEqual({ status: "ok" });
    }
  });
});

describe("caching", () => {
  it("every accounts answer is no-store and nosniff, errors included: keys and members are never cached", async () => {
    const paths = ["/keys", "/keys/ZZZZZZZZ/validate", "/profile", "/organizations", `/organizations/${account.organizationId}`];
    for (const path of [
      ...paths,
      "/organizations/own",
      "/workspaces/roles",
      "/workspaces/permissions",
      `/organizations/${other.organizationId}`,
    ]) {
      const response = await send("GET", path, { key: account.key });
      expect(response.headers.get("Cache-Control"), path).toBe("no-store");
      expect(response.headers.get("X-Content-Type-Options"), path).toBe("nosniff");
    }
  });
});
