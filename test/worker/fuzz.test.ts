import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createAppVia, DEFAULT_ENVIRONMENTS, deploy, getRevisions, send } from "./fixtures";
import { CreatedBody } from "./fuzz-model";
import {
  appBodyShapes,
  asObject,
  authSpec,
  bodySpec,
  certainParameters,
  contentType,
  createWorld,
  environmentNameIsValid,
  expectDocumentedResponse,
  expectSameText,
  extraHeaders,
  fuzz,
  hasIssueAt,
  headersOf,
  type Issue,
  LONE_SURROGATE,
  MAX_BODY_BYTES,
  mayWriteIn,
  newNameIsValid,
  own,
  type Replay,
  RFC_UUID,
  RUNS,
  readJsonBody,
  routeMustTake,
  segment,
  TIMEOUT,
  TIMESTAMP,
  UUID_SHAPED,
  Uuid,
  type World,
  worldIds,
} from "./fuzz-support";
import { databaseProblems, declaredForeignKeys, describeForeignKey, FOREIGN_KEYS, rowCounts, TABLES, Tracker } from "./harness";
import { databaseOf, rowsOnShards, shards } from "./pool";

/*
 * Generated requests to the two original endpoints, through the Worker's own fetch handler, against the real local D1
 * (the other endpoints: fuzz-apps, fuzz-variants, fuzz-configs and fuzz-configs-lookups.test.ts). Seeds, REPLAY and
 * the runner: fuzz-support.ts.
 */
const REPLAY: Replay = {};

const RecordBody = z.strictObject({
  name: z.string(),
  app_id: Uuid,
  project_id: Uuid,
  deployed_app_variant_id: Uuid.nullable(),
  deployed_variant_name: z.string().nullable(),
  deployed_app_variant_revision_id: Uuid.nullable(),
  deployed_variant_archived: z.boolean(),
  revision: z.number().int().min(0).nullable(),
  revisions: z.array(
    z.strictObject({
      id: Uuid,
      revision: z.number().int().min(1),
      modified_by: z.string(),
      deployed_app_variant_revision: Uuid.nullable(),
      deployment: Uuid.nullable(),
      created_at: z.string().regex(TIMESTAMP),
    }),
  ),
  organization_id: Uuid.nullable().optional(),
  workspace_id: Uuid.nullable().optional(),
});
interface KnownApp {
  id: string;
  organizationId: string;
  /** The record of each environment, as a member reads it (the fuzzed GETs must answer exactly this). */
  records: Map<string, unknown>;
}

let world: World;
let owner: World["owner"];
let editor: World["editor"];
let viewer: World["viewer"];
let outsider: World["outsider"];
let team: World["team"];
let apps: KnownApp[];
/** Every id a body field may name: the world's organizations, workspaces, projects, and the apps. */
let ids: string[];

beforeAll(async () => {
  vi.spyOn(console, "log").mockImplementation(() => {}); // one request log line per request: thousands
  world = await createWorld();
  ({ owner, editor, viewer, outsider, team } = world);
  const ownApp = await createAppVia(owner.key, { app_name: "fuzz-own" });
  const teamApp = await createAppVia(owner.key, { app_name: "fuzz-team", organization_id: team.organizationId });
  const otherApp = await createAppVia(outsider.key, { app_name: "fuzz-other" });
  await deploy(ownApp, "development", "main", owner);
  for (const variant of ["main", "main", "canary"]) await deploy(teamApp, "production", variant, editor);
  apps = [];
  for (const [id, organizationId, reader] of [
    [ownApp, owner.organizationId, owner],
    [teamApp, team.organizationId, viewer],
    [otherApp, outsider.organizationId, outsider],
  ] as const) {
    const records = new Map<string, unknown>();
    for (const name of DEFAULT_ENVIRONMENTS) {
      const response = await getRevisions(reader.key, id, name);
      expect(response.status).toBe(200);
      records.set(name, await response.json());
    }
    apps.push({ id, organizationId, records });
  }
  ids = [...worldIds(world), ...apps.map((app) => app.id)];
  expect(await databaseProblems()).toEqual([]);
});

