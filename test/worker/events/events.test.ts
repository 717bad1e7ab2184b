import { beforeAll, describe, expect, it } from "vitest";
import {
  A_TIME,
  type Account,
  createAccount,
  createAppVia,
  createTeam,
  type Event,
  expectError,
  expectJson,
  FORBIDDEN,
  issueKey,
  send,
} from "../fixtures";
import { countOnShards, databaseOf } from "../pool";

interface Page {
  events: Event[];
  next_cursor: string | null;
}

const events = async (key: string, query = "") => expectJson<Page>(await send("GET", `/events${query}`, { key }));
const countEvents = () => countOnShards("SELECT COUNT(*) AS n FROM events");

let owner: Account;
beforeAll(async () => {
  owner = await createAccount();
});

describe("app events", () => {
  it("a create, a rename and a delete make one event each, with who did it and where", async () => {
    const me = await createAccount();
    const appId = await createAppVia(me.key, { app_name: "evented" });
    await expectJson(await send("PATCH", `/apps/${appId}`, { key: me.key, body: { app_name: "renamed" } }));
    await expectJson(await send("DELETE", `/apps/${appId}`, { key: me.key }));
    const place = { organization_id: me.organizationId, workspace_id: me.workspaceId, project_id: me.projectId };
    const actor = { user_id: me.userId, username: me.username, api_key_prefix: me.key.split(".")[0] };
    const event = (type: string, data: Record<string, unknown>) => ({
      id: expect.any(String),
      type,
      occurred_at: expect.any(String),
      ...place,
      actor,
      data,
    });
    expect((await events(me.key)).events).toEqual([
      event("app.deleted", { app_id: appId, app_name: "renamed" }),
      event("app.renamed", { app_id: appId, app_name: "renamed", previous_app_name: "evented" }),
      event("app.created", { app_id: appId, app_name: "evented" }),
    ]);
  });

  it("a refused, a failed or a replayed request records nothing", async () => {
    const viewer = await createAccount();
    const team = await createTeam(owner, [[viewer, "viewer"]]);
    const appId = await createAppVia(owner.key, { app_name: "guarded", organization_id: team.organizationId });
    await createAppVia(owner.key, { app_name: "taken", organization_id: team.organizationId });
    const keyed = { "Idempotency-Key": "events-replay" };
    await expectJson(await send("POST", "/apps", { key: owner.key, body: { app_name: "once" }, headers: keyed }));
    const before = await countEvents();
    await expectError(await send("PATCH", `/apps/${appId}`, { key: viewer.key, body: { app_name: "x" } }), 403, FORBIDDEN);
    await expectError(await send("DELETE", `/apps/${appId}`, { key: viewer.key }), 403, FORBIDDEN);
    expect((await send("PATCH", `/apps/${appId}`, { key: owner.key, body: { app_name: "taken" } })).status).toBe(409);
    expect((await send("POST", "/apps", { key: owner.key, body: { app_name: "once" }, headers: keyed })).status).toBe(200);
    // A rename to the name it has changes nothing.
    await expectJson(await send("PATCH", `/apps/${appId}`, { key: owner.key, body: { app_name: "guarded" } }));
    expect(await countEvents()).toBe(before);
  });
});

