import type * as z from "zod";
import { forbidden, lastOwner, memberNotFound, workspaceNotFound } from "../http/errors";
import {
  arrayOf,
  DEMO_IDS,
  errorResponse,
  jsonRequestBody,
  jsonResponse,
  operationResponses,
  parametersOf,
  type RequestExamples,
  requestHeaders,
  responseRef,
  schemaRef,
  tagged,
} from "../http/openapi-parts";
import { ALL_ROLES, PERMISSIONS, ROLE_DESCRIPTIONS } from "./roles";
import {
  AssignRoleBody,
  Member,
  RemoveUserQuery,
  RoleListItem,
  UnassignRoleQuery,
  type Workspace,
  WorkspaceIdParams,
  type WorkspaceMember,
} from "./workspaces.schemas";

/** Where roles apply, said once for every route that reads or changes members. */
export const PER_ORGANIZATION =
  "Members and roles are per organization: every workspace of an organization has the organization's members, each " +
  "in their one role there.";

/** Who may administer an organization's members, invitations and workspaces. */
export const ADMINS_ONLY = "Owners and workspace admins only (403 for any other role, and for a read-only key).";

// Ids the examples make up: an organization made through the API, and a workspace of it.
export const EXAMPLE_ACCOUNT_IDS = {
  organization: "01a2012e-1c4a-7d2b-9e31-6f0a2b3c4d5e",
  workspace: "01a2012e-1c4b-7f10-8a4b-2d6e8f0a1c3e",
  project: "01a2012e-1c4b-7f10-8a4b-2d6e8f0a1c40",
  invitee: "01a2012e-3a77-7c02-b5d1-04e6a9c3f218",
} as const;

const demoOwner = {
  user: { id: DEMO_IDS.user, email: "demo@example.com", username: "demo" },
  roles: [{ role_name: "owner", role_description: ROLE_DESCRIPTIONS.owner }],
} satisfies z.output<typeof WorkspaceMember>;

export const demoWorkspace = {
  id: EXAMPLE_ACCOUNT_IDS.workspace,
  name: "Production",
  description: "",
  type: null,
  organization: EXAMPLE_ACCOUNT_IDS.organization,
  default_project_id: EXAMPLE_ACCOUNT_IDS.project,
  created_at: "2026-11-23T09:16:40.502Z",
  updated_at: "2026-11-23T09:16:40.502Z",
  members: [demoOwner],
} satisfies z.output<typeof Workspace>;

const INVITEE = "new.person@example.com";

/** Where the workspace routes act. */
const ITS_ORGANIZATION = "the workspace's organization, which must be the organization named (else 404)";

const OWNERS = "Only an owner makes or unmakes an owner; the organization's last owner can be neither demoted nor removed (409).";

/** A member as DELETE /workspaces/{workspace_id}/roles answers them: made a viewer. */
const demoMember = {
  id: EXAMPLE_ACCOUNT_IDS.invitee,
  email: INVITEE,
  username: "new.person",
  role: "viewer",
} satisfies z.output<typeof Member>;

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

/** The OpenAPI fragment of src/workspaces/workspaces.routes.ts: its paths, schemas and own responses; built with the
 * document, on its first request. */
