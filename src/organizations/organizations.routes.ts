import * as z from "zod/mini";
import { bucketedSince, CALLER_KEY, newOrganizationBucket } from "../db/buckets";
import { placementBuckets, shardNameOf } from "../db/pool";
import { mergedOldestFirst, readAs, readOnEveryShard, writeAs } from "../http/d1-session";
import { forbidden, unauthorized, validationFailed } from "../http/errors";
import { DEMO_ORGANIZATION_ID, DEMO_USER_ID, DEMO_WORKSPACE_ID, errorResponse, responseRef } from "../http/openapi-parts";
import { requestBucket } from "../http/request-bucket";
import { route, type SharedResponses } from "../http/route";
import {
  ADMINS_ONLY,
  demoWorkspace,
  EXAMPLE_ORGANIZATION_ID,
  EXAMPLE_WORKSPACE_ID,
  PER_ORGANIZATION,
} from "../workspaces/documentation";
import { workspaceNotFound } from "../workspaces/errors";
import { toWorkspace, Workspace } from "../workspaces/workspaces.schemas";
import { demoInvitation, forbiddenUnlessAdmin, workspacePath } from "./declarations";
import {
  alreadyMember,
  invitationNeedsInviteeKey,
  invitationNeedsKey,
  invitationNotMailed,
  organizationNotFound,
} from "./errors";
import {
  CreateOrganizationBody,
  CreateWorkspaceBody,
  Organization,
  OrganizationDetailsBody,
  OrganizationParams,
  OwnOrganization,
  toOrganizationDetails,
  UpdateOrganizationBody,
  UpdateWorkspaceBody,
} from "./organizations.schemas";
import {
  createOrganizationAsCaller,
  createWorkspaceAsCaller,
  fetchOrganization,
  fetchOwnOrganization,
  listOrganizations,
  updateOrganizationAsCaller,
  updateWorkspaceAsCaller,
} from "./organizations.sql.ts";

const demoOrganization = {
  id: DEMO_ORGANIZATION_ID,
  name: "demo",
  description: "",
  type: null,
  owner: DEMO_USER_ID,
  is_personal: true,
  created_at: "2026-11-22T02:54:50.912Z",
  updated_at: "2026-11-22T02:54:50.912Z",
  role: "owner",
  workspaces: [DEMO_WORKSPACE_ID],
  members: [DEMO_USER_ID],
} satisfies z.output<typeof Organization>;

// Written whole, not spread from demoOrganization: esbuild would keep an unused example that spreads another.
const acme = {
  id: EXAMPLE_ORGANIZATION_ID,
  name: "Acme",
  description: "Acme's apps",
  type: null,
  owner: DEMO_USER_ID,
  is_personal: false,
  created_at: "2026-11-23T09:15:02.117Z",
  updated_at: "2026-11-23T09:15:02.117Z",
  role: "owner",
  workspaces: [EXAMPLE_WORKSPACE_ID],
  members: [DEMO_USER_ID],
} satisfies z.output<typeof Organization>;

const ownerIsNotTheCaller = () =>
  validationFailed([
    { loc: ["body", "owner"], msg: "Value error, owner must be your own user id or email", type: "value_error" },
  ]);

/** The path parameter of the /organizations/{org_id} routes below, with its documented example. */
const organizationPath = {
  schema: OrganizationParams,
  examples: globalThis.DOCUMENTATION && { org_id: EXAMPLE_ORGANIZATION_ID },
};

