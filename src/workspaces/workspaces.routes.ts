import { Hono } from "hono";
import { requireApiKey } from "../auth/require-api-key";
import { changeMemberRole, type MemberVerdict, removeMember } from "../db/members";
import { writeAs } from "../http/d1-session";
import { type ApiError, forbidden, lastOwner, memberNotFound, workspaceNotFound } from "../http/errors";
import { jsonBody, validate } from "../http/validation";
import type { AppEnv } from "../types";
import { ALL_ROLES, PERMISSIONS } from "./roles";
import { AssignRoleBody, RemoveUserQuery, toWorkspace, UnassignRoleQuery, WorkspaceIdParams } from "./workspaces.schemas";

/** Why a member was left as they were, as an error ("unchanged" is no error: the platform answers 200). */
const MEMBER_REFUSALS: Partial<Record<MemberVerdict, () => ApiError>> = {
  not_found: workspaceNotFound,
  forbidden,
  no_member: memberNotFound,
  last_owner: lastOwner,
};

function refuseUnless(verdict: MemberVerdict) {
  const refusal = MEMBER_REFUSALS[verdict];
  if (refusal) throw refusal();
}

/** Routes under /workspaces: roles, and the members of a workspace's organization. */
export const workspacesRoutes = new Hono<AppEnv>()
  .get("/roles", requireApiKey, async (c) => {
    return c.json(ALL_ROLES, 200);
  })
  .get("/permissions", requireApiKey, async (c) => {
    return c.json(PERMISSIONS, 200);
  })
  .post(
    "/:workspace_id/roles",
    requireApiKey,
    ...jsonBody(),
    validate("param", WorkspaceIdParams),
    validate("json", AssignRoleBody),
    async (c) => {
      const { email, organization_id, role } = c.req.valid("json");
      const change = { organizationId: organization_id, workspaceId: c.req.valid("param").workspace_id, email };
      const { verdict } = await writeAs(c, (db) => changeMemberRole(db, change, role));
      refuseUnless(verdict);
      return c.json(true, 200);
    },
  )
  .delete(
    "/:workspace_id/roles",
    requireApiKey,
    validate("param", WorkspaceIdParams),
    validate("query", UnassignRoleQuery),
    async (c) => {
      const { email, org_id, role } = c.req.valid("query");
      const change = { organizationId: org_id, workspaceId: c.req.valid("param").workspace_id, email };
      const { verdict, member } = await writeAs(c, (db) => changeMemberRole(db, change, "viewer", role));
      refuseUnless(verdict);
      return c.json(member, 200);
    },
  )
  .delete(
    "/:workspace_id/users",
    requireApiKey,
    validate("param", WorkspaceIdParams),
    validate("query", RemoveUserQuery),
    async (c) => {
      const { email, org_id } = c.req.valid("query");
      const change = { organizationId: org_id, workspaceId: c.req.valid("param").workspace_id, email };
      const { verdict, workspace } = await writeAs(c, (db) => removeMember(db, change));
      refuseUnless(verdict);
      if (!workspace) throw workspaceNotFound();
      return c.json(toWorkspace(workspace), 200);
    },
  );
