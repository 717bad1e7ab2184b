import { beforeAll, describe, expect, it } from "vitest";
import { type Account, createAppVia, type createTeam, send } from "./fixtures";
import { type Changes, databaseProblems, type ExpectedEvent, expectEvents } from "./harness";
import {
  asName,
  changesBy,
  environmentName,
  expectBookmarkSqlIgnored,
  expectCleanError,
  expectNoChange,
  expectRefused,
  expectUnauthorizedWith,
  HEADER_PAYLOADS,
  type HeaderRoute,
  injectionTarget,
  isAcceptableName,
  issueAt,
  PAYLOADS,
  quietRequestLog,
  refExpectation,
  UUID_ISSUE,
  uuidAt,
} from "./injection-payloads";
import { databaseOf } from "./pool";

/*
 * SQL injection into the endpoints beyond the original two: every path parameter, query parameter, body field and ref
 * part of GET /apps, PATCH and DELETE /apps/{app_id}, the variant reads and POST /variants/configs/*, and the headers.
 * Refused requests change nothing (every row of every table compared); accepted ones change exactly what the same
 * request with an ordinary value changes, and store the payload verbatim; no answer carries SQL or internals.
 */

let owner: Account;
let team: Awaited<ReturnType<typeof createTeam>>;
/** The owner's key in the team's project: app slugs are looked up there, where no app is named like a payload. */
let key: string;
let appId: string;
let renamedId: string;
let variantId: string;

quietRequestLog();

beforeAll(async () => {
  ({ owner, team, key, appId, variantId } = await injectionTarget());
  // In the owner's own project: renamed to each payload, it must not be found by the lookups in the team's.
  renamedId = await createAppVia(owner.key, { app_name: "to be renamed" });
});

const call = (method: string, path: string, body?: unknown) => send(method, path, { key, body });
const configs = (action: string, body: unknown) => call("POST", `/variants/configs/${action}`, body);
const enc = encodeURIComponent;
/** An event of the target app, made with the owner's key in the team's project. */
const targetEvent = (type: string, data: Record<string, unknown>): ExpectedEvent => ({
  type,
  organization_id: team.organizationId,
  app_id: appId,
  actor_user_id: owner.userId,
  actor_api_key_prefix: key.split(".")[0],
  data: { app_id: appId, app_name: "target", ...data },
});

describe("SQL in path parameters", () => {
  const routes: [string, (payload: string) => Promise<Response>, string][] = [
    ["PATCH /apps/{app_id}", (p) => call("PATCH", `/apps/${enc(p)}`, { app_name: "never renamed" }), "app_id"],
    ["DELETE /apps/{app_id}", (p) => call("DELETE", `/apps/${enc(p)}`), "app_id"],
    ["GET /apps/{app_id}/environments", (p) => call("GET", `/apps/${enc(p)}/environments`), "app_id"],
    ["GET /apps/{app_id}/variants", (p) => call("GET", `/apps/${enc(p)}/variants`), "app_id"],
    ["GET /variants/{variant_id}", (p) => call("GET", `/variants/${enc(p)}`), "variant_id"],
    ["GET /variants/{variant_id}/revisions", (p) => call("GET", `/variants/${enc(p)}/revisions`), "variant_id"],
    ["GET /variants/{variant_id}/revisions/1", (p) => call("GET", `/variants/${enc(p)}/revisions/1`), "variant_id"],
  ];

  it.each(routes)("%s: every payload as the id is refused (422 uuid_parsing), and nothing changes", async (_, request, field) => {
    for (const payload of PAYLOADS)
      await expectRefused(payload, () => request(payload), 422, issueAt(["path", field], UUID_ISSUE));
  });

  it.each(PAYLOADS.map((payload) => [JSON.stringify(payload), payload]))(
    "GET /variants/{variant_id}/revisions/{revision_number}: %s is refused (422 int_parsing), and nothing changes",
    async (_, payload) => {
      const request = () => call("GET", `/variants/${variantId}/revisions/${enc(payload)}`);
      await expectRefused(payload, request, 422, issueAt(["path", "revision_number"], { type: "int_parsing" }));
    },
  );

  it.each(routes)("%s: a real id followed by SQL is refused, and nothing changes", async (_, request, field) => {
    const id = field === "app_id" ? appId : variantId;
    for (const suffix of ["' OR 1=1 --", "' OR '1'='1", "; DROP TABLE apps", "%27"]) {
      await expectRefused(suffix, () => request(`${id}${suffix}`), 422, issueAt(["path", field], UUID_ISSUE));
    }
  });
});