/** Routes under /organizations: organizations and their workspaces (invitations to them: invitations.routes.ts). */
export const organizationsRoutes = [
  route(
    {
      method: "get",
      path: "/organizations",
      roundTrips: globalThis.ROUTE_FACTS && {
        everyShard: true,
        cases: [{ name: "GET /organizations", path: "/organizations", trips: 3 }],
      },
      auth: "key",
      doc: globalThis.DOCUMENTATION && {
        operationId: "listOrganizations",
        tag: "Organizations",
        summary: "List the caller's organizations",
        description:
          "Every organization the caller is a member of, oldest first, with the role the caller acts in there " +
          "(`viewer` with a read-only key) and its workspaces and members by id. Any role.",
        ok: { schema: z.array(Organization), description: "The caller's organizations", example: [demoOrganization, acme] },
      },
    },
    async (c) => {
      return c.json(
        mergedOldestFirst(await readOnEveryShard(c, listOrganizations), (row) => row.id),
        200,
      );
    },
  ),
  route(
    {
      method: "post",
      path: "/organizations",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "POST /organizations", path: "/organizations", body: { name: "another", owner: "{account.userId}" }, trips: 1 },
        ],
      },
      auth: "key",
      body: {
        schema: CreateOrganizationBody,
        id: "CreateOrganization",
        examples: globalThis.DOCUMENTATION && {
          byId: {
            summary: "Owned by the caller, named by id",
            value: { name: "Acme", owner: DEMO_USER_ID, description: "Acme's apps" },
          },
          byEmail: { summary: "Owned by the caller, named by email", value: { name: "Acme Labs", owner: "demo@example.com" } },
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "createOrganization",
        tag: "Organizations",
        summary: "Create an organization, owned by the caller",
        description:
          "A new organization with a default workspace and project, the caller its one owner. `owner` (the client " +
          "requires it) must be the caller's own user id or email: no one makes someone else an owner (else 422). Any " +
          "user may; a read-only key may not (403). No Idempotency-Key: a retry makes another organization.",
        ok: { schema: Organization, description: "The organization was created", example: acme },
        errors: { 403: errorResponse("The request's key is read-only", forbidden()) },
      },
    },
    async (c) => {
      // On the key's shard when it is open (one round trip), else on any open shard.
      const keyShard = shardNameOf(c.env, requestBucket(c, [CALLER_KEY]));
      const placed = { bucket: newOrganizationBucket(bucketedSince(c.env), placementBuckets(c.env, keyShard)) };
      const made = await writeAs(c, [placed], (db) => createOrganizationAsCaller(db, c.req.valid("json")));
      if (made.outcome !== "done") throw made.outcome === "forbidden" ? forbidden() : ownerIsNotTheCaller();
      return c.json(made.organization, 200);
    },
  ), // Before /:org_id, which would take "own" for an id.
  route(
    {
      method: "get",
      path: "/organizations/own",
      roundTrips: globalThis.ROUTE_FACTS && {
        everyShard: true,
        cases: [{ name: "GET /organizations/own", path: "/organizations/own", trips: 3 }],
      },
      auth: "key",
      doc: globalThis.DOCUMENTATION && {
        operationId: "getOwnOrganization",
        tag: "Organizations",
        summary: "Read the caller's own organization",
        description:
          "The caller's personal organization (made with their user), or, for a user who joined by invitation and " +
          "has none, the organization of the key's project. Any role.",
        ok: {
          schema: OwnOrganization,
          description: "The caller's own organization",
          example: { id: DEMO_ORGANIZATION_ID, name: "demo" } satisfies z.output<typeof OwnOrganization>,
        },
        errors: { 404: errorResponse("The caller has no organization of their own", organizationNotFound()) },
      },
    },
    async (c) => {
      // The personal organization wherever it is; else the key's organization, on the key's shard.
      const found = (await readOnEveryShard(c, fetchOwnOrganization)).filter((row) => row !== null);
      const own = found.find((row) => row.personal === 1) ?? found[0];
      if (!own) throw organizationNotFound();
      return c.json({ id: own.id, name: own.name }, 200);
    },
  ),
  route(
    {
      method: "get",
      path: "/organizations/{org_id}",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "GET /organizations/{id}", path: "/organizations/{org.organizationId}", trips: 1 }],
      },
      auth: "key",
      params: organizationPath,
      doc: globalThis.DOCUMENTATION && {
        operationId: "fetchOrganizationDetails",
        tag: "Organizations",
        summary: "Read an organization, its workspaces, members and open invitations",
        description:
          `Any role in the organization. ${PER_ORGANIZATION} Open invitations are listed to owners and workspace ` +
          "admins only (never their tokens, which are not kept); to other roles `invitations` is `[]`.",
        ok: {
          schema: OrganizationDetailsBody,
          description: "The organization",
          example: {
            ...acme,
            workspaces: [demoWorkspace],
            invitations: [
              {
                email: demoInvitation.email,
                role: demoInvitation.role,
                workspace_id: demoInvitation.workspace_id,
                created_at: "2026-11-23T09:20:11.730Z",
                expires_at: demoInvitation.expires_at,
              },
            ],
          } satisfies z.output<typeof OrganizationDetailsBody>,
        },
        errors: { 404: responseRef("OrganizationNotFound") },
      },
    },
    async (c) => {
      const details = await readAs(c, [c.req.valid("param").org_id], (db) => fetchOrganization(db, c.req.valid("param").org_id));
      if (!details) throw organizationNotFound();
      return c.json(toOrganizationDetails(details), 200);
    },
  ),
  route(
    {
      method: "put",
      path: "/organizations/{org_id}",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "PUT /organizations/{id}", path: "/organizations/{org.organizationId}", body: { name: "renamed" }, trips: 1 },
          {
            name: "PUT /organizations/{id}, not a member",
            path: "/organizations/{org.organizationId}",
            key: "viewer",
            body: { name: "x" },
            status: 404,
            trips: 1,
          },
        ],
      },
      auth: "key",
      params: organizationPath,
      body: {
        schema: UpdateOrganizationBody,
        id: "UpdateOrganization",
        examples: globalThis.DOCUMENTATION && {
          rename: { summary: "A new name", value: { name: "Acme Inc." } },
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "updateOrganization",
        tag: "Organizations",
        summary: "Rename or describe an organization",
        description:
          "Changes the fields given; `updated_at`, which the client sends, is ignored. Owners only (403 for any other " +
          "role, and for a read-only key).",
        ok: {
          schema: Organization,
          description: "The organization as updated",
          example: { ...acme, name: "Acme Inc.", updated_at: "2026-11-24T10:02:45.009Z" },
        },
        errors: {
          403: errorResponse("The caller is not an owner of the organization, or the key is read-only", forbidden()),
          404: responseRef("OrganizationNotFound"),
        },
      },
    },
    async (c) => {
      const { org_id } = c.req.valid("param");
      const updated = await writeAs(c, [org_id], (db) => updateOrganizationAsCaller(db, org_id, c.req.valid("json")));
      if (updated.outcome !== "done") throw updated.outcome === "forbidden" ? forbidden() : organizationNotFound();
      return c.json(updated.value, 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/organizations/{org_id}/workspaces",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "POST .../workspaces", path: "/organizations/{org.organizationId}/workspaces", body: { name: "w2" }, trips: 1 },
        ],
      },
      auth: "key",
      params: organizationPath,
      body: {
        schema: CreateWorkspaceBody,
        id: "CreateWorkspace",
        examples: globalThis.DOCUMENTATION && {
          named: { summary: "A workspace", value: { name: "Production" } },
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "createWorkspace",
        tag: "Organizations",
        summary: "Create a workspace in an organization",
        description:
          `A new workspace of the organization, with its default project (\`default_project_id\`). ${ADMINS_ONLY} ` +
          `${PER_ORGANIZATION} No Idempotency-Key: a retry makes another workspace.`,
        ok: { schema: Workspace, description: "The workspace was created", example: demoWorkspace },
        errors: { 403: forbiddenUnlessAdmin(""), 404: responseRef("OrganizationNotFound") },
      },
    },
    async (c) => {
      const { org_id } = c.req.valid("param");
      const made = await writeAs(c, [org_id], (db) => createWorkspaceAsCaller(db, org_id, c.req.valid("json")));
      if (made.outcome !== "done") throw made.outcome === "forbidden" ? forbidden() : organizationNotFound();
      return c.json(toWorkspace(made.value), 200);
    },
  ),
  route(
    {
      method: "put",
      path: "/organizations/{org_id}/workspaces/{workspace_id}",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "PUT .../workspaces/{id}",
            path: "/organizations/{org.organizationId}/workspaces/{org.workspaceId}",
            body: { description: "d" },
            trips: 1,
          },
        ],
      },
      auth: "key",
      params: workspacePath,
      body: {
        schema: UpdateWorkspaceBody,
        id: "UpdateWorkspace",
        examples: globalThis.DOCUMENTATION && {
          rename: { summary: "A new name", value: { name: "Staging", description: "Where releases are tried" } },
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "updateWorkspace",
        tag: "Organizations",
        summary: "Rename or describe a workspace",
        description: `Changes the fields given; \`updated_at\`, which the client sends, is ignored. ${ADMINS_ONLY}`,
        ok: {
          schema: Workspace,
          description: "The workspace as updated",
          example: {
            ...demoWorkspace,
            name: "Staging",
            description: "Where releases are tried",
            updated_at: "2026-11-24T10:05:31.772Z",
          },
        },
        errors: { 403: forbiddenUnlessAdmin(""), 404: responseRef("WorkspaceNotFound") },
      },
    },
    async (c) => {
      const { org_id, workspace_id } = c.req.valid("param");
      const fields = c.req.valid("json");
      const updated = await writeAs(c, [org_id], (db) => updateWorkspaceAsCaller(db, org_id, workspace_id, fields));
      if (updated.outcome !== "done") throw updated.outcome === "forbidden" ? forbidden() : workspaceNotFound();
      return c.json(toWorkspace(updated.value), 200);
    },
  ),
];

/** The responses the routes above share in the document. */
export const organizationsResponses = (): SharedResponses => ({
  OrganizationNotFound: errorResponse(
    "The organization does not exist or the caller is not a member of it (not told apart)",
    organizationNotFound(),
  ),
  WorkspaceNotFound: errorResponse(
    "The caller is not a member of the organization, or the workspace is not one of its (not told apart)",
    workspaceNotFound(),
  ),
  AlreadyMember: errorResponse("The email is a member of the organization already", alreadyMember()),
  InvitationUnauthorized: errorResponse(
    "A key was given and is malformed, unknown, expired or revoked; or none was, and the invitee's own key is " +
      "needed: the email has a user, or the token was not mailed",
    {
      unauthorized: unauthorized(),
      invitationNeedsKey: invitationNeedsKey(),
      invitationNeedsInviteeKey: invitationNeedsInviteeKey(),
    },
  ),
  InvitationNotMailed: errorResponse(
    "The invitation was made but its mail could not be sent: nobody has its token, and a resend replaces it",
    invitationNotMailed(),
  ),
});