afterAll(() => {
  vi.restoreAllMocks();
});

describe("fuzzing POST /apps", () => {
  it(
    `answers every generated request (${RUNS}) as documented, and creates exactly one app per 200`,
    async () => {
      const appsBefore = (await rowCounts()).apps;
      let created = 0;
      // The names taken in each project (NFC, as stored): those in the database now, then every name a 200 creates.
      const taken = new Map<string, Set<string>>();
      const take = (projectId: string, name: string) => taken.set(projectId, (taken.get(projectId) ?? new Set()).add(name));
      const existing = await rowsOnShards<{ project_id: string; name: string }>("SELECT project_id, name FROM apps");
      for (const row of existing) take(row.project_id, row.name);

      const input = fc.record({
        auth: authSpec(world),
        type: contentType,
        spec: bodySpec(appBodyShapes(ids)),
        slash: fc.boolean(),
        extra: extraHeaders,
      });
      await fuzz(
        "POST /apps",
        REPLAY,
        input,
        async ({ auth, type: [type, isJsonType], spec, slash, extra }) => {
          const response = await send("POST", slash ? "/apps/" : "/apps", {
            rawBody: spec.body,
            headers: headersOf(auth, extra, type),
          });
          const body = await expectDocumentedResponse(response, CreatedBody);
          expect([404, 405], "POST /apps is always routed").not.toContain(response.status);

          // What the server reads: the bytes sent, decoded as UTF-8.
          const { bytes, text, parsed, utf8 } = readJsonBody(spec.body, isJsonType, MAX_BODY_BYTES);

          // The target the body names: the first of project_id, workspace_id, organization_id given (docs/http-contract.md, "Where `POST /apps` creates the app").
          const fields = asObject(parsed?.value) ?? {};
          const given = ["project_id", "workspace_id", "organization_id"].filter((field) => own(fields, field) != null);
          const target =
            given.length > 0 && typeof fields[given[0]] === "string" ? (fields[given[0]] as string).toLowerCase() : undefined;
          const named = target !== undefined ? world.targets.get(`${given[0]}:${target}`) : undefined;
          const expectedProject = given.length === 0 ? auth.holder?.keyProjectId : named?.projectId;
          // Whether the name was taken in that project before this request: a valid create there is then a 409.
          const appName = own(fields, "app_name");
          const nameTaken =
            expectedProject !== undefined &&
            typeof appName === "string" &&
            (taken.get(expectedProject)?.has(appName.normalize("NFC")) ?? false);

          if (response.status === 200) {
            // Created: the name is the one sent (NFC), and the app is in the database under it.
            created += 1;
            const { app_id, app_name } = body as z.infer<typeof CreatedBody>;
            const sent = (parsed?.value as { app_name?: unknown } | undefined)?.app_name;
            expect(typeof sent).toBe("string");
            expectSameText(app_name, (sent as string).normalize("NFC"));
            const row = await databaseOf(app_id)
              .prepare("SELECT name, project_id FROM apps WHERE id = ?")
              .bind(app_id)
              .first<{ name: string; project_id: string }>();
            expect(row).not.toBeNull();
            expect(row?.project_id).toBe(expectedProject);
            // Names that are not well-formed UTF-16 are refused (see "cases found by fuzzing"); the rest are stored verbatim.
            expect(LONE_SURROGATE.test(app_name)).toBe(false);
            expectSameText(row?.name, app_name);
            take(row!.project_id, app_name);
          }

          // The key is checked before anything else.
          if (!auth.holder) {
            expect(response.status).toBe(401);
            return response.status;
          }
          expect(response.status).not.toBe(401);
          if (bytes.length > MAX_BODY_BYTES) {
            expect(response.status).toBe(413);
            return response.status;
          }
          expect(response.status).not.toBe(413);
          if (isJsonType === false) expect(response.status).toBe(415);
          if (isJsonType !== true) return response.status;
          expect(response.status).not.toBe(415);

          const issues = response.status === 422 ? (body as { detail: Issue[] }).detail : [];
          if (!utf8) {
            expect(body).toEqual({
              detail: [{ loc: ["body"], msg: "JSON decode error: the body is not valid UTF-8", type: "json_invalid" }],
            });
          } else if (text.trim() === "") {
            expect(body).toEqual({ detail: [{ loc: ["body"], msg: "Field required", type: "missing" }] });
          } else if (!parsed) {
            expect(body).toEqual({ detail: [{ loc: ["body"], msg: "JSON decode error", type: "json_invalid" }] });
          } else if (!asObject(parsed.value)) {
            expect(response.status).toBe(422);
            expect(hasIssueAt(issues, "body")).toBe(true);
          } else {
            const validName = newNameIsValid(appName);
            if (validName === false) {
              expect(response.status).toBe(422);
              expect(hasIssueAt(issues, "body", "app_name")).toBe(true);
            }
            for (const field of ["project_id", "workspace_id", "organization_id"]) {
              const value = own(fields, field);
              if (value !== undefined && value !== null && (typeof value !== "string" || !UUID_SHAPED.test(value))) {
                expect(response.status).toBe(422);
                expect(hasIssueAt(issues, "body", field)).toBe(true);
              }
            }
            // A valid name into the key's project, or into one named target: the caller's role there decides, then
            // whether the name is taken.
            const createdOrTaken = nameTaken ? 409 : 200;
            if (validName === true && given.length === 0) {
              const keyOrganization = world.targets.get(`project_id:${auth.holder.keyProjectId}`)!.organizationId;
              expect(response.status).toBe(mayWriteIn(auth.holder, keyOrganization) ? createdOrTaken : 403);
            }
            if (validName === true && given.length === 1 && target !== undefined && RFC_UUID.test(target)) {
              expect(response.status).toBe(named && mayWriteIn(auth.holder, named.organizationId) ? createdOrTaken : 403);
            }
          }
          return response.status;
        },
        [200, 401, 403, 409, 413, 415, 422],
      );
      expect((await rowCounts()).apps - appsBefore).toBe(created);
      expect(await databaseProblems()).toEqual([]);
    },
    TIMEOUT,
  );
});

