import { beforeAll, describe, expect, it } from "vitest";
import { apps, simpleApplications } from "../client";
import {
  A_NEW_ID,
  A_TIME,
  type Account,
  createAccount,
  createAppVia,
  createTeamWithKeys,
  expectJson,
  FORBIDDEN,
  send,
  slugTakenDetail,
} from "../fixtures";
import { eventOfApp } from "../harness";
import { changesBy, expectNoChange, expectRefusedWith, expectWrite, issueAt } from "../injection-payloads";

/*
 * Today's SDK's AppManager against the service (docs/CURRENT-SDK-API.md, calls 1 to 5), replayed call by call as the
 * SDK sends them (sdks/python/agenta/sdk/managers/apps.py of the platform's release 0.113), every answer compared whole.
 */

interface SimpleApplication {
  id: string;
  slug: string;
  name: string;
  created_at: string;
  updated_at: string;
  deleted_at?: string;
  created_by_id: string;
  flags: object;
  variant_id?: string;
  revision_id?: string;
}
type One = { count: 1; application: SimpleApplication };
type Many = { count: number; applications: SimpleApplication[] };

/** What AppManager.create sends for `slug` (its default app type sends no flags). */
const createBody = (slug: string, flags?: object) => ({ application: { slug, name: slug, ...(flags && { flags }) } });
/** What AppManager.update sends. */
const editBody = (id: string, slug: string) => ({ application: { slug, name: slug, id } });

let owner: Account;
beforeAll(async () => {
  owner = await createAccount();
});

describe("AppManager, call by call", () => {
  it("create (1), list (2), update (4), delete (5): every answer whole, one event per change", async () => {
    const created = await changesBy(() => simpleApplications.create(owner, createBody("sdk-app")));
    const app = (await expectJson<One>(created.result)).application;
    const made = {
      id: A_NEW_ID,
      slug: "sdk-app",
      name: "sdk-app",
      created_at: A_TIME,
      updated_at: app.created_at,
      created_by_id: owner.userId,
      flags: {},
    };
    expect(app).toEqual(made);
    expectWrite(
      created.changed,
      { apps: [1, 0], environments: [3, 0] },
      eventOfApp("app.created", owner, app.id, { app_id: app.id, app_name: "sdk-app" }),
    );

    // list(): every app of the key's project, oldest first; the legacy list shows the same app.
    expect(await expectJson<Many>(await simpleApplications.query(owner, {}))).toEqual({ count: 1, applications: [app] });
    expect(await expectJson(await apps.list(owner))).toEqual([
      { app_id: app.id, app_name: "sdk-app", updated_at: app.updated_at },
    ]);

    const renamed = await changesBy(() => simpleApplications.edit(owner, app.id, editBody(app.id, "sdk-app-2")));
    const edited = (await expectJson<One>(renamed.result)).application;
    expect(edited).toEqual({ ...app, slug: "sdk-app-2", name: "sdk-app-2", updated_at: A_TIME });
    expect(edited.updated_at > app.updated_at).toBe(true);
    expectWrite(
      renamed.changed,
      { apps: [1, 1] },
      eventOfApp("app.renamed", owner, app.id, { app_id: app.id, app_name: "sdk-app-2", previous_app_name: "sdk-app" }),
    );
    // The same name again changes nothing: no event, not even updated_at.
    const same = await expectNoChange(() => simpleApplications.edit(owner, app.id, editBody(app.id, "sdk-app-2")));
    expect(await expectJson(same)).toEqual({ count: 1, application: edited });

    // delete(): archive; any 2xx will do for the SDK, and the app is answered whole.
    const archived = await changesBy(() => simpleApplications.archive(owner, app.id));
    expect(await expectJson(archived.result)).toEqual({ count: 1, application: { ...edited, deleted_at: A_TIME } });
    expectWrite(
      archived.changed,
      { apps: [1, 1] },
      eventOfApp("app.archived", owner, app.id, { app_id: app.id, app_name: "sdk-app-2" }),
    );
  });
});