describe("SQL in query parameters", () => {
  it.each(PAYLOADS.map((payload) => [JSON.stringify(payload), payload]))(
    "GET /apps?app_name=%s finds exactly the apps of that name (or 422 for a control character), and nothing changes",
    async (_, payload) => {
      const response = await expectNoChange(() => call("GET", `/apps?app_name=${enc(payload)}`));
      if (!isAcceptableName(payload)) {
        expect(response.status).toBe(422);
        expect((await expectCleanError(response, payload)).detail).toContainEqual(issueAt(["query", "app_name"]));
        return;
      }
      expect(response.status).toBe(200);
      const { results } = await databaseOf(team.projectId)
        .prepare("SELECT id FROM apps WHERE project_id = ? AND name = ? ORDER BY created_at, id")
        .bind(team.projectId, payload.normalize("NFC"))
        .all<{ id: string }>();
      expect(((await response.json()) as { app_id: string }[]).map((app) => app.app_id)).toEqual(results.map((row) => row.id));
    },
  );

  const refusals: [string, (payload: string) => Promise<Response>, (payload: string) => [number, unknown]][] = [
    ["GET /apps?workspace_id=", (p) => call("GET", `/apps?workspace_id=${enc(p)}`), uuidAt(["query", "workspace_id"])],
    [
      "GET /apps/get_variant_by_env?app_id=",
      (p) => call("GET", `/apps/get_variant_by_env?app_id=${enc(p)}&environment=production`),
      uuidAt(["query", "app_id"]),
    ],
    [
      "GET /apps/get_variant_by_env?environment=",
      (p) => call("GET", `/apps/get_variant_by_env?app_id=${appId}&environment=${enc(p)}`),
      asName(["query", "environment"], 404, "App environment not found", environmentName),
    ],
  ];
  it.each(refusals)("%s with every payload is refused, and nothing changes", async (_, request, expected) => {
    for (const payload of PAYLOADS) await expectRefused(payload, () => request(payload), ...expected(payload));
  });
});

/**
 * A request that writes when the payload is `acceptable`: then a 200, its body and the rows it changed; else a 422 at
 * `loc` that changes nothing (undefined).
 */
async function expectWritten<T = { params: unknown; url: string; variant_ref: { slug: string } }>(
  request: () => Promise<Response>,
  payload: string,
  loc: string[],
  acceptable: (payload: string) => boolean,
) {
  const { result: response, changed } = await changesBy(request);
  if (!acceptable(payload)) {
    expect(response.status).toBe(422);
    expect((await expectCleanError(response, payload)).detail).toContainEqual(issueAt(loc));
    expect(changed).toEqual({});
    return undefined;
  }
  expect(response.status).toBe(200);
  return { body: (await response.json()) as T, changed };
}

describe("SQL in a new app name (PATCH /apps/{app_id})", () => {
  it.each(PAYLOADS.map((payload) => [JSON.stringify(payload), payload]))(
    "%s is an ordinary name: stored verbatim, exactly one row changed, and found by that name alone",
    async (_, payload) => {
      const rename = () => send("PATCH", `/apps/${renamedId}`, { key: owner.key, body: { app_name: payload } });
      const made = await expectWritten<unknown>(rename, payload, ["body", "app_name"], isAcceptableName);
      if (!made) return;
      const { body, changed } = made;
      expect(body).toEqual({ app_id: renamedId, app_name: payload.normalize("NFC") });
      const [renamed] = changed.apps?.removed ?? [];
      const event = {
        type: "app.renamed",
        app_id: renamedId,
        actor_user_id: owner.userId,
        data: { app_id: renamedId, app_name: payload.normalize("NFC"), previous_app_name: renamed?.name },
      };
      expect(expectEvents(changed, event)).toEqual({
        apps: {
          added: [{ ...renamed, name: payload.normalize("NFC"), updated_at: expect.any(String) }],
          removed: [expect.objectContaining({ id: renamedId })],
        },
      });
      const found = await send("GET", `/apps?app_name=${enc(payload)}`, { key: owner.key });
      expect(((await found.json()) as { app_id: string }[]).map((app) => app.app_id)).toEqual([renamedId]);
    },
  );
});

