import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Account, createAccount, createAppVia, createTeam, DEFAULT_ENVIRONMENTS, deploy, send } from "./fixtures";
import { changes, databaseProblems, snapshot } from "./harness";

/*
 * SQL injection, from the outside: every body field, both path parameters and the headers, against the real D1.
 * Nothing may change beyond what the same request with an ordinary value would change (every row of every table
 * compared), and no answer may carry SQL or internals. The inside (SQL text in src/ is built from constants only)
 * is the static check of test/static/sql.test.ts.
 */

const PAYLOADS = [
  "' OR 1=1 --",
  "' OR '1'='1",
  '" OR ""="',
  "'; DROP TABLE apps; --",
  '"; DROP TABLE apps; --',
  "1; DELETE FROM api_keys",
  "x'); DELETE FROM apps; --",
  "' UNION SELECT key_hash, prefix FROM api_keys --",
  "x' UNION SELECT NULL, NULL, NULL, NULL --",
  "') OR ('a'='a",
  "admin'/*",
  "*/ OR 1=1 /*",
  "anything' --",
  "/**/UNION/**/SELECT/**/1",
  "'||(SELECT key_hash FROM api_keys LIMIT 1)||'",
  "' AND (SELECT COUNT(*) FROM users) > 0 --",
  "'; UPDATE api_keys SET revoked_at = NULL; --",
  "'; PRAGMA foreign_keys = OFF; --",
  "'; ATTACH DATABASE 'file:x' AS x; --",
  "x'); INSERT INTO apps VALUES ('a', 'b', 'c', 'd', 'e'); --",
  "' OR randomblob(1000000000) --",
  "?1",
  "?3 OR 1=1",
  ":name",
  "@p",
  "$1",
  "%",
  "_",
  "%_%",
  "\\' OR 1=1 --",
  "%27%20OR%201%3D1%20--",
  "\u2019 OR 1=1 --", // right single quotation mark
  "\u02bc OR 1=1 --", // modifier letter apostrophe
  "\uff07 OR 1=1 --", // fullwidth apostrophe
  "\uff02; DROP TABLE apps; --", // fullwidth quotation mark
  "\u2018; DROP TABLE apps; --",
  "\u0000' OR 1=1 --", // NUL: refused (control character)
  "a\u0000'; DROP TABLE apps; --",
] as const;

/** What a payload is as a name or an environment name: accepted unless blank or holding a control character. */
const isAcceptableName = (value: string) => value.trim() !== "" && !/\p{Cc}/u.test(value);

/** Text that must never reach a client: SQL, SQLite/D1 internals, stack traces, table names. */
const INTERNALS =
  /sqlite|d1_|sql|syntax|near "|constraint|no such|\b(select|insert|update|delete|union|drop|pragma|from|where)\b|stack|\bat \S+ \(|api_keys|key_hash|organization_members/i;

let owner: Account;
let outsider: Account;
let team: Awaited<ReturnType<typeof createTeam>>;
let appId: string;
let otherAppId: string;

beforeAll(async () => {
  vi.spyOn(console, "log").mockImplementation(() => {});
  owner = await createAccount();
  outsider = await createAccount();
  team = await createTeam(owner);
  appId = await createAppVia(owner.key, { app_name: "target" });
  otherAppId = await createAppVia(outsider.key, { app_name: "someone else's" });
  await deploy(appId, "production", "main", owner);
});

afterAll(() => {
  vi.restoreAllMocks();
});

const post = (body: unknown) => send("POST", "/apps", { key: owner.key, body });
const get = (rawAppId: string, rawEnvironment: string) =>
  send("GET", `/apps/${encodeURIComponent(rawAppId)}/revisions/${encodeURIComponent(rawEnvironment)}`, { key: owner.key });

/** An error answer: the documented shape, and nothing of the payload, SQL or internals in it. */
async function expectCleanError(response: Response, payload: string) {
  const text = await response.text();
  expect(response.status).toBeGreaterThanOrEqual(400);
  expect(response.status).toBeLessThan(500);
  expect(text).not.toMatch(INTERNALS);
  expect(JSON.parse(text)).toHaveProperty("detail");
  if (payload.length >= 3) expect(text).not.toContain(JSON.stringify(payload).slice(1, -1));
  return JSON.parse(text) as { detail: unknown };
}