const ROUTE = "/apps/:app_id/revisions/:environment_name";

describe("fuzzing GET /apps/:app_id/revisions/:environment_name", () => {
  it(
    `answers every generated request (${RUNS}) as documented, shows an app only to members, and writes nothing`,
    async () => {
      const tracker = await Tracker.start();
      const appIds = fc.oneof(
        { arbitrary: fc.constantFrom(...apps.map((app) => app.id)), weight: 6 },
        { arbitrary: fc.constantFrom(...apps.map((app) => app.id.toUpperCase())), weight: 1 },
        { arbitrary: fc.uuid(), weight: 1 },
        { arbitrary: fc.constantFrom(...apps.map((app) => `${app.id}${"0".repeat(5000)}`)), weight: 1 },
      );
      const environmentNames = fc.oneof(
        { arbitrary: fc.constantFrom(...DEFAULT_ENVIRONMENTS), weight: 6 },
        {
          arbitrary: fc.constantFrom(
            "Development",
            "PRODUCTION",
            "staging ",
            " staging",
            "qa",
            "a".repeat(255),
            "a".repeat(256),
            "p".repeat(10_000),
          ),
          weight: 1,
        },
      );

      const input = fc.record({
        auth: authSpec(world),
        app: segment(appIds),
        environment: segment(environmentNames),
        slash: fc.boolean(),
        extra: extraHeaders,
      });
      await fuzz(
        "GET /apps/:app_id/revisions/:environment_name",
        REPLAY,
        input,
        async ({ auth, app, environment, slash, extra }) => {
          const path = `/apps/${app.raw}/revisions/${environment.raw}${slash ? "/" : ""}`;
          const response = await send("GET", path, { headers: headersOf(auth, extra) });
          // A path the URL parser normalises into another route's (a dot segment) is answered by that route.
          const body = await expectDocumentedResponse(response, routeMustTake(path, ROUTE) ? RecordBody : undefined);
          expect([403, 409, 413, 415]).not.toContain(response.status);

          if (response.status === 200 && routeMustTake(path, ROUTE)) {
            // Only an existing environment of an app the caller's organization owns, exactly as a member reads it.
            const record = body as z.infer<typeof RecordBody>;
            const known = apps.find((candidate) => candidate.id === record.app_id);
            expect(known, `200 for an unknown app ${record.app_id}`).toBeDefined();
            expect(auth.holder?.roles.has(known!.organizationId), "200 for an app the caller cannot see").toBe(true);
            expect(body).toEqual(known!.records.get(record.name));
          }
          // A path the route does not take (no key needed then): only one the URL parser leaves of another shape, or a
          // parameter that is empty, a dot segment or holds a "/".
          if (response.status === 405 || (response.status === 404 && (body as { detail: string }).detail === "Not Found")) {
            expect(routeMustTake(path, ROUTE), `${path} was not routed`).toBe(false);
            return response.status;
          }
          if (!auth.holder) {
            expect(response.status).toBe(401);
            return response.status;
          }
          expect(response.status).not.toBe(401);

          // Where the encoding makes the parameters certain, the answer is certain too.
          const certain = certainParameters(app, environment);
          if (!certain) return response.status;
          const [appId, name] = certain;
          const issues = response.status === 422 ? (body as { detail: Issue[] }).detail : [];
          if (!UUID_SHAPED.test(appId)) expect(hasIssueAt(issues, "path", "app_id")).toBe(true);
          const validName = environmentNameIsValid(name);
          if (validName === false) expect(hasIssueAt(issues, "path", "environment_name")).toBe(true);
          if (RFC_UUID.test(appId) && validName === true) {
            const known = apps.find((candidate) => candidate.id === appId.toLowerCase());
            const visible = known !== undefined && auth.holder.roles.has(known.organizationId);
            if (visible && (DEFAULT_ENVIRONMENTS as readonly string[]).includes(name)) {
              expect(response.status).toBe(200);
              expect(body).toEqual(known.records.get(name));
            } else {
              expect(body).toEqual({ detail: "App environment not found" });
            }
          }
          return response.status;
        },
        [200, 401, 404, 422],
      );
      expect(await tracker.changes(), "every row of every table as it was").toEqual({});
      expect(await databaseProblems()).toEqual([]);
    },
    TIMEOUT,
  );
});