describe("SQL in configs' refs and fields", () => {
  type Case = [string, (payload: string) => Promise<Response>, (payload: string) => [number, unknown]];
  const refused = (action: string, field: string, body: (p: string) => unknown, expected: Case[2]): Case => [
    `${action}, ${field}`,
    (p) => configs(action, body(p)),
    expected,
  ];
  /** A body naming the target app (by id) and `refs` over it; with `commit`, main's next revision. */
  const onTarget = (refs: object) => ({ application_ref: { id: appId }, ...refs });
  const commit = (refs: object) => onTarget({ params: {}, variant_ref: { slug: "main" }, ...refs });
  const lookups = (action: string): [string, string, (p: string) => unknown][] => [
    [action, "application_ref.id", (p) => ({ application_ref: { id: p } })],
    [action, "application_ref.slug", (p) => ({ application_ref: { slug: p } })],
    [action, "application_ref.version", (p) => onTarget({ application_ref: { id: appId, version: p } })],
    [action, "variant_ref.id", (p) => ({ variant_ref: { id: p } })],
    [action, "variant_ref.slug", (p) => onTarget({ variant_ref: { slug: p } })],
    [action, "variant_ref.version", (p) => onTarget({ variant_ref: { slug: "main", version: p } })],
    [action, "environment_ref.id", (p) => ({ environment_ref: { id: p } })],
    [action, "environment_ref.slug", (p) => onTarget({ environment_ref: { slug: p } })],
    [action, "environment_ref.version", (p) => onTarget({ environment_ref: { slug: "production", version: p } })],
  ];
  const cases = (
    [
      ...lookups("fetch"),
      ...lookups("fork"),
      ["add", "application_ref.id", (p) => ({ variant_ref: { slug: "new" }, application_ref: { id: p } })],
      ["add", "application_ref.slug", (p) => ({ variant_ref: { slug: "new" }, application_ref: { slug: p } })],
      [
        "add",
        "application_ref.version",
        (p) => onTarget({ variant_ref: { slug: "new" }, application_ref: { id: appId, version: p } }),
      ],
      ["commit", "application_ref.id", (p) => commit({ application_ref: { id: p } })],
      ["commit", "application_ref.slug", (p) => commit({ application_ref: { slug: p } })],
      ["commit", "application_ref.version", (p) => commit({ application_ref: { id: appId, version: p } })],
      ["commit", "variant_ref.id", (p) => commit({ application_ref: undefined, variant_ref: { id: p } })],
      ["commit", "variant_ref.slug", (p) => commit({ variant_ref: { slug: p } })],
      ["commit", "variant_ref.version", (p) => commit({ variant_ref: { slug: "main", version: p } })],
      ["commit", "environment_ref.id", (p) => commit({ environment_ref: { id: p } })],
      ["commit", "environment_ref.version", (p) => commit({ environment_ref: { slug: "production", version: p } })],
    ] as [string, string, (p: string) => unknown][]
  ).map(([action, field, body]) => refused(action, field, body, refExpectation(field)));

  it.each(cases)("%s: every payload finds nothing or is refused, and nothing changes", async (_, request, expected) => {
    for (const payload of PAYLOADS) await expectRefused(payload, () => request(payload), ...expected(payload));
  });

  /** A commit of main: one new revision, and its event naming it. */
  const addedRevision = (changed: Changes) => {
    const made = changed.app_variant_revisions?.added[0];
    const data = { config_name: "main", variant_id: variantId, revision: made?.revision, revision_id: made?.id };
    const { app_variant_revisions, ...others } = expectEvents(changed, targetEvent("config.committed", data));
    expect(others).toEqual({});
    expect(app_variant_revisions?.removed).toEqual([]);
    expect(app_variant_revisions?.added).toHaveLength(1);
    return app_variant_revisions!.added[0];
  };

  it.each(PAYLOADS.map((payload) => [JSON.stringify(payload), payload]))(
    "add: a config named %s is created under exactly that name (a second add is a 400), and nothing else changes",
    async (_, payload) => {
      const add = () => configs("add", { variant_ref: { slug: payload }, application_ref: { id: appId } });
      const made = await expectWritten(add, payload, ["body", "variant_ref", "slug"], isAcceptableName);
      if (!made) return;
      const name = payload.normalize("NFC");
      expect(made.body.variant_ref.slug).toBe(name);
      const revisionId = made.changed.app_variant_revisions?.added[0]?.id;
      const data = { config_name: name, revision: 1, revision_id: revisionId };
      const { app_variants, app_variant_revisions, ...others } = expectEvents(made.changed, targetEvent("config.added", data));
      expect(others).toEqual({});
      expect(app_variants).toEqual({ added: [expect.objectContaining({ app_id: appId, name })], removed: [] });
      expect(app_variant_revisions?.added).toEqual([expect.objectContaining({ revision: 1, params: "{}", url: "" })]);
      await expectRefused(payload, add, 400, "Config already exists.");
      const fetched = await configs("fetch", { application_ref: { id: appId }, variant_ref: { slug: payload } });
      expect(((await fetched.json()) as { variant_ref: { slug: string } }).variant_ref.slug).toBe(name);
    },
  );

  it.each(PAYLOADS.map((payload) => [JSON.stringify(payload), payload]))(
    "commit: %s as a params key and value, and in the url's query, is stored verbatim as one new revision",
    async (_, payload) => {
      const params = { [payload]: payload, nested: [payload] };
      const url = `https://svc.example/find?q=${encodeURIComponent(payload)}`;
      const request = () => configs("commit", commit({ params, url }));
      const made = await expectWritten(request, payload, ["body", "url"], () => true);
      const row = addedRevision(made!.changed);
      expect({ params: JSON.parse(row.params as string), url: row.url }).toEqual({ params, url });
      expect({ params: made!.body.params, url: made!.body.url }).toEqual({ params, url });
    },
  );

  it('commit: no payload is a url by itself (a url is "" or an absolute http(s) URL): 422 at url, nothing written', async () => {
    for (const payload of PAYLOADS) {
      await expectWritten(
        () => configs("commit", commit({ params: {}, url: payload })),
        payload,
        ["body", "url"],
        () => false,
      );
    }
  });

  // Parts commit reads but does not use: validated (a control character in a name is refused), then ignored.
  const ignored: [string, (payload: string) => object, (payload: string) => boolean][] = [
    ["environment_ref.slug", (payload) => ({ environment_ref: { slug: payload } }), environmentName],
    ["service_ref", (payload) => ({ service_ref: payload }), () => true],
  ];
  it.each(ignored)(
    "commit: every payload as %s commits as any commit does, one new revision",
    async (field, part, acceptable) => {
      for (const payload of PAYLOADS) {
        const request = () => configs("commit", commit(part(payload)));
        const made = await expectWritten(request, payload, ["body", ...field.split(".")], acceptable);
        if (made) addedRevision(made.changed);
      }
    },
  );
});

