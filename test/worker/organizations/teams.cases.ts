import { beforeAll, describe, expect, it } from "vitest";
import {
  type Account,
  accept,
  createAccount,
  createAppVia,
  createOrganizationVia,
  createTeam,
  expectError,
  expectJson,
  FORBIDDEN,
  type IssuedInvitation,
  invite,
  issueKey,
  joinAsNewUser,
  type Role,
  send,
} from "../fixtures";
import { changes, databaseProblems, fingerprint, snapshot, Tracker } from "../harness";
import { databaseOf } from "../pool";

const UNKNOWN_ID = "01900000-0000-7000-8000-000000000000";
const emailOf = (account: Account) => `${account.username}@example.com`;

/** An organization made by `owner` through the API, with a member in each role given (added by the admin CLI's code). */
async function team(owner: Account, members: [Account, Role][] = []) {
  return createTeam(owner, members);
}

/** `assign_role_to_user`, `unassign_role_from_user` and `remove_user_from_workspace`, as the client sends them. */
const assignRole = (key: string, workspaceId: string, organizationId: string, email: string, role: string) =>
  send("POST", `/workspaces/${workspaceId}/roles`, { key, body: { email, organization_id: organizationId, role } });
const unassignRole = (key: string, workspaceId: string, organizationId: string, email: string, role: string) =>
  send("DELETE", `/workspaces/${workspaceId}/roles?email=${encodeURIComponent(email)}&org_id=${organizationId}&role=${role}`, {
    key,
  });
const removeUser = (key: string, workspaceId: string, organizationId: string, email: string) =>
  send("DELETE", `/workspaces/${workspaceId}/users?org_id=${organizationId}&email=${encodeURIComponent(email)}`, { key });

const roleOf = async (organizationId: string, userId: string) =>
  (
    await databaseOf(organizationId)
      .prepare("SELECT role FROM organization_members WHERE organization_id = ? AND user_id = ?")
      .bind(organizationId, userId)
      .first<{ role: Role }>()
  )?.role ?? null;

let owner: Account;
let outsider: Account;
beforeAll(async () => {
  owner = await createAccount();
  outsider = await createAccount();
});

