import * as z from "zod/mini";
import { writeAs } from "../http/d1-session";
import { type ApiError, forbidden } from "../http/errors";
import { errorResponse, responseRef } from "../http/openapi-parts";
import { route, type SharedResponses } from "../http/route";
import {
  ADMINS_ONLY,
  demoWorkspace,
  EXAMPLE_INVITEE_ID,
  EXAMPLE_ORGANIZATION_ID,
  EXAMPLE_WORKSPACE_ID,
  PER_ORGANIZATION,
} from "./documentation";
import { lastOwner, memberNotFound, workspaceNotFound } from "./errors";
import { changeMemberRole, type MemberPreview, type MemberVerdict, previewMemberChange, removeMember } from "./members.sql.ts";
import { ALL_ROLES, PERMISSIONS } from "./roles";
import {
  AssignRoleBody,
  Member,
  MemberDryRun,
  RemoveUserQuery,
  RoleListItem,
  toWorkspace,
  UnassignRoleQuery,
  Workspace,
  WorkspaceIdParams,
} from "./workspaces.schemas";

const INVITEE = "new.person@example.com";

/** Where the workspace routes act. */
const ITS_ORGANIZATION = "the workspace's organization, which must be the organization named (else 404)";

const OWNERS = "Only an owner makes or unmakes an owner; the organization's last owner can be neither demoted nor removed (409).";

/** A member as DELETE /workspaces/{workspace_id}/roles answers them: made a viewer. */
const demoMember = {
  id: EXAMPLE_INVITEE_ID,
  email: INVITEE,
  username: "new.person",
  role: "viewer",
} satisfies z.output<typeof Member>;

/** The part of the dry-run examples below they share: a viewer with no keys. */
const MEMBER_DRY_RUN = {
  dry_run: true,
  kind: "delete",
  member: demoMember,
  roles_lost: [],
  keys_revoked: 0,
} satisfies z.output<typeof MemberDryRun>;

/** The 404 of a change to a member, through a workspace. */
const memberChangeNotFound = () =>
  errorResponse("The caller is not a member of the organization, the workspace is not one of its, or no member has that email", {
    workspaceNotFound: workspaceNotFound(),
    memberNotFound: memberNotFound(),
  });

const forbiddenUnlessAdmin = () =>
  errorResponse(
    "The caller's role in the organization is not owner or workspace_admin (or, for a change to or from owner, not " +
      "owner), or the key is read-only",
    forbidden(),
  );

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

/** A member change's dry-run answer, refused as the call would be: what the call would take from the member. */
function memberDryRun({ verdict, member, keys }: MemberPreview) {
  refuseUnless(verdict);
  if (!member) throw memberNotFound();
  const roles_lost = verdict === "change" ? [member.role] : [];
  return { dry_run: true, kind: "delete", member, roles_lost, keys_revoked: keys } satisfies z.output<typeof MemberDryRun>;
}

