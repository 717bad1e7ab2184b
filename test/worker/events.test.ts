import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { type Account, createAccount, createAppVia, createTeam, expectError, expectJson, FORBIDDEN, send } from "./fixtures";

interface Event {
  id: string;
  type: string;
  occurred_at: string;
  organization_id: string;
  workspace_id: string | null;
  project_id: string | null;
  actor: { user_id: string | null; username: string | null; api_key_prefix: string | null };
  data: Record<string, unknown>;
}
interface Page {
  events: Event[];
  next_cursor: string | null;
}

const events = async (key: string, query = "") => expectJson<Page>(await send("GET", `/events${query}`, { key }));
const countEvents = async () => (await env.DB.prepare("SELECT COUNT(*) AS n FROM events").first<{ n: number }>())?.n ?? 0;

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

  it("is read by owners and workspace admins; an editor gets 403; another organization is 404", async () => {
    expect((await events(owner.key, teamLog(""))).events).toHaveLength(6);
    expect((await events(admin.key, teamLog(""))).events).toHaveLength(6);
    await expectError(await send("GET", `/events${teamLog("")}`, { key: editor.key }), 403, FORBIDDEN);
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