describe("archived apps", () => {
  let appId: string;
  let archivedApp: SimpleApplication;
  beforeAll(async () => {
    appId = (await expectJson<One>(await simpleApplications.create(owner, createBody("shelved")))).application.id;
    archivedApp = (await expectJson<One>(await simpleApplications.archive(owner, appId))).application;
  });

  it("leave lists and lookups by name in both APIs; their id still resolves", async () => {
    expect(archivedApp.deleted_at).toEqual(A_TIME);
    const listed = await expectJson<Many>(await simpleApplications.query(owner, {}));
    expect(listed.applications.map(({ id }) => id)).not.toContain(appId);
    expect(await expectJson(await simpleApplications.query(owner, { application: { slug: "shelved" } }))).toEqual({
      count: 0,
      applications: [],
    });
    expect(
      await expectJson(await simpleApplications.query(owner, { application: { slug: "shelved" }, include_archived: true })),
    ).toEqual({ count: 1, applications: [archivedApp] });
    expect(await expectJson(await simpleApplications.get(owner, appId))).toEqual({ count: 1, application: archivedApp });
    // The legacy API: not in GET /apps (nor by name), nor found by name by a config fetch; by id it still is.
    expect(await expectJson(await apps.list(owner, { app_name: "shelved" }))).toEqual([]);
    const byName = await send("POST", "/variants/configs/fetch", {
      key: owner.key,
      body: { application_ref: { slug: "shelved" }, environment_ref: { slug: "production" } },
    });
    expect(byName.status).toBe(404);
    expect((await apps.environments(owner, appId)).status).toBe(200);
  });

  it("keep their name: a create of it is a 409 that says the app is archived; archiving again changes nothing", async () => {
    const taken = await expectNoChange(() => simpleApplications.create(owner, createBody("shelved")));
    expect(taken.status).toBe(409);
    expect(await taken.json()).toEqual({ detail: slugTakenDetail("shelved", true) });
    const legacy = await expectNoChange(() => send("POST", "/apps", { key: owner.key, body: { app_name: "shelved" } }));
    expect(legacy.status).toBe(409);
    const again = await expectNoChange(() => simpleApplications.archive(owner, appId));
    expect(await expectJson(again)).toEqual({ count: 1, application: archivedApp });
  });

  it("come back when unarchived, with their event; unarchiving again changes nothing", async () => {
    const unarchived = await changesBy(() => simpleApplications.unarchive(owner, appId));
    const { deleted_at: _, ...live } = archivedApp;
    expect(await expectJson(unarchived.result)).toEqual({ count: 1, application: live });
    expectWrite(
      unarchived.changed,
      { apps: [1, 1] },
      eventOfApp("app.unarchived", owner, appId, { app_id: appId, app_name: "shelved" }),
    );
    expect(await expectJson(await simpleApplications.query(owner, { application: { slug: "shelved" } }))).toEqual({
      count: 1,
      applications: [live],
    });
    expect(await expectJson(await expectNoChange(() => simpleApplications.unarchive(owner, appId)))).toEqual({
      count: 1,
      application: live,
    });
  });
});

describe("create", () => {
  it("a live app's name: 409 in the platform's shape, nothing written", async () => {
    await createAppVia(owner.key, { app_name: "taken-live" });
    const taken = await expectNoChange(() => simpleApplications.create(owner, createBody("taken-live")));
    expect(taken.status).toBe(409);
    expect(await taken.json()).toEqual({ detail: slugTakenDetail("taken-live", false) });
  });

  it("checks the platform's slug rule and the legacy name rules; name, if given, must be the slug", async () => {
    for (const slug of ["with space", ".dot-first", "ünïcode", "a/b", "", "x".repeat(256), "tab\there"]) {
      await expectRefusedWith(
        () => simpleApplications.create(owner, createBody(slug)),
        422,
        issueAt(["body", "application", "slug"]),
      );
    }
    await expectRefusedWith(
      () => simpleApplications.create(owner, { application: { slug: "a-slug", name: "Another Name" } }),
      422,
      issueAt(["body", "application", "name"]),
    );
    for (const slug of ["_under", "-dash", "v1.2_b-3", "A"]) {
      expect((await simpleApplications.create(owner, createBody(slug))).status, slug).toBe(200);
    }
  });

  it("a wrong wrapper key is a 422 naming the expected one; so is any other unknown key", async () => {
    const wrong = await expectNoChange(() => simpleApplications.create(owner, { app: { slug: "x", name: "x" } }));
    expect(wrong.status).toBe(422);
    expect(await wrong.json()).toEqual({
      detail: [
        { loc: ["body", "application"], msg: "Field required", type: "missing" },
        { loc: ["body"], msg: 'Value error, unknown key "app": the keys here are "application"', type: "value_error" },
      ],
    });
    await expectRefusedWith(
      () => simpleApplications.create(owner, { application: { slug: "x", description: "not kept" } }),
      422,
      {
        loc: ["body", "application"],
        msg: 'Value error, unknown key "description": the keys here are "slug", "name", "flags"',
        type: "value_error",
      },
    );
  });

  it("takes the SDK's flags and answers flags {} (this service has no app types)", async () => {
    const chat = await expectJson<One>(await simpleApplications.create(owner, createBody("chatty", { is_chat: true })));
    expect(chat.application.flags).toEqual({});
    await expectRefusedWith(
      () => simpleApplications.create(owner, createBody("flagged", { is_chat: "yes" })),
      422,
      issueAt(["body", "application", "flags", "is_chat"]),
    );
  });

  it("replays a retry with its Idempotency-Key; the key on another body is a 422", async () => {
    const headers = { "Idempotency-Key": "create-once" };
    const first = await simpleApplications.create(owner, createBody("once"), { headers });
    const app = await expectJson<One>(first);
    const retry = await expectNoChange(() => simpleApplications.create(owner, createBody("once"), { headers }));
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await expectJson(retry)).toEqual(app);
    const other = await expectNoChange(() => simpleApplications.create(owner, createBody("twice"), { headers }));
    expect(other.status).toBe(422);
  });
});