export const workspacesOpenApi = () => ({
  paths: {
    "/workspaces/roles": {
      get: {
        operationId: "getAllWorkspaceRoles",
        tags: tagged("Workspaces"),
        summary: "List the workspace roles",
        description:
          "The six roles the platform's client knows, most powerful first, each with what it may do here (and its " +
          "permissions, as GET /workspaces/permissions names them). Requests also take `admin` for " +
          `\`workspace_admin\`. Any role. ${PER_ORGANIZATION}`,
        parameters: requestHeaders(),
        responses: operationResponses(
          jsonResponse("Every role", arrayOf(schemaRef("RoleListItem")), {
            example: ALL_ROLES,
          }),
        ),
      },
    },
    "/workspaces/permissions": {
      get: {
        operationId: "getAllWorkspacePermissions",
        tags: tagged("Workspaces"),
        summary: "List the permissions this service enforces",
        description: "In the platform's names; its client's list holds more, which mean nothing here and are left out. Any role.",
        parameters: requestHeaders(),
        responses: operationResponses(
          jsonResponse("Every permission enforced", arrayOf({ type: "string" }), { example: PERMISSIONS }),
        ),
      },
    },
    "/workspaces/{workspace_id}/roles": {
      parameters: parametersOf("path", WorkspaceIdParams, { workspace_id: EXAMPLE_ACCOUNT_IDS.workspace }),
      post: {
        operationId: "assignRoleToUser",
        tags: tagged("Workspaces"),
        summary: "Give a member a role",
        description:
          `Sets the member's one role in ${ITS_ORGANIZATION}, for all its workspaces. ` +
          "Giving the role they have already changes nothing and still answers `true`. Someone who is not a member " +
          `is a 404 (invite them instead). ${ADMINS_ONLY} ${OWNERS}`,
        parameters: requestHeaders(),
        requestBody: jsonRequestBody(schemaRef("AssignRole"), {
          deploymentManager: {
            summary: "Make a member a deployment manager",
            value: { email: INVITEE, organization_id: EXAMPLE_ACCOUNT_IDS.organization, role: "deployment_manager" },
          },
        } satisfies RequestExamples<z.input<typeof AssignRoleBody>>),
        responses: operationResponses(
          jsonResponse("The member has the role", { const: true }, { example: true }),
          { 403: forbiddenUnlessAdmin(), 404: memberChangeNotFound(), 409: responseRef("LastOwner") },
          { jsonBody: "PayloadTooLarge" },
        ),
      },
      delete: {
        operationId: "unassignRoleFromUser",
        tags: tagged("Workspaces"),
        summary: "Take a role from a member: they become a viewer",
        description:
          "When the member's role is `role`, they become a `viewer` (the platform's rule); with any other role, " +
          `nothing changes and the answer is still 200. Acts in ${ITS_ORGANIZATION}. ${ADMINS_ONLY} ${OWNERS}`,
        parameters: [
          ...requestHeaders(),
          ...parametersOf("query", UnassignRoleQuery, {
            email: INVITEE,
            org_id: EXAMPLE_ACCOUNT_IDS.organization,
            role: "deployment_manager",
          }),
        ],
        responses: operationResponses(jsonResponse("The member, as they now are", schemaRef("Member"), { example: demoMember }), {
          403: forbiddenUnlessAdmin(),
          404: memberChangeNotFound(),
          409: responseRef("LastOwner"),
        }),
      },
    },
    "/workspaces/{workspace_id}/users": {
      parameters: parametersOf("path", WorkspaceIdParams, { workspace_id: EXAMPLE_ACCOUNT_IDS.workspace }),
      delete: {
        operationId: "removeUserFromWorkspace",
        tags: tagged("Workspaces"),
        summary: "Remove a member from the workspace's organization",
        description:
          `Removes the member from ${ITS_ORGANIZATION}, not from this workspace alone (as the platform did), and at ` +
          `once revokes their keys for its projects: they fail from the next request on. ${ADMINS_ONLY} ` +
          `${OWNERS} Answers the workspace, without them.`,
        parameters: [
          ...requestHeaders(),
          ...parametersOf("query", RemoveUserQuery, { org_id: EXAMPLE_ACCOUNT_IDS.organization, email: INVITEE }),
        ],
        responses: operationResponses(
          jsonResponse("The workspace, without the member removed", schemaRef("Workspace"), { example: demoWorkspace }),
          { 403: forbiddenUnlessAdmin(), 404: memberChangeNotFound(), 409: responseRef("LastOwner") },
        ),
      },
    },
  },
  inputSchemas: { AssignRole: AssignRoleBody },
  outputSchemas: { RoleListItem, Member },
  responses: {
    LastOwner: errorResponse("The member is the organization's last owner: nothing was changed", lastOwner()),
  },
});