describe("config and environment events", () => {
  it("add, commit, fork, deploy and revert make one event each, with what a receiver needs", async () => {
    const me = await createAccount();
    const appId = await createAppVia(me.key, { app_name: "configured" });
    const app = { id: appId };
    const configs = async (action: string, body: object) =>
      expectJson<any>(await send("POST", `/variants/configs/${action}`, { key: me.key, body }));
    const added = await configs("add", { application_ref: app, variant_ref: { slug: "main" } });
    const committed = await configs("commit", {
      config: { params: { t: 1 }, url: "", application_ref: app, variant_ref: { slug: "main", version: 1 } },
    });
    const forked = await configs("fork", { application_ref: app, variant_ref: { slug: "main", version: 2 } });
    const first = await configs("deploy", {
      application_ref: app,
      variant_ref: { slug: "main", version: 1 },
      environment_ref: { slug: "staging" },
    });
    const second = await configs("deploy", {
      application_ref: app,
      variant_ref: { slug: "main", version: 2 },
      environment_ref: { slug: "staging" },
    });
    await expectJson(await send("POST", `/configs/deployment/${first.environment_ref.id}/revert`, { key: me.key }));
    // A Config's variant_ref.id is its revision's id; events name the variant too.
    const variantIds = Object.fromEntries(
      (
        await databaseOf(appId)
          .prepare("SELECT name, id FROM app_variants WHERE app_id = ?")
          .bind(appId)
          .all<{ name: string; id: string }>()
      ).results.map(({ name, id }) => [name, id]),
    );
    const revision = (config: any) => ({
      config_name: config.variant_ref.slug,
      variant_id: variantIds[config.variant_ref.slug],
      revision: config.variant_ref.version,
      revision_id: config.variant_ref.id,
    });
    const log = (await events(me.key, "?type=config.&type=environment.")).events;
    const base = { app_id: appId, app_name: "configured" };
    expect(log.map((event) => [event.type, event.data])).toEqual([
      [
        "environment.reverted",
        {
          ...base,
          environment: "staging",
          environment_revision: 3,
          environment_revision_id: expect.any(String),
          previous: revision(second),
          current: revision(first),
          live_everywhere_by: A_TIME,
          reverted_to_revision_id: first.environment_ref.id,
        },
      ],
      [
        "environment.deployed",
        {
          ...base,
          environment: "staging",
          environment_revision: 2,
          environment_revision_id: second.environment_ref.id,
          previous: revision(first),
          current: revision(second),
          live_everywhere_by: A_TIME,
        },
      ],
      [
        "environment.deployed",
        {
          ...base,
          environment: "staging",
          environment_revision: 1,
          environment_revision_id: first.environment_ref.id,
          previous: null,
          current: revision(first),
          live_everywhere_by: A_TIME,
        },
      ],
      ["config.forked", { ...base, ...revision(forked), message: null, source_config_name: "main", source_revision: 2 }],
      ["config.committed", { ...base, ...revision(committed), message: null }],
      ["config.added", { ...base, ...revision(added), message: null }],
    ]);
  });

  it("the older SDK's save with overwrite makes a commit and a deploy; from-base an add; parameters a commit", async () => {
    const me = await createAccount();
    const appId = await createAppVia(me.key, { app_name: "saved" });
    const save = (overwrite: boolean, parameters: object) =>
      send("POST", "/configs", { key: me.key, body: { base_id: appId, config_name: "main", parameters, overwrite } });
    await expectJson(await save(false, { a: 1 }));
    await expectJson(await save(true, { a: 2 }));
    const from = await expectJson<{ variant_id: string }>(
      await send("POST", "/variants/from-base", {
        key: me.key,
        body: { base_id: appId, new_variant_name: "x", new_config_name: "drafted", parameters: {} },
      }),
    );
    await expectJson(
      await send("PUT", `/variants/${from.variant_id}/parameters`, { key: me.key, body: { parameters: { b: 1 } } }),
    );
    const log = (await events(me.key, "?type=config.&type=environment.")).events;
    expect(
      log.map((event) => [
        event.type,
        event.data.config_name ?? (event.data.current as any)?.config_name,
        event.data.revision ?? event.data.environment_revision,
      ]),
    ).toEqual([
      ["config.committed", "drafted", 2],
      ["config.added", "drafted", 1],
      ["environment.deployed", "main", 1],
      ["config.committed", "main", 2],
      ["config.added", "main", 1],
    ]);
  });
});

describe("accounts events", () => {
  it("keys, members, invitations, the organization and its workspaces: one event per change", async () => {
    const founder = await createAccount();
    const org = await expectJson<{ id: string; workspaces: string[] }>(
      await send("POST", "/organizations", { key: founder.key, body: { name: "Evented", owner: founder.userId } }),
    );
    const key = (method: string, path: string, body?: unknown) => send(method, path, { key: founder.key, body });
    await expectJson(await key("PUT", `/organizations/${org.id}`, { description: "d" }));
    const ws = await expectJson<{ id: string }>(await key("POST", `/organizations/${org.id}/workspaces`, { name: "W" }));
    await expectJson(await key("PUT", `/organizations/${org.id}/workspaces/${ws.id}`, { name: "W2" }));
    const invitation = await expectJson<{ token: string; project_id: string }>(
      await key("POST", `/organizations/${org.id}/workspaces/${ws.id}/invite`, [
        { email: "joiner@example.com", roles: ["editor"] },
      ]),
    );
    const joined = await expectJson<{ user_id: string; api_key: string }>(
      await send("POST", `/organizations/${org.id}/workspaces/${ws.id}/invite/accept?project_id=${invitation.project_id}`, {
        authorization: "",
        body: { token: invitation.token },
      }),
    );
    const change = { email: "joiner@example.com", organization_id: org.id, role: "deployment_manager" };
    await expectJson(await key("POST", `/workspaces/${ws.id}/roles`, change));
    const spare = await expectJson<string>(await key("POST", `/keys?workspace_id=${ws.id}`));
    await expectJson(await key("DELETE", `/keys/${spare.split(".")[0]}`));
    await expectJson(await key("DELETE", `/workspaces/${ws.id}/users?org_id=${org.id}&email=joiner@example.com`));
    const log = (await events(founder.key, `?organization_id=${org.id}`)).events;
    const member = (role: string) => ({ email: "joiner@example.com", user_id: joined.user_id, role, workspace_id: ws.id });
    const spareData = { prefix: spare.split(".")[0], user_id: founder.userId, project_id: expect.any(String) };
    expect(log.map((event) => [event.type, event.data])).toEqual([
      ["member.removed", member("deployment_manager")],
      ["api_key.deleted", spareData],
      ["api_key.created", spareData],
      ["member.role_changed", { ...member("deployment_manager"), previous_role: "editor" }],
      ["api_key.created", { prefix: joined.api_key.split(".")[0], user_id: joined.user_id, project_id: invitation.project_id }],
      ["member.joined", member("editor")],
      ["member.invited", { ...member("editor"), user_id: null, resent: false }],
      [
        "workspace.updated",
        {
          workspace_id: ws.id,
          before: { name: "W", description: "", type: null },
          after: { name: "W2", description: "", type: null },
        },
      ],
      ["workspace.created", { workspace_id: ws.id, name: "W", description: "", type: null }],
      [
        "organization.updated",
        {
          organization_id: org.id,
          before: { name: "Evented", description: "", type: null },
          after: { name: "Evented", description: "d", type: null },
        },
      ],
      [
        "organization.created",
        {
          organization_id: org.id,
          workspace_id: org.workspaces[0],
          project_id: expect.any(String),
          after: { name: "Evented", description: "", type: null },
        },
      ],
    ]);
    // The joiner acted as themselves, without a key; everything else, the founder with theirs.
    const joinedEvent = log.find((event) => event.type === "member.joined");
    expect(joinedEvent?.actor).toEqual({ user_id: joined.user_id, username: "joiner", api_key_prefix: null });
    expect(
      log
        .filter((event) => event !== joinedEvent && event.actor.user_id !== joined.user_id)
        .map((event) => event.actor.api_key_prefix),
    ).toEqual(Array(9).fill(founder.key.split(".")[0]));
  });
});