describe("paths", () => {
  it("with and without the trailing slash, and under BASE_PATH=/api, never a redirect", async () => {
    const bindings = { BASE_PATH: "/api" };
    const forms: [string, Record<string, string>][] = [
      ["/simple/applications/", {}],
      ["/simple/applications", {}],
      ["/api/simple/applications/", bindings],
      ["/api/simple/applications", bindings],
    ];
    for (const [i, [path, base]] of forms.entries()) {
      const created = await send("POST", path, { key: owner.key, body: createBody(`pathed-${i}`), bindings: base });
      const { application } = await expectJson<One>(created);
      const prefix = path.startsWith("/api") ? "/api" : "";
      for (const suffix of ["", "/"]) {
        const read = await send("GET", `${prefix}/simple/applications/${application.id}${suffix}`, {
          key: owner.key,
          bindings: base,
        });
        expect(await expectJson(read)).toEqual({ count: 1, application });
        const query = await send("POST", `${prefix}/simple/applications/query${suffix}`, {
          key: owner.key,
          body: { application_refs: [{ id: application.id }] },
          bindings: base,
        });
        expect(await expectJson(query)).toEqual({ count: 1, applications: [application] });
      }
    }
    expect((await send("POST", "/simple/applications/", { key: owner.key, body: createBody("unbased"), bindings })).status).toBe(
      404,
    );
  });
});

describe("access", () => {
  let outsider: Account;
  let viewerKey: string;
  let readOnlyKey: string;
  let teamAppId: string;
  let teamApp: SimpleApplication;
  const absent = "01900000-0000-7000-8000-000000000000";
  beforeAll(async () => {
    const keys = await createTeamWithKeys(owner);
    ({ outsider, viewerKey, readOnlyKey } = keys);
    teamApp = (await expectJson<One>(await simpleApplications.create({ key: keys.ownerKey }, createBody("team-app"))))
      .application;
    teamAppId = teamApp.id;
  });

  it("another organization's app answers exactly as one that does not exist", async () => {
    for (const id of [teamAppId, absent]) {
      const read = await expectNoChange(() => simpleApplications.get(outsider, id));
      expect(await expectJson(read)).toEqual({ count: 0 });
      for (const write of [
        () => simpleApplications.edit(outsider, id, editBody(id, "stolen")),
        () => simpleApplications.archive(outsider, id),
        () => simpleApplications.unarchive(outsider, id),
      ]) {
        const response = await expectNoChange(write);
        expect(response.status, id).toBe(404);
        expect(await response.json()).toEqual({ detail: "App not found" });
      }
    }
    const byRefs = await simpleApplications.query(outsider, { application_refs: [{ id: teamAppId }, { slug: "team-app" }] });
    expect(await expectJson(byRefs)).toEqual({ count: 0, applications: [] });
  });

  it("a viewer and a read-only key read, and every write of theirs is a 403 that writes nothing", async () => {
    for (const key of [viewerKey, readOnlyKey]) {
      expect(await expectJson(await simpleApplications.get({ key }, teamAppId))).toEqual({ count: 1, application: teamApp });
      expect(await expectJson(await simpleApplications.query({ key }, {}))).toEqual({ count: 1, applications: [teamApp] });
      for (const write of [
        () => simpleApplications.create({ key }, createBody("viewer-app")),
        () => simpleApplications.edit({ key }, teamAppId, editBody(teamAppId, "renamed-by-viewer")),
        () => simpleApplications.archive({ key }, teamAppId),
        () => simpleApplications.unarchive({ key }, teamAppId),
      ]) {
        const response = await expectNoChange(write);
        expect(response.status).toBe(403);
        expect(await response.json()).toEqual({ detail: FORBIDDEN });
      }
    }
  });
});