/** Runs the request and checks that the database is exactly as it was. */
async function expectNoChange<T>(request: () => Promise<T>): Promise<T> {
  const before = await snapshot();
  const result = await request();
  expect(changes(before, await snapshot())).toEqual({});
  return result;
}

describe("SQL in app_name", () => {
  it.each(PAYLOADS.map((payload) => [JSON.stringify(payload), payload]))(
    "%s is an ordinary name: stored and read back verbatim, and nothing else changes",
    async (_, payload) => {
      const before = await snapshot();
      const response = await post({ app_name: payload });
      if (!isAcceptableName(payload)) {
        expect(response.status).toBe(422);
        const { detail } = await expectCleanError(response, payload);
        expect(detail).toEqual([
          { loc: ["body", "app_name"], msg: "Value error, app_name must not contain control characters", type: "value_error" },
        ]);
        expect(changes(before, await snapshot())).toEqual({});
        return;
      }
      expect(response.status).toBe(200);
      const created = (await response.json()) as { app_id: string; app_name: string };
      expect(created.app_name).toBe(payload);

      // Exactly what a create changes: one app row (the payload, verbatim) and its three environments.
      const { apps, environments, ...others } = changes(before, await snapshot());
      expect(others).toEqual({});
      expect(apps).toEqual({
        added: [
          expect.objectContaining({ id: created.app_id, project_id: owner.projectId, name: payload, created_by: owner.userId }),
        ],
        removed: [],
      });
      expect(environments?.removed).toEqual([]);
      expect(environments?.added.map((row) => [row.app_id, row.name, row.revision]).sort()).toEqual(
        DEFAULT_ENVIRONMENTS.map((name) => [created.app_id, name, 0]).sort(),
      );
      const { results } = await env.DB.prepare("SELECT name FROM apps WHERE project_id = ? AND name = ?")
        .bind(owner.projectId, payload)
        .all();
      expect(results).toEqual([{ name: payload }]);

      // The app is readable, and the same name again is taken: compared exactly, like any name.
      const record = await get(created.app_id, "development");
      expect(record.status).toBe(200);
      expect(await record.json()).toMatchObject({ app_id: created.app_id, name: "development", revision: 0 });
      const again = await expectNoChange(() => post({ app_name: payload }));
      expect(again.status).toBe(409);
      await expectCleanError(again, payload);
    },
  );

  it("compares names exactly, not as LIKE patterns or case-insensitively", async () => {
    for (const name of ["like_x", "like%", "LIKE_X"]) expect((await post({ app_name: name })).status).toBe(200);
    for (const name of ["likeAx", "like-anything", "Like_x"]) expect((await post({ app_name: name })).status).toBe(200);
    expect((await post({ app_name: "like_x" })).status).toBe(409);
  });
});

describe("SQL in project_id, workspace_id and organization_id", () => {
  const fields = ["project_id", "workspace_id", "organization_id"] as const;
  const cases = fields.flatMap((field) => PAYLOADS.map((payload) => [field, JSON.stringify(payload), payload] as const));

  it.each(cases)("%s = %s is refused (422 uuid_parsing), and nothing changes", async (field, _, payload) => {
    const response = await expectNoChange(() => post({ app_name: "never created", [field]: payload }));
    expect(response.status).toBe(422);
    const { detail } = await expectCleanError(response, payload);
    expect(detail).toEqual([{ loc: ["body", field], msg: "Input should be a valid UUID", type: "uuid_parsing" }]);
  });

  it.each(fields)("%s = a real id followed by SQL is refused, and nothing changes", async (field) => {
    const ids = { project_id: team.projectId, workspace_id: team.workspaceId, organization_id: team.organizationId };
    for (const suffix of ["' OR 1=1 --", "'; DROP TABLE apps; --", " OR 1=1", "\u0000"]) {
      const response = await expectNoChange(() => post({ app_name: "never created", [field]: `${ids[field]}${suffix}` }));
      expect(response.status).toBe(422);
      await expectCleanError(response, suffix);
    }
  });
});