describe("organizations", () => {
  it("POST makes one owned by the caller, with a default workspace and project; GET lists it with the caller's role", async () => {
    const me = await createAccount();
    const made = await expectJson<Record<string, unknown>>(
      await send("POST", "/organizations", {
        key: me.key,
        body: { name: "Acme", owner: emailOf(me), description: "Rockets", type: "team" },
      }),
    );
    const expected = {
      id: expect.any(String),
      name: "Acme",
      description: "Rockets",
      type: "team",
      owner: me.userId,
      is_personal: false,
      created_at: expect.any(String),
      updated_at: made.created_at,
      role: "owner",
      workspaces: [expect.any(String)],
      members: [me.userId],
    };
    expect(made).toEqual(expected);
    const listed = await expectJson<unknown[]>(await send("GET", "/organizations", { key: me.key }));
    expect(listed).toEqual([expect.objectContaining({ id: me.organizationId, is_personal: true, owner: me.userId }), made]);
    const workspace = (made.workspaces as string[])[0];
    const defaultProject = await databaseOf(workspace)
      .prepare("SELECT id FROM projects WHERE workspace_id = ? AND is_default = 1")
      .bind(workspace)
      .first();
    expect(defaultProject).not.toBeNull();
  });

  it("POST refuses an owner that is not the caller (422) and a read-only key (403), making nothing", async () => {
    const readOnly = await issueKey(owner.userId, owner.projectId, { readOnly: true });
    const before = await fingerprint();
    const response = await send("POST", "/organizations", { key: owner.key, body: { name: "Theirs", owner: outsider.userId } });
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({
      detail: [{ loc: ["body", "owner"], msg: "Value error, owner must be your own user id or email", type: "value_error" }],
    });
    await expectError(
      await send("POST", "/organizations", { key: readOnly, body: { name: "RO", owner: owner.userId } }),
      403,
      FORBIDDEN,
    );
    expect(await fingerprint()).toBe(before);
  });

  it("GET /organizations/own is the caller's personal organization; an invited new user's is the one they joined", async () => {
    expect(await expectJson(await send("GET", "/organizations/own", { key: owner.key }))).toEqual({
      id: owner.organizationId,
      name: owner.username,
    });
    const { organizationId, workspaceId } = await createOrganizationVia(owner.key, "Joined");
    const joined = await joinAsNewUser(owner.key, organizationId, workspaceId, "viewer");
    expect(await expectJson(await send("GET", "/organizations/own", { key: joined.key }))).toEqual({
      id: organizationId,
      name: "Joined",
    });
  });

  it("GET /organizations/{id} shows workspaces with the members, and open invitations to admins only (read-only keys too)", async () => {
    const viewer = await createAccount();
    const ids = await team(owner, [[viewer, "viewer"]]);
    const invited = await expectJson<IssuedInvitation>(
      await invite(owner.key, ids.organizationId, ids.workspaceId, "pending@example.com", "editor"),
    );
    const details = await expectJson<Record<string, any>>(
      await send("GET", `/organizations/${ids.organizationId}`, { key: owner.key }),
    );
    const members = [
      {
        user: { id: owner.userId, email: emailOf(owner), username: owner.username },
        roles: [{ role_name: "owner", role_description: expect.any(String) }],
      },
      {
        user: { id: viewer.userId, email: emailOf(viewer), username: viewer.username },
        roles: [{ role_name: "viewer", role_description: expect.any(String) }],
      },
    ];
    expect(details.workspaces).toEqual([
      {
        id: ids.workspaceId,
        name: "Default",
        description: "",
        type: null,
        organization: ids.organizationId,
        default_project_id: ids.projectId,
        created_at: expect.any(String),
        updated_at: expect.any(String),
        members,
      },
    ]);
    expect(details.invitations).toEqual([
      {
        email: "pending@example.com",
        role: "editor",
        workspace_id: ids.workspaceId,
        created_at: expect.any(String),
        expires_at: invited.expires_at,
      },
    ]);
    const asViewer = await expectJson<Record<string, any>>(
      await send("GET", `/organizations/${ids.organizationId}`, { key: viewer.key }),
    );
    expect(asViewer.invitations).toEqual([]);
    expect(asViewer.role).toBe("viewer");
    // A read-only key reads what its user reads: the owner's sees the invitations, and acts as a viewer.
    const readOnlyOwner = await issueKey(owner.userId, ids.projectId, { readOnly: true });
    const asReadOnlyOwner = await expectJson<Record<string, any>>(
      await send("GET", `/organizations/${ids.organizationId}`, { key: readOnlyOwner }),
    );
    expect(asReadOnlyOwner).toEqual({ ...details, role: "viewer" });
  });

  it("GET and PUT of another organization, or of one that does not exist, are 404", async () => {
    for (const id of [outsider.organizationId, UNKNOWN_ID]) {
      await expectError(await send("GET", `/organizations/${id}`, { key: owner.key }), 404, "Organization not found");
      await expectError(
        await send("PUT", `/organizations/${id}`, { key: owner.key, body: { name: "x" } }),
        404,
        "Organization not found",
      );
    }
  });

  it("PUT updates name and description for an owner only; updated_at (sent by the client) is ignored", async () => {
    const admin = await createAccount();
    const ids = await team(owner, [[admin, "workspace_admin"]]);
    const before = await fingerprint();
    await expectError(
      await send("PUT", `/organizations/${ids.organizationId}`, { key: admin.key, body: { name: "Mine" } }),
      403,
      FORBIDDEN,
    );
    expect(await fingerprint()).toBe(before);
    const updated = await expectJson<Record<string, unknown>>(
      await send("PUT", `/organizations/${ids.organizationId}`, {
        key: owner.key,
        body: { name: "Renamed", description: "New", updated_at: "1999-01-01T00:00:00Z" },
      }),
    );
    expect(updated).toMatchObject({ id: ids.organizationId, name: "Renamed", description: "New", role: "owner" });
    expect(updated.updated_at).not.toBe("1999-01-01T00:00:00Z");
    expect(updated.updated_at).not.toBe(updated.created_at);
  });

  it("a PUT that changes nothing, of an organization or a workspace, records no event and keeps updated_at", async () => {
    const ids = await team(owner);
    const organizationPath = `/organizations/${ids.organizationId}`;
    const workspacePath = `${organizationPath}/workspaces/${ids.workspaceId}`;
    for (const path of [organizationPath, workspacePath]) {
      const changed = await expectJson<Record<string, unknown>>(
        await send("PUT", path, { key: owner.key, body: { name: "Same", description: "Kept", type: "team" } }),
      );
      const tracker = await Tracker.start();
      for (const body of [{}, { name: "Same" }, { name: "Same", description: "Kept", type: "team", updated_at: "2001-01-01" }]) {
        const again = await expectJson<Record<string, unknown>>(await send("PUT", path, { key: owner.key, body }));
        expect(again, `${path} ${JSON.stringify(body)}`).toEqual(changed);
      }
      expect(await tracker.changes()).toEqual({});
      // A change of case is a change.
      await expectJson(await send("PUT", path, { key: owner.key, body: { name: "SAME" } }));
      const events = (await tracker.changes()).events?.added ?? [];
      expect(events.map((event) => event.type)).toEqual([
        path === organizationPath ? "organization.updated" : "workspace.updated",
      ]);
    }
  });

  it("a description or type holding a NUL character is refused (422), of an organization or a workspace, and nothing written", async () => {
    const ids = await team(owner);
    const writes: [string, string, Record<string, string>][] = [
      ["POST", "/organizations", { name: "nul", owner: owner.userId }],
      ["PUT", `/organizations/${ids.organizationId}`, {}],
      ["POST", `/organizations/${ids.organizationId}/workspaces`, { name: "nul" }],
      ["PUT", `/organizations/${ids.organizationId}/workspaces/${ids.workspaceId}`, {}],
    ];
    const before = await fingerprint();
    for (const [method, path, body] of writes) {
      for (const field of ["description", "type"]) {
        const response = await send(method, path, { key: owner.key, body: { ...body, [field]: "before\u0000after" } });
        expect([response.status, await response.json()], `${method} ${path} ${field}`).toEqual([
          422,
          {
            detail: [{ loc: ["body", field], msg: `Value error, ${field} must not contain NUL characters`, type: "value_error" }],
          },
        ]);
      }
    }
    expect(await fingerprint()).toBe(before);
  });
});

