import { beforeAll, describe, expect, it } from "vitest";
import { protection } from "../client";
import {
  A_TIME,
  type Account,
  createAccount,
  createTeam,
  expectError,
  expectJson,
  FORBIDDEN,
  issueKey,
  newId,
  type ValidationIssue,
} from "../fixtures";
import { expectEvents, expectRowCounts, Tracker } from "../harness";

/*
 * GET/PUT /projects/{project_id}/environments/{environment_name}/protection (docs/CHANGE-REQUESTS.md §1): per project
 * and environment name, any role reads, owners and workspace admins replace them whole, each change one event.
 */

let owner: Account;
let team: Awaited<ReturnType<typeof createTeam>>;
const keys: Record<"owner" | "admin" | "editor" | "deployer" | "viewer" | "readOnly" | "outsider", string> = {} as never;

const DEFAULTS = {
  protected: false,
  required_approvals: 1,
  allow_self_approval: false,
  approver_roles: ["owner", "workspace_admin", "deployment_manager"],
  bypass_roles: [],
  request_ttl_days: 14,
};

beforeAll(async () => {
  owner = await createAccount();
  const [admin, editor, deployer, viewer, outsider] = await Promise.all([1, 2, 3, 4, 5].map(() => createAccount()));
  team = await createTeam(owner, [
    [admin, "workspace_admin"],
    [editor, "editor"],
    [deployer, "deployment_manager"],
    [viewer, "viewer"],
  ]);
  Object.assign(keys, {
    owner: await issueKey(owner.userId, team.projectId),
    admin: await issueKey(admin.userId, team.projectId),
    editor: await issueKey(editor.userId, team.projectId),
    deployer: await issueKey(deployer.userId, team.projectId),
    viewer: await issueKey(viewer.userId, team.projectId),
    readOnly: await issueKey(owner.userId, team.projectId, { readOnly: true }),
    outsider: outsider.key,
  });
});

const read = (key: string, environment = "production", projectId = team.projectId) =>
  protection.get({ key }, projectId, environment);
const put = (key: string, body: unknown, environment = "production", projectId = team.projectId) =>
  protection.put({ key }, projectId, environment, body);

describe("protection settings", () => {
  it("GET: every setting at its default before any PUT, for every role and a read-only key", async () => {
    for (const key of [keys.owner, keys.editor, keys.viewer, keys.readOnly]) {
      expect(await expectJson(await read(key, "staging"))).toEqual({
        project_id: team.projectId,
        environment: "staging",
        ...DEFAULTS,
        updated_at: null,
        updated_by: null,
      });
    }
  });

  it("PUT replaces the settings whole (a field left out takes its default), records the change once, and not again", async () => {
    const tracker = await Tracker.start();
    const first = { protected: true, required_approvals: 2, bypass_roles: ["workspace_admin", "owner", "owner"] };
    const answer = await expectJson(await put(keys.owner, first, "development"));
    const expected = {
      project_id: team.projectId,
      environment: "development",
      ...DEFAULTS,
      protected: true,
      required_approvals: 2,
      // Each role once, in the roles' order.
      bypass_roles: ["owner", "workspace_admin"],
      updated_at: A_TIME,
      updated_by: { user_id: owner.userId, username: owner.username },
    };
    expect(answer).toEqual(expected);
    expect(await expectJson(await read(keys.viewer, "development"))).toEqual(answer);
    const place = { organization_id: team.organizationId, project_id: team.projectId, app_id: null };
    const after = { ...DEFAULTS, protected: true, required_approvals: 2, bypass_roles: ["owner", "workspace_admin"] };
    const changed = expectEvents(await tracker.changes(), {
      type: "environment.protection_changed",
      ...place,
      actor_user_id: owner.userId,
      data: { project_id: team.projectId, environment: "development", before: DEFAULTS, after },
    });
    expectRowCounts(changed, { environment_protections: [1, 0] });

    // The same settings again, in another order: nothing changes, nothing is recorded.
    const same = { bypass_roles: ["workspace_admin", "owner"], required_approvals: 2, protected: true };
    expect(await expectJson(await put(keys.admin, same, "development"))).toEqual(answer);
    expect(await tracker.changes()).toEqual({});

    // A workspace admin replaces them: what was left out goes back to its default.
    const admin = await expectJson<{ updated_by: { user_id: string } }>(
      await put(keys.admin, { protected: true, allow_self_approval: true }, "development"),
    );
    expect(admin).toEqual({
      ...expected,
      required_approvals: 1,
      bypass_roles: [],
      allow_self_approval: true,
      updated_by: { user_id: expect.any(String), username: expect.any(String) },
    });
    expect(admin.updated_by.user_id).not.toBe(owner.userId);
    expectEvents(await tracker.changes(), {
      type: "environment.protection_changed",
      ...place,
      data: { before: after, after: { ...DEFAULTS, protected: true, allow_self_approval: true } },
    });
  });

  it("PUT: 403 for an editor, a deployment manager, a viewer and an owner's read-only key, writing nothing", async () => {
    const tracker = await Tracker.start();
    for (const key of [keys.editor, keys.deployer, keys.viewer, keys.readOnly]) {
      await expectError(await put(key, { protected: true }, "staging"), 403, FORBIDDEN);
    }
    expect(await tracker.changes()).toEqual({});
  });

  it("404: a project not visible or unknown, an environment name that has no settings; 422 for a malformed project id", async () => {
    for (const request of [read(keys.outsider), put(keys.outsider, {}), read(keys.owner, "production", newId(0))]) {
      await expectError(await request, 404, "Project not found");
    }
    for (const name of ["qa", "Production", "production "]) {
      await expectError(await read(keys.owner, name), 404, "Environment not found");
      await expectError(await put(keys.owner, {}, name), 404, "Environment not found");
    }
    const response = await read(keys.owner, "production", "not-a-uuid");
    expect(response.status).toBe(422);
  });

  it("PUT: 422 for each rule broken, writing nothing", async () => {
    const tracker = await Tracker.start();
    const refused: [unknown, (string | number)[]][] = [
      [{ required_approvals: 0 }, ["body", "required_approvals"]],
      [{ required_approvals: 11 }, ["body", "required_approvals"]],
      [{ required_approvals: 1.5 }, ["body", "required_approvals"]],
      [{ request_ttl_days: 0 }, ["body", "request_ttl_days"]],
      [{ request_ttl_days: 91 }, ["body", "request_ttl_days"]],
      [{ approver_roles: [] }, ["body", "approver_roles"]],
      [{ approver_roles: ["viewer"] }, ["body", "approver_roles", 0]],
      [{ approver_roles: ["evaluator"] }, ["body", "approver_roles", 0]],
      [{ bypass_roles: ["editor"] }, ["body", "bypass_roles", 0]],
      [{ bypass_roles: "owner" }, ["body", "bypass_roles"]],
      [{ protected: "yes" }, ["body", "protected"]],
      [{ protected: null }, ["body", "protected"]],
      [{ allow_self_approval: 1 }, ["body", "allow_self_approval"]],
      [{ protected: true, required: 2 }, ["body"]],
      [[], ["body"]],
    ];
    for (const [body, loc] of refused) {
      const response = await put(keys.owner, body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      const { detail } = (await response.json()) as { detail: ValidationIssue[] };
      expect(
        detail.map((issue) => issue.loc),
        JSON.stringify(body),
      ).toEqual([loc]);
    }
    expect(await tracker.changes()).toEqual({});
  });
});