describe("bad input changes nothing", () => {
  let appId: string;
  beforeAll(async () => {
    appId = (await expectJson<One>(await simpleApplications.create(owner, createBody("guarded")))).application.id;
  });

  it("malformed and unknown bodies, wrong types, refs without id or slug, versions on app refs: 422", async () => {
    const cases: [unknown, (string | number)[]][] = [
      [[], ["body"]],
      ["text", ["body"]],
      [{ application: "x" }, ["body", "application"]],
      [{ application: { slug: 1 } }, ["body", "application", "slug"]],
      [{ application: { slug: null } }, ["body", "application", "slug"]],
      [{ application: { slug: "ok", flags: [] } }, ["body", "application", "flags"]],
    ];
    for (const [body, loc] of cases) {
      await expectRefusedWith(() => simpleApplications.create(owner, body), 422, issueAt(loc));
    }
    const queries: [unknown, (string | number)[]][] = [
      [{ application_refs: [{}] }, ["body", "application_refs", 0]],
      [{ application_refs: [{ id: "not-a-uuid" }] }, ["body", "application_refs", 0, "id"]],
      [{ application_refs: [{ slug: "guarded", version: "1" }] }, ["body", "application_refs", 0, "version"]],
      [{ application_refs: { slug: "guarded" } }, ["body", "application_refs"]],
      [{ include_archived: "yes" }, ["body", "include_archived"]],
      [{ windowing: { limit: 1 } }, ["body"]],
      [{ application_refs: Array(101).fill({ slug: "guarded" }) }, ["body", "application_refs"]],
    ];
    for (const [body, loc] of queries) {
      await expectRefusedWith(() => simpleApplications.query(owner, body), 422, issueAt(loc));
    }
    await expectRefusedWith(() => simpleApplications.edit(owner, appId, editBody(absentId(appId), "moved")), 422, {
      loc: ["body", "application", "id"],
      msg: "Value error, id must be the path's application_id",
      type: "value_error",
    });
    await expectRefusedWith(
      () => simpleApplications.edit(owner, appId, { application: { slug: "one", name: "other" } }),
      422,
      issueAt(["body", "application", "slug"]),
    );
  });

  it("ids that are not UUIDs: 422 on every call", async () => {
    for (const id of ["not-a-uuid", "' OR 1=1 --", "1"]) {
      for (const request of [
        () => simpleApplications.get(owner, id),
        () => simpleApplications.edit(owner, id, editBody(appId, "x")),
        () => simpleApplications.archive(owner, id),
        () => simpleApplications.unarchive(owner, id),
      ]) {
        await expectRefusedWith(request, 422, issueAt(["path", "application_id"], { type: "uuid_parsing" }));
      }
    }
  });

  it("huge and deep bodies: 413 and 422", async () => {
    const huge = createBody(`huge-${"x".repeat(20_000)}`);
    await expectRefusedWith(() => simpleApplications.create(owner, huge), 413, "Request body is larger than 16384 bytes");
    let deep: unknown = { slug: "deep" };
    for (let i = 0; i < 200; i++) deep = { application: deep };
    const response = await expectNoChange(() => simpleApplications.create(owner, deep));
    expect(response.status).toBe(422);
  });
});

/** An id other than `id`. */
const absentId = (id: string) => (id.startsWith("0") ? `1${id.slice(1)}` : `0${id.slice(1)}`);