describe("workspaces", () => {
  it("an admin creates and updates one, with its own default project; an editor may not; another organization is 404", async () => {
    const admin = await createAccount();
    const editor = await createAccount();
    const ids = await team(owner, [
      [admin, "workspace_admin"],
      [editor, "editor"],
    ]);
    const made = await expectJson<Record<string, any>>(
      await send("POST", `/organizations/${ids.organizationId}/workspaces`, {
        key: admin.key,
        body: { name: "Staging", description: "pre-prod" },
      }),
    );
    expect(made).toMatchObject({ name: "Staging", description: "pre-prod", type: null, organization: ids.organizationId });
    expect(made.members.map((member: { user: { id: string } }) => member.user.id)).toEqual([
      owner.userId,
      admin.userId,
      editor.userId,
    ]);
    // Apps and keys live in its default project.
    const appId = await createAppVia(editor.key, { app_name: "staged", workspace_id: made.id });
    const project = await databaseOf(appId)
      .prepare("SELECT project_id FROM apps WHERE id = ?")
      .bind(appId)
      .first<{ project_id: string }>();
    expect(project?.project_id).toBe(made.default_project_id);
    const renamed = await expectJson<Record<string, unknown>>(
      await send("PUT", `/organizations/${ids.organizationId}/workspaces/${made.id}`, {
        key: admin.key,
        body: { name: "Pre-prod" },
      }),
    );
    expect(renamed).toMatchObject({ id: made.id, name: "Pre-prod", description: "pre-prod" });
    const before = await fingerprint();
    await expectError(
      await send("POST", `/organizations/${ids.organizationId}/workspaces`, { key: editor.key, body: { name: "No" } }),
      403,
      FORBIDDEN,
    );
    await expectError(
      await send("PUT", `/organizations/${ids.organizationId}/workspaces/${made.id}`, { key: editor.key, body: { name: "No" } }),
      403,
      FORBIDDEN,
    );
    await expectError(
      await send("POST", `/organizations/${ids.organizationId}/workspaces`, { key: outsider.key, body: { name: "No" } }),
      404,
      "Organization not found",
    );
    // A workspace of another organization, named under this one.
    await expectError(
      await send("PUT", `/organizations/${ids.organizationId}/workspaces/${outsider.workspaceId}`, {
        key: admin.key,
        body: { name: "No" },
      }),
      404,
      "Workspace not found in this organization",
    );
    expect(await fingerprint()).toBe(before);
  });
});