describe("SQL in headers", () => {
  const routes: HeaderRoute[] = [
    ["GET", () => "/apps"],
    ["PATCH", () => `/apps/${renamedId}`, () => ({ app_name: "x" })],
    ["DELETE", () => `/apps/${renamedId}`],
    ["GET", () => `/apps/${appId}/environments`],
    ["GET", () => `/apps/${appId}/variants`],
    ["GET", () => `/apps/get_variant_by_env?app_id=${appId}&environment=production`],
    ["GET", () => `/variants/${variantId}`],
    ["GET", () => `/variants/${variantId}/revisions`],
    ["GET", () => `/variants/${variantId}/revisions/1`],
    ["POST", () => "/variants/configs/add", () => ({ variant_ref: { slug: "x" }, application_ref: { id: appId } })],
    [
      "POST",
      () => "/variants/configs/commit",
      () => ({ application_ref: { id: appId }, variant_ref: { slug: "main" }, params: {} }),
    ],
    ["POST", () => "/variants/configs/fetch", () => ({ application_ref: { id: appId } })],
    ["POST", () => "/variants/configs/fork", () => ({ application_ref: { id: appId } })],
  ];

  it.each(HEADER_PAYLOADS.map((payload) => [payload]))(
    "Authorization with %s is a 401 on every route, and nothing changes",
    (payload) => expectUnauthorizedWith(payload, key, routes),
  );

  it("ignores a D1 bookmark header holding SQL on every read", () => expectBookmarkSqlIgnored(key, routes));
});

it("leaves the database consistent after all of the above", async () => {
  expect(await databaseProblems()).toEqual([]);
});