/** Routes under /workspaces: roles, and the members of a workspace's organization. */
export const workspacesRoutes = [
  route(
    {
      method: "get",
      path: "/workspaces/roles",
      roundTrips: globalThis.ROUTE_FACTS && { cases: [{ name: "GET /workspaces/roles", path: "/workspaces/roles", trips: 1 }] },
      auth: "key",
      doc: globalThis.DOCUMENTATION && {
        operationId: "getAllWorkspaceRoles",
        tag: "Workspaces",
        summary: "List the workspace roles",
        description:
          "The six roles the platform's client knows, most powerful first, each with what it may do here (and its " +
          "permissions, as GET /workspaces/permissions names them). Requests also take `admin` for " +
          `\`workspace_admin\`. Any role. ${PER_ORGANIZATION}`,
        ok: { schema: z.array(RoleListItem), description: "Every role", example: ALL_ROLES },
      },
    },
    async (c) => {
      return c.json(ALL_ROLES, 200);
    },
  ),
  route(
    {
      method: "get",
      path: "/workspaces/permissions",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "GET /workspaces/permissions", path: "/workspaces/permissions", trips: 1 }],
      },
      auth: "key",
      doc: globalThis.DOCUMENTATION && {
        operationId: "getAllWorkspacePermissions",
        tag: "Workspaces",
        summary: "List the permissions this service enforces",
        description: "In the platform's names; its client's list holds more, which mean nothing here and are left out. Any role.",
        ok: { schema: z.array(z.string()), description: "Every permission enforced", example: PERMISSIONS },
      },
    },
    async (c) => {
      return c.json(PERMISSIONS, 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/workspaces/{workspace_id}/roles",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "POST /workspaces/{id}/roles",
            path: "/workspaces/{org.workspaceId}/roles",
            body: { email: "{memberEmail}", organization_id: "{org.organizationId}", role: "deployment_manager" },
            trips: 1,
          },
        ],
      },
      auth: "key",
      params: {
        schema: WorkspaceIdParams,
        examples: globalThis.DOCUMENTATION && { workspace_id: EXAMPLE_WORKSPACE_ID },
      },
      body: {
        schema: AssignRoleBody,
        id: "AssignRole",
        examples: globalThis.DOCUMENTATION && {
          deploymentManager: {
            summary: "Make a member a deployment manager",
            value: { email: INVITEE, organization_id: EXAMPLE_ORGANIZATION_ID, role: "deployment_manager" },
          },
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "assignRoleToUser",
        tag: "Workspaces",
        summary: "Give a member a role",
        description:
          `Sets the member's one role in ${ITS_ORGANIZATION}, for all its workspaces. ` +
          "Giving the role they have already changes nothing and still answers `true`. Someone who is not a member " +
          `is a 404 (invite them instead). ${ADMINS_ONLY} ${OWNERS}`,
        ok: { schema: z.literal(true), documentedAs: { const: true }, description: "The member has the role", example: true },
        errors: { 403: forbiddenUnlessAdmin(), 404: memberChangeNotFound(), 409: responseRef("LastOwner") },
      },
    },
    async (c) => {
      const { email, organization_id, role } = c.req.valid("json");
      const change = { organizationId: organization_id, workspaceId: c.req.valid("param").workspace_id, email };
      const { verdict } = await writeAs(c, [organization_id], (db) => changeMemberRole(db, change, role));
      refuseUnless(verdict);
      return c.json(true, 200);
    },
  ),
  route(
    {
      method: "delete",
      path: "/workspaces/{workspace_id}/roles",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "DELETE /workspaces/{id}/roles?dry_run=true",
            path: "/workspaces/{org.workspaceId}/roles?email={roleHolderEmail}&org_id={org.organizationId}&role=deployment_manager&dry_run=true",
            trips: 1,
          },
          {
            name: "DELETE /workspaces/{id}/roles",
            path: "/workspaces/{org.workspaceId}/roles?email={roleHolderEmail}&org_id={org.organizationId}&role=deployment_manager",
            trips: 1,
          },
        ],
      },
      auth: "key",
      params: {
        schema: WorkspaceIdParams,
        examples: globalThis.DOCUMENTATION && { workspace_id: EXAMPLE_WORKSPACE_ID },
      },
      query: {
        schema: UnassignRoleQuery,
        examples: globalThis.DOCUMENTATION && {
          email: INVITEE,
          org_id: EXAMPLE_ORGANIZATION_ID,
          role: "deployment_manager",
          dry_run: "true",
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "unassignRoleFromUser",
        tag: "Workspaces",
        summary: "Take a role from a member: they become a viewer",
        description:
          "When the member's role is `role`, they become a `viewer` (the platform's rule); with any other role, " +
          `nothing changes and the answer is still 200. Acts in ${ITS_ORGANIZATION}. ${ADMINS_ONLY} ${OWNERS}`,
        ok: {
          schema: z.union([Member, MemberDryRun]),
          description: "The member, as they now are; with `?dry_run=true`, the member and the role they would lose",
          examples: {
            unassigned: { summary: "Made a viewer", value: demoMember },
            dryRun: {
              summary: "?dry_run=true",
              value: {
                ...MEMBER_DRY_RUN,
                member: { ...demoMember, role: "deployment_manager" },
                roles_lost: ["deployment_manager"],
              },
            },
          },
        },
        errors: {
          403: forbiddenUnlessAdmin(),
          404: memberChangeNotFound(),
          409: responseRef("LastOwner"),
        },
      },
    },
    async (c) => {
      const { email, org_id, role, dry_run } = c.req.valid("query");
      const change = { organizationId: org_id, workspaceId: c.req.valid("param").workspace_id, email };
      if (dry_run)
        return c.json(memberDryRun(await writeAs(c, [org_id], (db) => previewMemberChange(db, change, "viewer", role))), 200);
      const { verdict, member } = await writeAs(c, [org_id], (db) => changeMemberRole(db, change, "viewer", role));
      refuseUnless(verdict);
      if (!member) throw memberNotFound();
      return c.json(member, 200);
    },
  ),
  route(
    {
      method: "delete",
      path: "/workspaces/{workspace_id}/users",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "DELETE /workspaces/{id}/users?dry_run=true",
            path: "/workspaces/{org.workspaceId}/users?email={leaverEmail}&org_id={org.organizationId}&dry_run=true",
            trips: 1,
          },
          {
            name: "DELETE /workspaces/{id}/users",
            path: "/workspaces/{org.workspaceId}/users?email={leaverEmail}&org_id={org.organizationId}",
            trips: 1,
          },
        ],
      },
      auth: "key",
      params: {
        schema: WorkspaceIdParams,
        examples: globalThis.DOCUMENTATION && { workspace_id: EXAMPLE_WORKSPACE_ID },
      },
      query: {
        schema: RemoveUserQuery,
        examples: globalThis.DOCUMENTATION && { org_id: EXAMPLE_ORGANIZATION_ID, email: INVITEE, dry_run: "true" },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "removeUserFromWorkspace",
        tag: "Workspaces",
        summary: "Remove a member from the workspace's organization",
        description:
          `Removes the member from ${ITS_ORGANIZATION}, not from this workspace alone (as the platform did), and at ` +
          `once revokes their keys for its projects: they fail from the next request on. ${ADMINS_ONLY} ` +
          `${OWNERS} Answers the workspace, without them.`,
        ok: {
          schema: z.union([Workspace, MemberDryRun]),
          description:
            "The workspace, without the member removed; with `?dry_run=true`, the member, the role they would lose and " +
            "how many of their keys would be revoked",
          examples: {
            removed: { summary: "Removed", value: demoWorkspace },
            dryRun: { summary: "?dry_run=true", value: { ...MEMBER_DRY_RUN, roles_lost: ["viewer"], keys_revoked: 1 } },
          },
        },
        errors: { 403: forbiddenUnlessAdmin(), 404: memberChangeNotFound(), 409: responseRef("LastOwner") },
      },
    },
    async (c) => {
      const { email, org_id, dry_run } = c.req.valid("query");
      const change = { organizationId: org_id, workspaceId: c.req.valid("param").workspace_id, email };
      if (dry_run) return c.json(memberDryRun(await writeAs(c, [org_id], (db) => previewMemberChange(db, change, null))), 200);
      const { verdict, workspace } = await writeAs(c, [org_id], (db) => removeMember(db, change));
      refuseUnless(verdict);
      if (!workspace) throw workspaceNotFound();
      return c.json(toWorkspace(workspace), 200);
    },
  ),
];

/** The responses the routes above share in the document. */
export const workspacesResponses = (): SharedResponses => ({
  LastOwner: errorResponse("The member is the organization's last owner: nothing was changed", lastOwner()),
});