describe("invitations", () => {
  it("a new email joins with the token alone, gets its first key once, and the token is stored only as a hash", async () => {
    const ids = await createOrganizationVia(owner.key, "Hiring");
    const before = await snapshot();
    const invitation = await expectJson<IssuedInvitation>(
      await invite(owner.key, ids.organizationId, ids.workspaceId, "New.Hire@Example.com", "editor"),
    );
    expect(invitation).toEqual({
      email: "New.Hire@Example.com",
      role: "editor",
      token: expect.stringMatching(/^[0-9a-f]{64}$/),
      organization_id: ids.organizationId,
      workspace_id: ids.workspaceId,
      project_id: expect.any(String),
      expires_at: expect.any(String),
    });
    expect(Date.parse(invitation.expires_at) - Date.now()).toBeGreaterThan(7 * 86_400_000 - 60_000);
    expect(Date.parse(invitation.expires_at) - Date.now()).toBeLessThanOrEqual(7 * 86_400_000);
    expect(JSON.stringify(await snapshot())).not.toContain(invitation.token);
    const joined = await expectJson<Record<string, string>>(await accept(invitation));
    expect(joined).toEqual({
      user_id: expect.any(String),
      email: "New.Hire@Example.com",
      role: "editor",
      organization_id: ids.organizationId,
      workspace_id: ids.workspaceId,
      project_id: invitation.project_id,
      api_key: expect.stringMatching(/^[A-Za-z0-9]{8}\.[0-9a-f]{64}$/),
    });
    expect(await roleOf(ids.organizationId, joined.user_id)).toBe("editor");
    // The key works, as an editor of the organization, in the project the invitation named.
    const appId = await createAppVia(joined.api_key, { app_name: "first-day" });
    const project = await databaseOf(appId)
      .prepare("SELECT project_id FROM apps WHERE id = ?")
      .bind(appId)
      .first<{ project_id: string }>();
    expect(project?.project_id).toBe(invitation.project_id);
    // Used: 409, and no second key.
    await expectError(await accept(invitation), 409, "This invitation has already been accepted");
    const made = changes(before, await snapshot());
    expect(made.users?.added).toEqual([expect.objectContaining({ id: joined.user_id, username: "New.Hire" })]);
    expect(made.api_keys?.added).toHaveLength(1);
    expect(await databaseProblems()).toEqual([]);
  });

  it("an email that has a user needs that user's own key: none is 401, another user's is 403, the user's own joins", async () => {
    const ids = await createOrganizationVia(owner.key);
    const existing = await createAccount();
    const invitation = await expectJson<IssuedInvitation>(
      await invite(owner.key, ids.organizationId, ids.workspaceId, emailOf(existing), "deployment_manager"),
    );
    const readOnly = await issueKey(existing.userId, existing.projectId, { readOnly: true });
    const before = await fingerprint();
    const withoutKey = await accept(invitation);
    expect(withoutKey.headers.get("WWW-Authenticate")).toContain("ApiKey");
    await expectError(withoutKey, 401, "This email already has an account: accept the invitation with that account's API key");
    await expectError(await accept(invitation, outsider.key), 403, "This invitation is for another email address");
    await expectError(await accept(invitation, readOnly), 403, FORBIDDEN);
    expect(await fingerprint()).toBe(before);
    const joined = await expectJson<Record<string, unknown>>(await accept(invitation, existing.key));
    expect(joined).toEqual({
      user_id: existing.userId,
      email: emailOf(existing),
      role: "deployment_manager",
      organization_id: ids.organizationId,
      workspace_id: ids.workspaceId,
      project_id: invitation.project_id,
    });
    expect(await roleOf(ids.organizationId, existing.userId)).toBe("deployment_manager");
  });

  it("a key of a user accepting an invitation for a new email is refused: the token is bound to its email", async () => {
    const ids = await createOrganizationVia(owner.key);
    const invitation = await expectJson<IssuedInvitation>(
      await invite(owner.key, ids.organizationId, ids.workspaceId, "bound@example.com", "viewer"),
    );
    await expectError(
      await accept(invitation, outsider.key),
      403,
      "This invitation is for an email that has no account yet: accept it with the token alone, without an API key",
    );
  });

  it("an expired token is 410; resend voids the old token (410) and the new one works", async () => {
    const ids = await createOrganizationVia(owner.key);
    const email = "late@example.com";
    const first = await expectJson<IssuedInvitation>(
      await invite(owner.key, ids.organizationId, ids.workspaceId, email, "evaluator"),
    );
    await databaseOf(ids.organizationId)
      .prepare("UPDATE invitations SET expires_at = '2020-01-01T00:00:00.000Z' WHERE email = ? AND organization_id = ?")
      .bind(email, ids.organizationId)
      .run();
    await expectError(await accept(first), 410, "This invitation has expired: ask for it to be sent again");
    const resent = await expectJson<IssuedInvitation>(
      await send("POST", `/organizations/${ids.organizationId}/workspaces/${ids.workspaceId}/invite/resend`, {
        key: owner.key,
        body: { email },
      }),
    );
    expect(resent).toEqual({ ...first, token: expect.any(String), expires_at: expect.any(String) });
    expect(resent.token).not.toBe(first.token);
    await databaseOf(ids.organizationId)
      .prepare("UPDATE invitations SET expires_at = '2999-01-01T00:00:00.000Z' WHERE token_hash <> ''")
      .run();
    await expectError(await accept(first), 410, "This invitation was replaced by a newer one: use the latest token");
    expect(await expectJson<{ role: string }>(await accept(resent))).toMatchObject({ role: "evaluator" });
  });

  it("refuses a made-up token (404), a project of another workspace (404) and an email already a member (409)", async () => {
    const member = await createAccount();
    const ids = await team(owner, [[member, "viewer"]]);
    const invitation = await expectJson<IssuedInvitation>(
      await invite(owner.key, ids.organizationId, ids.workspaceId, "someone@example.com", "viewer"),
    );
    const before = await fingerprint();
    await expectError(await accept(invitation, "", "f".repeat(64)), 404, "Invitation not found");
    await expectError(await accept({ ...invitation, project_id: owner.projectId }), 404, "Project not found in this workspace");
    await expectError(await accept({ ...invitation, workspace_id: owner.workspaceId }), 404, "Invitation not found");
    await expectError(
      await invite(owner.key, ids.organizationId, ids.workspaceId, emailOf(member).toUpperCase(), "editor"),
      409,
      "This email is already a member of the organization",
    );
    await expectError(
      await send("POST", `/organizations/${ids.organizationId}/workspaces/${ids.workspaceId}/invite/resend`, {
        key: owner.key,
        body: { email: "nobody@example.com" },
      }),
      404,
      "Invitation not found",
    );
    expect(await fingerprint()).toBe(before);
  });

  it("only an owner invites an owner; a workspace admin invites other roles; an editor invites nobody", async () => {
    const admin = await createAccount();
    const editor = await createAccount();
    const ids = await team(owner, [
      [admin, "workspace_admin"],
      [editor, "editor"],
    ]);
    const before = await fingerprint();
    await expectError(await invite(admin.key, ids.organizationId, ids.workspaceId, "boss@example.com", "owner"), 403, FORBIDDEN);
    await expectError(await invite(editor.key, ids.organizationId, ids.workspaceId, "pal@example.com", "viewer"), 403, FORBIDDEN);
    await expectError(
      await invite(outsider.key, ids.organizationId, ids.workspaceId, "pal@example.com", "viewer"),
      404,
      "Workspace not found in this organization",
    );
    expect(await fingerprint()).toBe(before);
    expect((await invite(admin.key, ids.organizationId, ids.workspaceId, "pal@example.com", "admin")).status).toBe(200);
    expect(
      await expectJson<{ role: string }>(
        await invite(owner.key, ids.organizationId, ids.workspaceId, "boss@example.com", "owner"),
      ),
    ).toMatchObject({
      role: "owner",
    });
    // The synonym is stored as the role it stands for.
    const pal = await databaseOf(ids.organizationId)
      .prepare("SELECT role FROM invitations WHERE email = 'pal@example.com' AND organization_id = ?")
      .bind(ids.organizationId)
      .first<{ role: string }>();
    expect(pal?.role).toBe("workspace_admin");
  });

  const listIssue = (loc: (string | number)[], bound: "least" | "most", length: number) => ({
    loc,
    msg: `List should have at ${bound} 1 item after validation, not ${length}`,
    type: bound === "least" ? "too_short" : "too_long",
  });
  it.each([
    [
      "an object, not an array",
      { email: "a@example.com", roles: ["viewer"] },
      { loc: ["body"], msg: "Input should be a valid array", type: "array_type" },
    ],
    ["an empty array", [], listIssue(["body"], "least", 0)],
    [
      "two invitations",
      [
        { email: "a@example.com", roles: ["viewer"] },
        { email: "b@example.com", roles: ["viewer"] },
      ],
      listIssue(["body"], "most", 2),
    ],
    ["two roles", [{ email: "a@example.com", roles: ["viewer", "editor"] }], listIssue(["body", 0, "roles"], "most", 2)],
    ["no role", [{ email: "a@example.com", roles: [] }], listIssue(["body", 0, "roles"], "least", 0)],
    [
      "an unknown role",
      [{ email: "a@example.com", roles: ["superuser"] }],
      {
        loc: ["body", 0, "roles", 0],
        msg: "Value error, role must be one of owner, workspace_admin, editor, deployment_manager, evaluator, viewer (or admin, for workspace_admin)",
        type: "value_error",
      },
    ],
    [
      "a malformed email",
      [{ email: "not-an-email", roles: ["viewer"] }],
      { loc: ["body", 0, "email"], msg: "value is not a valid email address", type: "value_error" },
    ],
  ])("answers 422 for an invite body that is %s, saying what is wrong, and writes nothing", async (_name, body, issue) => {
    const before = await fingerprint();
    const response = await send("POST", `/organizations/${owner.organizationId}/workspaces/${owner.workspaceId}/invite`, {
      key: owner.key,
      body,
    });
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({ detail: [issue] });
    expect(await fingerprint()).toBe(before);
  });
});