describe("cases found by fuzzing", () => {
  const post = (body: string) =>
    send("POST", "/apps", { key: owner.key, rawBody: body, headers: { "Content-Type": "application/json" } });
  const get = (appId: string, environment: string) => send("GET", `/apps/${appId}/revisions/${environment}`, { key: owner.key });

  it("counts lengths in code points, as pydantic does: 255 emoji pass, 256 do not", async () => {
    expect((await post(JSON.stringify({ app_name: "\u{1f600}".repeat(256) }))).status).toBe(422);
    expect((await post(JSON.stringify({ app_name: "\u{1f600}".repeat(255) }))).status).toBe(200);
    expect((await get(apps[0].id, encodeURIComponent("\u{1f600}".repeat(256)))).status).toBe(422);
  });

  // Found while writing the fuzz oracle: a JSON escape can carry a lone surrogate ("\ud800"), which D1 would store
  // as bytes that are not UTF-8 (read back as U+FFFD), so the stored name would not be the one the client was told.
  it("refuses an app name with a lone surrogate with 422", async () => {
    const response = await post('{"app_name":"lone \\ud800 surrogate"}');
    expect(response.status).toBe(422);
    const { detail } = (await response.json()) as { detail: Issue[] };
    expect(hasIssueAt(detail, "body", "app_name")).toBe(true);
  });

  it("decodes a path parameter exactly once: %64evelopment is development, %2564evelopment is not", async () => {
    expect((await get(apps[0].id, "%64evelopment")).status).toBe(200);
    expect(await (await get(apps[0].id, "%2564evelopment")).json()).toEqual({ detail: "App environment not found" });
    expect(await (await get(apps[0].id, "development%2F")).json()).toEqual({ detail: "App environment not found" });
  });

  it("reads a BOM-prefixed JSON body as JSON (the UTF-8 decoder drops the BOM)", async () => {
    const response = await post('\ufeff{"app_name":"with-bom"}');
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ app_name: "with-bom" });
  });

  it("answers 422, not 500, for JSON nested 8,000 deep in a field, and ignores __proto__ keys", async () => {
    const deep = "[".repeat(8000) + "]".repeat(8000);
    const response = await post(`{"__proto__":{"app_name":"polluted"},"app_name":${deep}}`);
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({
      detail: [{ loc: ["body", "app_name"], msg: "Input should be a valid string", type: "string_type" }],
    });
    const proto = await post('{"__proto__":{"app_name":"polluted"}}');
    expect(await proto.json()).toEqual({ detail: [{ loc: ["body", "app_name"], msg: "Field required", type: "missing" }] });
  });

  it("takes the last of duplicate keys, as JSON.parse does", async () => {
    const response = await post('{"app_name":"first-of-two","app_name":"last-of-two"}');
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ app_name: "last-of-two" });
  });
});

