import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type Account,
  countRows,
  createAccount,
  createAppVia,
  createTeam,
  getRevisions,
  issueKey,
  postApp,
  type Role,
} from "./fixtures";

const FORBIDDEN = { detail: "You do not have access to perform this action. Please contact your organization admin." };

let owner: Account;
let team: Awaited<ReturnType<typeof createTeam>>;
let teamAppId: string;
const members = {} as Record<Role, Account>;
let outsider: Account;

beforeAll(async () => {
  owner = await createAccount();
  for (const role of ["workspace_admin", "editor", "viewer"] as const) members[role] = await createAccount();
  members.owner = owner;
  outsider = await createAccount();
  team = await createTeam(owner, [
    [members.workspace_admin, "workspace_admin"],
    [members.editor, "editor"],
    [members.viewer, "viewer"],
  ]);
  teamAppId = await createAppVia(owner.key, { app_name: "team-app", organization_id: team.organizationId });
});

describe("role matrix", () => {
  it.each([
    ["owner", 200],
    ["workspace_admin", 200],
    ["editor", 200],
    ["viewer", 403],
  ] as const)("a team %s creating in the team gets %i", async (role, status) => {
    const before = await countRows("apps");
    const response = await postApp(members[role].key, { app_name: `by-${role}`, organization_id: team.organizationId });
    expect(response.status).toBe(status);
    if (status === 403) {
      expect(await response.json()).toEqual(FORBIDDEN);
      expect(await countRows("apps")).toBe(before);
    }
  });

  it("an outsider creating in the team gets 403 and nothing is written", async () => {
    const before = await countRows("apps");
    for (const body of [
      { app_name: "intruder", organization_id: team.organizationId },
      { app_name: "intruder", workspace_id: team.workspaceId },
      { app_name: "intruder", project_id: team.projectId },
    ]) {
      const response = await postApp(outsider.key, body);
      expect(response.status).toBe(403);
      expect(await response.json()).toEqual(FORBIDDEN);
    }
    expect(await countRows("apps")).toBe(before);
  });

  it.each(["owner", "workspace_admin", "editor", "viewer"] as const)("a team %s can read the team's app", async (role) => {
    const response = await getRevisions(members[role].key, teamAppId, "production");
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ app_id: teamAppId, organization_id: team.organizationId });
  });

  it("an outsider reading the team's app gets the same 404 as for an app that does not exist", async () => {
    const response = await getRevisions(outsider.key, teamAppId, "production");
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ detail: "App environment not found" });
  });

  it("a member removed from the organization loses access", async () => {
    const leaver = await createAccount();
    const ids = await createTeam(owner, [[leaver, "editor"]]);
    const appId = await createAppVia(leaver.key, { app_name: "before-leaving", organization_id: ids.organizationId });
    await env.DB.prepare("DELETE FROM organization_members WHERE organization_id = ? AND user_id = ?")
      .bind(ids.organizationId, leaver.userId)
      .run();
    expect((await getRevisions(leaver.key, appId, "production")).status).toBe(404);
    expect((await postApp(leaver.key, { app_name: "after-leaving", organization_id: ids.organizationId })).status).toBe(403);
  });
});

describe("choosing the target project", () => {
  const projectOf = async (key: string, appId: string) =>
    ((await (await getRevisions(key, appId, "development")).json()) as { project_id: string }).project_id;

  it("uses project_id, else the workspace's default project, else the organization's", async () => {
    const byProject = await createAppVia(members.editor.key, { app_name: "t-project", project_id: team.projectId });
    const byWorkspace = await createAppVia(members.editor.key, { app_name: "t-workspace", workspace_id: team.workspaceId });
    const byOrganization = await createAppVia(members.editor.key, { app_name: "t-org", organization_id: team.organizationId });
    for (const appId of [byProject, byWorkspace, byOrganization]) {
      expect(await projectOf(members.editor.key, appId)).toBe(team.projectId);
    }
  });

  it("uses the key's project when no id is given", async () => {
    const appId = await createAppVia(members.editor.key, { app_name: "t-key" });
    expect(await projectOf(members.editor.key, appId)).toBe(members.editor.projectId);
  });

  it("accepts ids that agree with each other", async () => {
    const response = await postApp(owner.key, {
      app_name: "t-all-agree",
      project_id: team.projectId,
      workspace_id: team.workspaceId,
      organization_id: team.organizationId,
    });
    expect(response.status).toBe(200);
  });

  it("answers 422 naming the field when visible ids disagree, and writes nothing", async () => {
    const before = await countRows("apps");
    const response = await postApp(owner.key, {
      app_name: "t-disagree",
      project_id: team.projectId,
      workspace_id: owner.workspaceId,
      organization_id: owner.organizationId,
    });
    expect(response.status).toBe(422);
    const { detail } = (await response.json()) as { detail: { loc: unknown[]; type: string }[] };
    expect(detail.map((issue) => issue.loc)).toEqual([
      ["body", "workspace_id"],
      ["body", "organization_id"],
    ]);
    expect(detail.every((issue) => issue.type === "value_error")).toBe(true);
    expect(await countRows("apps")).toBe(before);
  });

  it("answers 403 for ids that do not exist, whichever field names them", async () => {
    const missing = "01900000-0000-7000-8000-0000000000ff";
    for (const field of ["project_id", "workspace_id", "organization_id"]) {
      const response = await postApp(owner.key, { app_name: "t-missing", [field]: missing });
      expect(response.status).toBe(403);
      expect(await response.json()).toEqual(FORBIDDEN);
    }
  });

  it("answers 403, not 422, when one of the ids is not visible to the caller", async () => {
    const response = await postApp(members.editor.key, {
      app_name: "t-hidden",
      project_id: team.projectId,
      organization_id: outsider.organizationId,
    });
    expect(response.status).toBe(403);
  });

  it("answers 403 when the key's own project is in an organization where the caller is a viewer", async () => {
    const key = await issueKey(members.viewer.userId, team.projectId);
    expect((await postApp(key, { app_name: "t-viewer-key" })).status).toBe(403);
    expect((await getRevisions(key, teamAppId, "staging")).status).toBe(200);
  });
});