describe("roles", () => {
  it("GET /workspaces/roles lists the six roles; /permissions the permissions enforced here", async () => {
    const roles = await expectJson<{ role_name: string; role_description: string; permissions: string[] }[]>(
      await send("GET", "/workspaces/roles", { key: owner.key }),
    );
    expect(roles.map((role) => role.role_name)).toEqual([
      "owner",
      "workspace_admin",
      "editor",
      "deployment_manager",
      "evaluator",
      "viewer",
    ]);
    for (const role of roles) expect(role.role_description).not.toBe("");
    const byName = Object.fromEntries(roles.map((role) => [role.role_name, role.permissions]));
    expect(byName.deployment_manager).toContain("deploy_application");
    expect(byName.deployment_manager).not.toContain("modify_variant_configurations");
    expect(byName.evaluator).toEqual(byName.viewer);
    expect(byName.owner).toContain("edit_organization");
    expect(byName.workspace_admin).not.toContain("edit_organization");
    const permissions = await expectJson<string[]>(await send("GET", "/workspaces/permissions", { key: owner.key }));
    expect(new Set(permissions)).toEqual(new Set(roles.flatMap((role) => role.permissions)));
    expect(permissions).not.toContain("run_evaluations");
    expect((await send("GET", "/workspaces/roles", { authorization: "" })).status).toBe(401);
  });

  it("an admin assigns roles (true); only an owner grants or removes owner; a non-member is 404", async () => {
    const admin = await createAccount();
    const member = await createAccount();
    const ids = await team(owner, [
      [admin, "workspace_admin"],
      [member, "viewer"],
    ]);
    expect(
      await expectJson(await assignRole(admin.key, ids.workspaceId, ids.organizationId, emailOf(member), "deployment_manager")),
    ).toBe(true);
    expect(await roleOf(ids.organizationId, member.userId)).toBe("deployment_manager");
    const before = await fingerprint();
    await expectError(await assignRole(admin.key, ids.workspaceId, ids.organizationId, emailOf(member), "owner"), 403, FORBIDDEN);
    await expectError(await assignRole(admin.key, ids.workspaceId, ids.organizationId, emailOf(owner), "viewer"), 403, FORBIDDEN);
    await expectError(
      await assignRole(member.key, ids.workspaceId, ids.organizationId, emailOf(admin), "viewer"),
      403,
      FORBIDDEN,
    );
    await expectError(
      await assignRole(admin.key, ids.workspaceId, ids.organizationId, emailOf(outsider), "viewer"),
      404,
      "No member of this organization has that email",
    );
    await expectError(
      await assignRole(admin.key, owner.workspaceId, ids.organizationId, emailOf(member), "viewer"),
      404,
      "Workspace not found in this organization",
    );
    await expectError(
      await assignRole(outsider.key, ids.workspaceId, ids.organizationId, emailOf(member), "viewer"),
      404,
      "Workspace not found in this organization",
    );
    expect(await fingerprint()).toBe(before);
    expect(await expectJson(await assignRole(owner.key, ids.workspaceId, ids.organizationId, emailOf(member), "owner"))).toBe(
      true,
    );
    expect(await expectJson(await assignRole(owner.key, ids.workspaceId, ids.organizationId, emailOf(member), "admin"))).toBe(
      true,
    );
    expect(await roleOf(ids.organizationId, member.userId)).toBe("workspace_admin");
  });

  it("unassigning the member's role makes them a viewer; another role changes nothing and answers 200", async () => {
    const member = await createAccount();
    const ids = await team(owner, [[member, "editor"]]);
    const expected = { id: member.userId, email: emailOf(member), username: member.username };
    expect(
      await expectJson(await unassignRole(owner.key, ids.workspaceId, ids.organizationId, emailOf(member), "deployment_manager")),
    ).toEqual({
      ...expected,
      role: "editor",
    });
    expect(
      await expectJson(await unassignRole(owner.key, ids.workspaceId, ids.organizationId, emailOf(member), "editor")),
    ).toEqual({
      ...expected,
      role: "viewer",
    });
  });

  it("the last owner can be neither demoted nor unassigned; with a second owner, either can step down", async () => {
    const second = await createAccount();
    const ids = await team(owner, [[second, "editor"]]);
    const before = await fingerprint();
    const lastOwner = "This is the organization's last owner: make another member an owner first";
    await expectError(await assignRole(owner.key, ids.workspaceId, ids.organizationId, emailOf(owner), "viewer"), 409, lastOwner);
    await expectError(
      await unassignRole(owner.key, ids.workspaceId, ids.organizationId, emailOf(owner), "owner"),
      409,
      lastOwner,
    );
    await expectError(await removeUser(owner.key, ids.workspaceId, ids.organizationId, emailOf(owner)), 409, lastOwner);
    expect(await fingerprint()).toBe(before);
    await expectJson(await assignRole(owner.key, ids.workspaceId, ids.organizationId, emailOf(second), "owner"));
    await expectJson(await unassignRole(second.key, ids.workspaceId, ids.organizationId, emailOf(owner), "owner"));
    expect(await roleOf(ids.organizationId, owner.userId)).toBe("viewer");
  });

  it.each([
    ["POST", "an unknown role", { role: "superuser" }, ["body", "role"]],
    ["POST", "a malformed email", { email: "nope" }, ["body", "email"]],
    ["POST", "an organization_id that is not a UUID", { organization_id: "x" }, ["body", "organization_id"]],
  ])("%s /workspaces/{id}/roles answers 422 for %s", async (_method, _name, override, loc) => {
    const body = { email: emailOf(outsider), organization_id: owner.organizationId, role: "viewer", ...override };
    const response = await send("POST", `/workspaces/${owner.workspaceId}/roles`, { key: owner.key, body });
    expect(response.status).toBe(422);
    expect(((await response.json()) as { detail: { loc: unknown[] }[] }).detail.map((issue) => issue.loc)).toEqual([loc]);
  });
});

