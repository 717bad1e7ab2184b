import { beforeAll, describe, expect, it } from "vitest";
import { type Account, createAccount, createAppVia, createTeam, DEFAULT_ENVIRONMENTS, deploy, send } from "./fixtures";
import { changes, databaseProblems, expectEvents, snapshot } from "./harness";
import {
  changesBy,
  expectCleanError,
  expectNoChange,
  HEADER_PAYLOADS,
  isAcceptableName,
  PAYLOADS,
  quietRequestLog,
} from "./injection-payloads";
import { databaseOf } from "./pool";

/*
 * SQL injection, from the outside: every body field, both path parameters and the headers, against the real D1.
 * Nothing may change beyond what the same request with an ordinary value would change (every row of every table
 * compared), and no answer may carry SQL or internals. The inside (SQL text in src/ is built from constants only)
 * is the static check of test/static/sql.test.ts. These are the two original endpoints; the others:
 * injection-endpoints.test.ts.
 */

let owner: Account;
let outsider: Account;
let team: Awaited<ReturnType<typeof createTeam>>;
let appId: string;
let otherAppId: string;

quietRequestLog();

beforeAll(async () => {
  owner = await createAccount();
  outsider = await createAccount();
  team = await createTeam(owner);
  appId = await createAppVia(owner.key, { app_name: "target" });
  otherAppId = await createAppVia(outsider.key, { app_name: "someone else's" });
  await deploy(appId, "production", "main", owner);
});

const post = (body: unknown) => send("POST", "/apps", { key: owner.key, body });
const get = (rawAppId: string, rawEnvironment: string) =>
  send("GET", `/apps/${encodeURIComponent(rawAppId)}/revisions/${encodeURIComponent(rawEnvironment)}`, { key: owner.key });

describe("SQL in app_name", () => {
  it.each(PAYLOADS.map((payload) => [JSON.stringify(payload), payload]))(
    "%s is an ordinary name: stored and read back verbatim, and nothing else changes",
    async (_, payload) => {
      const { result: response, changed } = await changesBy(() => post({ app_name: payload }));
      if (!isAcceptableName(payload)) {
        expect(response.status).toBe(422);
        const { detail } = await expectCleanError(response, payload);
        expect(detail).toEqual([
          {
            loc: ["body", "app_name"],
            msg: "Value error, app_name must not contain control characters or line breaks",
            type: "value_error",
          },
        ]);
        expect(changed).toEqual({});
        return;
      }
      expect(response.status).toBe(200);
      const created = (await response.json()) as { app_id: string; app_name: string };
      expect(created.app_name).toBe(payload);

      // Exactly what a create changes: one app row (the payload, verbatim), its three environments, its event.
      const { apps, environments, ...others } = expectEvents(changed, {
        type: "app.created",
        organization_id: owner.organizationId,
        project_id: owner.projectId,
        app_id: created.app_id,
        actor_user_id: owner.userId,
        data: { app_id: created.app_id, app_name: payload },
      });
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
      const { results } = await databaseOf(owner.projectId)
        .prepare("SELECT name FROM apps WHERE project_id = ? AND name = ?")
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
        expect(response.status).toBe(/[\p{Cc}\u2028\u2029]/u.test(payload) ? 422 : 404);
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
  it.each(HEADER_PAYLOADS.map((payload) => [payload]))(
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
  const project = "UPDATE projects SET name = ? WHERE id = ?";
  await databaseOf(team.projectId).prepare(project).bind("Renamed", team.projectId).run();
  try {
    expect(changes(before, await snapshot())).toEqual({
      projects: {
        added: [expect.objectContaining({ id: team.projectId, name: "Renamed" })],
        removed: [expect.objectContaining({ id: team.projectId, name: "Default" })],
      },
    });
  } finally {
    await databaseOf(team.projectId).prepare(project).bind("Default", team.projectId).run();
  }
  expect(changes(before, await snapshot())).toEqual({});
});

it("leaves the database consistent after all of the above", async () => {
  expect(await databaseProblems()).toEqual([]);
});