describe("GET /events", () => {
  let team: Awaited<ReturnType<typeof createTeam>>;
  let admin: Account;
  let editor: Account;
  let appIds: string[];
  beforeAll(async () => {
    admin = await createAccount();
    editor = await createAccount();
    team = await createTeam(owner, [
      [admin, "workspace_admin"],
      [editor, "editor"],
    ]);
    appIds = [];
    for (let i = 0; i < 5; i++) {
      appIds.push(
        await createAppVia((i % 2 === 0 ? owner : editor).key, { app_name: `log-${i}`, organization_id: team.organizationId }),
      );
    }
    await expectJson(await send("PATCH", `/apps/${appIds[0]}`, { key: owner.key, body: { app_name: "log-0b" } }));
  });
  const teamLog = (query: string) => `?organization_id=${team.organizationId}${query}`;

  it("is read by owners and workspace admins, with read-only keys too; an editor gets 403; another organization is 404", async () => {
    const all = (await events(owner.key, teamLog(""))).events;
    expect(all).toHaveLength(6);
    expect((await events(admin.key, teamLog(""))).events).toEqual(all);
    for (const member of [owner, admin]) {
      const readOnly = await issueKey(member.userId, team.projectId, { readOnly: true });
      expect((await events(readOnly, teamLog(""))).events).toEqual(all);
    }
    await expectError(await send("GET", `/events${teamLog("")}`, { key: editor.key }), 403, FORBIDDEN);
    const readOnlyEditor = await issueKey(editor.userId, team.projectId, { readOnly: true });
    await expectError(await send("GET", `/events${teamLog("")}`, { key: readOnlyEditor }), 403, FORBIDDEN);
    const outsider = await createAccount();
    await expectError(await send("GET", `/events${teamLog("")}`, { key: outsider.key }), 404, "Organization not found");
  });

  it("pages newest first with a cursor, and filters by type (or family), app and actor", async () => {
    const all = (await events(owner.key, teamLog(""))).events;
    expect(all.map((event) => event.type)).toEqual(["app.renamed", ...Array(5).fill("app.created")]);
    const ids = all.map((event) => event.id);
    expect([...ids].sort().reverse()).toEqual(ids);
    const first = await events(owner.key, teamLog("&limit=4"));
    expect(first.events.map((event) => event.id)).toEqual(ids.slice(0, 4));
    expect(first.next_cursor).toBe(ids[3]);
    const second = await events(owner.key, teamLog(`&limit=4&cursor=${first.next_cursor}`));
    expect(second).toEqual({ events: all.slice(4), next_cursor: null });
    expect((await events(owner.key, teamLog("&type=app.renamed"))).events.map((event) => event.id)).toEqual([ids[0]]);
    expect((await events(owner.key, teamLog("&type=app."))).events).toHaveLength(6);
    expect((await events(owner.key, teamLog("&type=app.renamed&type=app.deleted"))).events).toHaveLength(1);
    expect((await events(owner.key, teamLog("&type=environment."))).events).toEqual([]);
    expect((await events(owner.key, teamLog(`&app_id=${appIds[0]}`))).events.map((event) => event.type)).toEqual([
      "app.renamed",
      "app.created",
    ]);
    expect((await events(owner.key, teamLog(`&actor=${editor.userId}`))).events.map((event) => event.data.app_id)).toEqual([
      appIds[3],
      appIds[1],
    ]);
  });

  it.each([
    ["limit=0", ["query", "limit"]],
    ["limit=201", ["query", "limit"]],
    ["type=DROP%20TABLE", ["query", "type"]],
    ["since=yesterday", ["query", "since"]],
    ["cursor=abc", ["query", "cursor"]],
  ])("answers 422 for %s", async (query, loc) => {
    const response = await send("GET", `/events?${query}`, { key: owner.key });
    expect(response.status).toBe(422);
    expect(((await response.json()) as { detail: { loc: unknown[] }[] }).detail.map((issue) => issue.loc)).toEqual([loc]);
  });
});