describe("removing a member", () => {
  it("removes them from the organization and revokes their keys for its projects only, in the same request", async () => {
    const member = await createAccount();
    const ids = await team(owner, [[member, "editor"]]);
    const teamKey = await issueKey(member.userId, ids.projectId);
    const second = await expectJson<{ id: string; default_project_id: string }>(
      await send("POST", `/organizations/${ids.organizationId}/workspaces`, { key: owner.key, body: { name: "Second" } }),
    );
    const secondKey = await issueKey(member.userId, second.default_project_id);
    const workspace = await expectJson<{ id: string; members: { user: { id: string } }[] }>(
      await removeUser(owner.key, ids.workspaceId, ids.organizationId, emailOf(member)),
    );
    expect(workspace.id).toBe(ids.workspaceId);
    expect(workspace.members.map((m) => m.user.id)).toEqual([owner.userId]);
    expect(await roleOf(ids.organizationId, member.userId)).toBeNull();
    expect((await send("GET", "/apps", { key: teamKey })).status).toBe(401);
    expect((await send("GET", "/apps", { key: secondKey })).status).toBe(401);
    // Their own organization's key is theirs still.
    expect((await send("GET", "/apps", { key: member.key })).status).toBe(200);
    expect(await databaseProblems()).toEqual([]);
  });

  it("an admin removes an editor but not an owner; a member removing themselves is answered the workspace without them", async () => {
    const admin = await createAccount();
    const coOwner = await createAccount();
    const ids = await team(owner, [
      [admin, "workspace_admin"],
      [coOwner, "owner"],
    ]);
    await expectError(await removeUser(admin.key, ids.workspaceId, ids.organizationId, emailOf(coOwner)), 403, FORBIDDEN);
    const left = await expectJson<{ members: { user: { id: string } }[] }>(
      await removeUser(admin.key, ids.workspaceId, ids.organizationId, emailOf(admin)),
    );
    expect(left.members.map((m) => m.user.id)).toEqual([owner.userId, coOwner.userId]);
    await expectError(
      await removeUser(outsider.key, ids.workspaceId, ids.organizationId, emailOf(coOwner)),
      404,
      "Workspace not found in this organization",
    );
    await expectError(
      await removeUser(owner.key, ids.workspaceId, ids.organizationId, emailOf(outsider)),
      404,
      "No member of this organization has that email",
    );
  });
});