describe("SQL in the path", () => {
  it.each(PAYLOADS.map((payload) => [JSON.stringify(payload), payload]))(
    "app_id = %s is refused (422), and nothing changes",
    async (_, payload) => {
      const response = await expectNoChange(() => get(payload, "production"));
      expect(response.status).toBe(422);
      const { detail } = await expectCleanError(response, payload);
      expect(detail).toEqual([{ loc: ["path", "app_id"], msg: "Input should be a valid UUID", type: "uuid_parsing" }]);
    },
  );

  it.each(PAYLOADS.map((payload) => [JSON.stringify(payload), payload]))(
    "environment_name = %s finds no environment (404, or 422 for a control character), and nothing changes",
    async (_, payload) => {
      for (const target of [appId, otherAppId]) {
        const response = await expectNoChange(() => get(target, payload));
        expect(response.status).toBe(/\p{Cc}/u.test(payload) ? 422 : 404);
        await expectCleanError(response, payload);
      }
    },
  );

  it("app_id = a real id followed by SQL is refused, and nothing changes", async () => {
    for (const suffix of ["' OR 1=1 --", "' OR '1'='1", "; DROP TABLE apps", "%27"]) {
      const response = await expectNoChange(() => get(`${appId}${suffix}`, "production"));
      expect(response.status).toBe(422);
      await expectCleanError(response, suffix);
    }
  });

  it("matches environment names exactly, not as LIKE patterns or case-insensitively", async () => {
    for (const name of ["%", "_______", "dev%", "%tion", "PRODUCTION", "production%", "production "]) {
      const response = await get(appId, name);
      expect(response.status, name).toBe(404);
    }
    expect((await get(appId, "production")).status).toBe(200);
  });
});

describe("SQL in headers", () => {
  it.each(PAYLOADS.filter((payload) => !/[^\x20-\xff]/.test(payload)).map((payload) => [payload]))(
    "Authorization: ApiKey %s is a 401, and nothing changes",
    async (payload) => {
      for (const authorization of [`ApiKey ${payload}`, `ApiKey ${owner.key.split(".")[0]}.${payload}`, payload]) {
        const response = await expectNoChange(() => send("POST", "/apps", { authorization, body: { app_name: "x" } }));
        expect(response.status).toBe(401);
        await expectCleanError(response, payload);
      }
    },
  );

  it("ignores a D1 bookmark header holding SQL", async () => {
    for (const payload of [
      "' OR 1=1 --",
      "first-primary",
      "first-unconstrained",
      "00000000-00000000-00000000-00000000000000000000000000000000'--",
    ]) {
      const response = await expectNoChange(() =>
        send("GET", `/apps/${appId}/revisions/production`, { key: owner.key, headers: { "x-d1-bookmark": payload } }),
      );
      expect(response.status).toBe(200);
      expect(response.headers.get("x-d1-bookmark") ?? "").not.toContain(payload);
    }
  });
});

it("the before/after comparison sees a changed value in a table that a request never writes", async () => {
  const before = await snapshot();
  const member = "UPDATE organization_members SET role = ? WHERE organization_id = ? AND user_id = ?";
  await env.DB.prepare(member).bind("admin", team.organizationId, owner.userId).run();
  try {
    expect(changes(before, await snapshot())).toEqual({
      organization_members: {
        added: [expect.objectContaining({ organization_id: team.organizationId, role: "admin" })],
        removed: [expect.objectContaining({ organization_id: team.organizationId, role: "owner" })],
      },
    });
  } finally {
    await env.DB.prepare(member).bind("owner", team.organizationId, owner.userId).run();
  }
  expect(changes(before, await snapshot())).toEqual({});
});

it("leaves the database consistent after all of the above", async () => {
  expect(await databaseProblems()).toEqual([]);
});