describe("the fuzzing harness itself", () => {
  it("prints the seed and path of a failure, and replays the same counterexample from them", async () => {
    const failing = fc.asyncProperty(fc.integer(), async (n) => n < 1000);
    const error = await fc.assert(failing).then(
      () => null,
      (caught: Error) => caught,
    );
    const [, seed, path] = /seed: (-?\d+), path: "([^"]+)"/.exec(error?.message ?? "") ?? [];
    expect(seed, error?.message).toBeDefined();
    const replayed = await fc.check(failing, { seed: Number(seed), path });
    expect(replayed.failed).toBe(true);
    expect(replayed.counterexample).toEqual([1000]);
  });

  it("checks every table and every foreign key the migrations declare", async () => {
    for (const db of shards()) {
      const { results } = await db
        .prepare(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' AND name <> 'd1_migrations' ORDER BY name",
        )
        .all<{ name: string }>();
      expect(results.map((row) => row.name)).toEqual([...TABLES].sort());
    }
    expect(FOREIGN_KEYS.map(describeForeignKey).sort()).toEqual(declaredForeignKeys());
  });

  it("sees an app without its environments and an environment whose counter disagrees with its revisions", async () => {
    // D1 itself refuses orphans (the foreign keys are enforced), so the LEFT JOIN checks are a second line.
    await expect(
      databaseOf(owner.organizationId)
        .prepare("INSERT INTO apps (id, project_id, name, created_by) VALUES ('orphan', ?, 'orphan', 'no such user')")
        .bind(owner.projectId)
        .run(),
    ).rejects.toThrow(/FOREIGN KEY constraint failed/);
    expect(await databaseProblems()).toEqual([]);
    const appId = crypto.randomUUID();
    await databaseOf(owner.organizationId)
      .prepare("INSERT INTO apps (id, project_id, name, created_by) VALUES (?, ?, 'no environments', ?)")
      .bind(appId, owner.projectId, owner.userId)
      .run();
    await databaseOf(owner.organizationId)
      .prepare("UPDATE environments SET revision = revision + 1 WHERE app_id = ? AND name = 'staging'")
      .bind(apps[0].id)
      .run();
    try {
      const problems = await databaseProblems();
      expect(problems).toHaveLength(2);
      expect(problems.find((problem) => problem.startsWith("app without exactly development,production,staging"))).toContain(
        appId,
      );
      expect(problems.find((problem) => problem.startsWith("environment revisions not 1..revision"))).toContain('"revision":1');
    } finally {
      await databaseOf(owner.organizationId).prepare("DELETE FROM apps WHERE id = ?").bind(appId).run();
      await databaseOf(owner.organizationId)
        .prepare("UPDATE environments SET revision = revision - 1 WHERE app_id = ? AND name = 'staging'")
        .bind(apps[0].id)
        .run();
    }
    expect(await databaseProblems()).toEqual([]);
  });
});