describe("a team forming, as docs/guides/teams.md walks through it, under BASE_PATH=/api", () => {
  it("owner: organization, workspace, an editor invited by email, a deployment manager, a read-only CI key, a removal", async () => {
    const api = (method: string, path: string, options: Parameters<typeof send>[2] = {}) =>
      send(method, `/api${path}`, { ...options, bindings: { BASE_PATH: "/api" } });
    const founder = await createAccount();
    const org = await expectJson<{ id: string }>(
      await api("POST", "/organizations", { key: founder.key, body: { name: "Rocket", owner: founder.userId } }),
    );
    const ws = await expectJson<{ id: string; default_project_id: string }>(
      await api("POST", `/organizations/${org.id}/workspaces`, { key: founder.key, body: { name: "Production" } }),
    );
    const editorInvite = await expectJson<IssuedInvitation>(
      await api("POST", `/organizations/${org.id}/workspaces/${ws.id}/invite`, {
        key: founder.key,
        body: [{ email: "ed@example.com", roles: ["editor"] }],
      }),
    );
    const editor = await expectJson<{ api_key: string; user_id: string }>(
      await api("POST", `/organizations/${org.id}/workspaces/${ws.id}/invite/accept?project_id=${editorInvite.project_id}`, {
        authorization: "",
        body: { token: editorInvite.token },
      }),
    );
    const manager = await createAccount();
    const managerInvite = await expectJson<IssuedInvitation>(
      await api("POST", `/organizations/${org.id}/workspaces/${ws.id}/invite`, {
        key: founder.key,
        body: [{ email: emailOf(manager), roles: ["deployment_manager"] }],
      }),
    );
    await expectJson(
      await api("POST", `/organizations/${org.id}/workspaces/${ws.id}/invite/accept?project_id=${managerInvite.project_id}`, {
        key: manager.key,
        body: { token: managerInvite.token },
      }),
    );
    const ciKey = await expectJson<string>(await api("POST", `/keys?workspace_id=${ws.id}&read_only=true`, { key: founder.key }));
    const appId = await expectJson<{ app_id: string }>(
      await api("POST", "/apps", { key: editor.api_key, body: { app_name: "chatbot" } }),
    );
    expect((await api("GET", `/apps/${appId.app_id}/revisions/production`, { key: ciKey })).status).toBe(200);
    await expectError(await api("POST", "/apps", { key: ciKey, body: { app_name: "ci" } }), 403, FORBIDDEN);
    const roster = await expectJson<{ members: { user: { email: string }; roles: { role_name: string }[] }[] }>(
      await api("DELETE", `/workspaces/${ws.id}/users?org_id=${org.id}&email=ed@example.com`, { key: founder.key }),
    );
    expect(roster.members.map((m) => [m.user.email, m.roles[0].role_name])).toEqual([
      [emailOf(founder), "owner"],
      [emailOf(manager), "deployment_manager"],
    ]);
    expect((await api("GET", "/keys", { key: editor.api_key })).status).toBe(401);
  });
});
