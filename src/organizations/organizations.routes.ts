import type { Context } from "hono";
import * as z from "zod/mini";
import { generateApiKey, hashApiKey, hashInvitationToken } from "../auth/api-keys";
import { bucketedSince, CALLER_KEY, newId, newInvitationToken, newOrganizationBucket } from "../db/buckets";
import { Caller } from "../db/caller";
import { placementBuckets, shardNameOf } from "../db/pool";
import type { Role } from "../db/roles";
import { mergedOldestFirst, readAs, readOnEveryShard, writeAs } from "../http/d1-session";
import {
  type ApiError,
  alreadyMember,
  emailBeingClaimed,
  forbidden,
  invitationExpired,
  invitationForAnotherEmail,
  invitationForNewAccount,
  invitationNeedsInviteeKey,
  invitationNeedsKey,
  invitationNotFound,
  invitationNotMailed,
  invitationReplaced,
  invitationUsed,
  organizationNotFound,
  projectNotInWorkspace,
  unauthorized,
  validationFailed,
  workspaceNotFound,
} from "../http/errors";
import { DEMO_IDS, errorResponse, responseRef } from "../http/openapi-parts";
import { requestBucket } from "../http/request-bucket";
import { type RouteEnv, route, type SharedResponses } from "../http/route";
import { ADMINS_ONLY, demoWorkspace, EXAMPLE_ACCOUNT_IDS, PER_ORGANIZATION } from "../workspaces/workspaces.routes";
import { toWorkspace, Workspace } from "../workspaces/workspaces.schemas";
import { mailInvitation, tokenDelivery } from "./invitation-mail";
import { type AcceptVerdict, acceptInvitation, type InviteVerdict, issueInvitation } from "./invitations.sql.ts";
import { inviteeOf, settleClaim } from "./invitee-claim";
import {
  AcceptBody,
  AcceptedInvitation,
  AcceptQuery,
  CreateOrganizationBody,
  CreateWorkspaceBody,
  Invitation,
  InviteBody,
  Organization,
  OrganizationDetailsBody,
  OrganizationParams,
  OwnOrganization,
  ResendBody,
  toOrganizationDetails,
  UpdateOrganizationBody,
  UpdateWorkspaceBody,
  WorkspaceParams,
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

const TOKEN = "9f2c4e6a8b0d1f3e5a7c9b1d3f5e7a9c0b2d4f6e8a1c3e5b7d9f0a2c4e6b8d0f";

const demoOrganization = {
  id: DEMO_IDS.organization,
  name: "demo",
  description: "",
  type: null,
  owner: DEMO_IDS.user,
  is_personal: true,
  created_at: "2026-11-22T02:54:50.912Z",
  updated_at: "2026-11-22T02:54:50.912Z",
  role: "owner",
  workspaces: [DEMO_IDS.workspace],
  members: [DEMO_IDS.user],
} satisfies z.output<typeof Organization>;

const acme = {
  ...demoOrganization,
  id: EXAMPLE_ACCOUNT_IDS.organization,
  name: "Acme",
  description: "Acme's apps",
  is_personal: false,
  created_at: "2026-11-23T09:15:02.117Z",
  updated_at: "2026-11-23T09:15:02.117Z",
  workspaces: [EXAMPLE_ACCOUNT_IDS.workspace],
} satisfies z.output<typeof Organization>;

const demoInvitation = {
  email: "new.person@example.com",
  role: "editor",
  token: TOKEN,
  organization_id: EXAMPLE_ACCOUNT_IDS.organization,
  workspace_id: EXAMPLE_ACCOUNT_IDS.workspace,
  project_id: EXAMPLE_ACCOUNT_IDS.project,
  expires_at: "2026-11-30T09:20:11.730Z",
} satisfies z.output<typeof Invitation>;

const forbiddenUnlessAdmin = (what: string) =>
  errorResponse(
    `The caller's role in the organization is not owner or workspace_admin${what}, or the key is read-only`,
    forbidden(),
  );

const ownerIsNotTheCaller = () =>
  validationFailed([
    { loc: ["body", "owner"], msg: "Value error, owner must be your own user id or email", type: "value_error" },
  ]);

/** Why an invitation was not issued, as an error. */
const INVITE_REFUSALS: Record<Exclude<InviteVerdict, "invite">, () => ApiError> = {
  not_found: workspaceNotFound,
  forbidden,
  no_invitation: invitationNotFound,
  member: alreadyMember,
};

/** Why an invitation was not accepted, as an error. */
const ACCEPT_REFUSALS: Record<Exclude<AcceptVerdict, "accept">, () => ApiError> = {
  not_found: invitationNotFound,
  used: invitationUsed,
  replaced: invitationReplaced,
  expired: invitationExpired,
  no_project: projectNotInWorkspace,
  key_needed_unmailed: invitationNeedsInviteeKey,
  key_needed: invitationNeedsKey,
  new_account: invitationForNewAccount,
  other_user: invitationForAnotherEmail,
  read_only: forbidden,
  member: alreadyMember,
  claim_lapsed: emailBeingClaimed,
};

/**
 * Invites (`role`), or re-sends the open invitation (null), under a new token: mailed to the invitee where mail is
 * set up, and in the answer (shown once) where it is not, or in development.
 */
async function issue(
  c: Context<RouteEnv>,
  target: { organizationId: string; workspaceId: string; email: string },
  role: Role | null,
) {
  const delivery = tokenDelivery(c.env);
  const bucket = requestBucket(c, [target.organizationId]);
  const token = newInvitationToken(bucket);
  const tokenHash = await hashInvitationToken(token);
  const mailed = delivery.mail !== null;
  const issued = await writeAs(c, [{ bucket }], (db) => issueInvitation(db, target, role, { hash: tokenHash, mailed }));
  if (!issued.invitation) throw INVITE_REFUSALS[issued.verdict as keyof typeof INVITE_REFUSALS]();
  const { organization_name, invited_by, ...invitation } = issued.invitation;
  if (delivery.mail) {
    // The accept URL: the configured public origin (never the request's Host), with this request's path, whatever
    // prefix it came through. Set as the path, a path cannot name another host.
    const acceptUrl = new URL(delivery.mail.origin);
    acceptUrl.pathname = new URL(c.req.url).pathname.replace(/\/invite(\/resend)?\/?$/, "/invite/accept");
    acceptUrl.search = `?project_id=${invitation.project_id}`;
    try {
      await mailInvitation(delivery.mail, issued.invitation, token, acceptUrl.href);
    } catch (error) {
      // The invitation stands, its token known to nobody: a resend replaces it. The error names no token.
      console.error(JSON.stringify({ message: "invitation mail failed", error: String(error).slice(0, 500) }));
      throw invitationNotMailed();
    }
  }
  return delivery.inAnswer ? { ...invitation, token } : invitation;
}

/** The path parameters of every route under /organizations/{org_id}/workspaces/{workspace_id}. */
const workspaceExamples = { org_id: EXAMPLE_ACCOUNT_IDS.organization, workspace_id: EXAMPLE_ACCOUNT_IDS.workspace };

/** The path parameter of the /organizations/{org_id} routes below, with its documented example. */
const organizationPath = {
  schema: OrganizationParams,
  examples: globalThis.DOCUMENTATION && { org_id: EXAMPLE_ACCOUNT_IDS.organization },
};

/** The path parameters of the /organizations/{org_id}/workspaces/{workspace_id} routes below, with their documented example. */
const workspacePath = { schema: WorkspaceParams, examples: globalThis.DOCUMENTATION && workspaceExamples };

/** Routes under /organizations: organizations, their workspaces, and invitations to them. */
export const organizationsRoutes = [
  route(
    {
      method: "get",
      path: "/organizations",
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
      auth: "key",
      body: {
        schema: CreateOrganizationBody,
        id: "CreateOrganization",
        examples: globalThis.DOCUMENTATION && {
          byId: {
            summary: "Owned by the caller, named by id",
            value: { name: "Acme", owner: DEMO_IDS.user, description: "Acme's apps" },
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
          example: { id: DEMO_IDS.organization, name: "demo" } satisfies z.output<typeof OwnOrganization>,
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
  route(
    {
      method: "post",
      path: "/organizations/{org_id}/workspaces/{workspace_id}/invite",
      auth: "key",
      params: workspacePath,
      body: {
        schema: InviteBody,
        id: "Invite",
        examples: globalThis.DOCUMENTATION && {
          editor: { summary: "An editor", value: [{ email: "new.person@example.com", roles: ["editor"] }] },
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "inviteUserToWorkspace",
        tag: "Organizations",
        summary: "Invite an email to the organization, through one of its workspaces",
        description:
          "The body is a JSON array of exactly one invitation, of exactly one role (`admin` stands for " +
          "`workspace_admin`). Where the service's operator has set up mail, the invitation's token is mailed to the " +
          "email, with the address to accept at, and the answer holds none: only the mailbox's owner learns it. " +
          "Elsewhere the answer holds the token, shown this once, for the inviter to pass on, and accepting it needs " +
          "the invitee's own key. Only the token's SHA-256 is kept. The invitation is single use, bound to the email, " +
          "and expires after 7 days; inviting an email again voids its open invitation, and its token. The answer is " +
          `the same whether or not the email has an account. ${ADMINS_ONLY} Only an owner invites an owner, or ` +
          `invites again an email that has an owner invitation open. ${PER_ORGANIZATION}`,
        ok: {
          schema: Invitation,
          description: "The invitation (with its token only where it is not mailed)",
          example: demoInvitation,
        },
        errors: {
          403: forbiddenUnlessAdmin(" (or, to invite an owner or replace an owner invitation, not owner)"),
          404: responseRef("WorkspaceNotFound"),
          409: responseRef("AlreadyMember"),
          502: responseRef("InvitationNotMailed"),
        },
      },
    },
    async (c) => {
      const { org_id, workspace_id } = c.req.valid("param");
      const [{ email, roles }] = c.req.valid("json");
      return c.json(await issue(c, { organizationId: org_id, workspaceId: workspace_id, email }, roles[0]), 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/organizations/{org_id}/workspaces/{workspace_id}/invite/resend",
      auth: "key",
      params: workspacePath,
      body: {
        schema: ResendBody,
        id: "Resend",
        examples: globalThis.DOCUMENTATION && {
          email: { summary: "The invited email", value: { email: "new.person@example.com" } },
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "resendInvitation",
        tag: "Organizations",
        summary: "Issue an open invitation again, under a new token",
        description:
          "The open invitation of `email` in this workspace, in the same role, under a new token and for 7 days " +
          "more: the old token stops working (accepting with it is a 410). The new token goes where an invitation's " +
          "does: mailed to the email where mail is set up, else in the answer, shown this once, for the inviter to " +
          `pass on. ${ADMINS_ONLY} Only an owner resends an owner's invitation.`,
        ok: {
          schema: Invitation,
          description: "The invitation (with its new token only where it is not mailed)",
          example: { ...demoInvitation, expires_at: "2026-12-01T08:00:00.000Z" },
        },
        errors: {
          403: forbiddenUnlessAdmin(" (or, for an owner's invitation, not owner)"),
          404: errorResponse(
            "No such workspace in an organization the caller is a member of, or no open invitation of that email there",
            { workspaceNotFound: workspaceNotFound(), invitationNotFound: invitationNotFound() },
          ),
          409: responseRef("AlreadyMember"),
          502: responseRef("InvitationNotMailed"),
        },
      },
    },
    async (c) => {
      const { org_id, workspace_id } = c.req.valid("param");
      const target = { organizationId: org_id, workspaceId: workspace_id, email: c.req.valid("json").email };
      return c.json(await issue(c, target, null), 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/organizations/{org_id}/workspaces/{workspace_id}/invite/accept",
      auth: "optional",
      params: workspacePath,
      query: { schema: AcceptQuery, examples: globalThis.DOCUMENTATION && { project_id: EXAMPLE_ACCOUNT_IDS.project } },
      body: {
        schema: AcceptBody,
        id: "Accept",
        examples: globalThis.DOCUMENTATION && {
          token: { summary: "The invitation's token", value: { token: TOKEN } },
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "acceptInvitation",
        tag: "Organizations",
        summary: "Accept an invitation with its token",
        description:
          "With a mailed token, for an email that has no user yet, the token alone: no API key (an empty " +
          "Authorization header counts as none); the user is made, joins the organization in the invited role, and " +
          "the answer holds their first API key (`api_key`, for `project_id`), shown this once. For an email that has " +
          "a user, and for every token that was not mailed (the inviter saw it), the invitee's own key is needed as " +
          "well (401 without one, 403 with another's or a read-only one): whoever sees a token cannot take an " +
          "address or an account. A new person invited without mail is first given a user by the service's operator. " +
          "`project_id` must be a project of the workspace: the invitation names it. A token is single use (409 " +
          `after) and expires after 7 days (410). ${PER_ORGANIZATION}`,
        ok: {
          schema: AcceptedInvitation,
          description: "The invitation was accepted",
          examples: {
            newUser: {
              summary: "A new user, with their first key",
              value: {
                user_id: EXAMPLE_ACCOUNT_IDS.invitee,
                email: demoInvitation.email,
                role: "editor",
                organization_id: EXAMPLE_ACCOUNT_IDS.organization,
                workspace_id: EXAMPLE_ACCOUNT_IDS.workspace,
                project_id: EXAMPLE_ACCOUNT_IDS.project,
                api_key: "Qw8eR2tY.0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9",
              } satisfies z.output<typeof AcceptedInvitation>,
            },
            existingUser: {
              summary: "An existing user, with their own key",
              value: {
                user_id: DEMO_IDS.user,
                email: "demo@example.com",
                role: "editor",
                organization_id: EXAMPLE_ACCOUNT_IDS.organization,
                workspace_id: EXAMPLE_ACCOUNT_IDS.workspace,
                project_id: EXAMPLE_ACCOUNT_IDS.project,
              } satisfies z.output<typeof AcceptedInvitation>,
            },
          },
        },
        errors: {
          401: responseRef("InvitationUnauthorized"),
          403: errorResponse(
            "The key given is not that of the invited email's user (for an email with no user yet, send none), or " +
              "it is read-only",
            {
              invitationForAnotherEmail: invitationForAnotherEmail(),
              forbidden: forbidden(),
            },
          ),
          404: errorResponse(
            "No invitation of this token through this organization and workspace, or `project_id` is not a project of " +
              "the workspace",
            { invitationNotFound: invitationNotFound(), projectNotInWorkspace: projectNotInWorkspace() },
          ),
          409: errorResponse("The invitation was accepted already, or the user is a member already", {
            invitationUsed: invitationUsed(),
            alreadyMember: alreadyMember(),
          }),
          410: errorResponse(
            "The invitation expired, or was replaced by a newer one (a resend, or another invitation of the email)",
            { invitationExpired: invitationExpired(), invitationReplaced: invitationReplaced() },
          ),
        },
      },
    },
    async (c) => {
      const { org_id, workspace_id } = c.req.valid("param");
      const target = { organizationId: org_id, workspaceId: workspace_id, projectId: c.req.valid("query").project_id };
      const tokenHash = await hashInvitationToken(c.req.valid("json").token);
      // A new user's id and first key (for a project of the organization) carry the organization's bucket.
      const bucket = requestBucket(c, [org_id]);
      const { key, prefix } = generateApiKey(bucket);
      const firstKey = { prefix, keyHash: await hashApiKey(key) };
      // Only an accept without a key makes a user: its email is claimed in the directory first.
      const invitee = await inviteeOf(c, target, tokenHash, newId(bucket), c.var.caller.caller === Caller.nobody);
      const accepted = await settleClaim(
        c,
        invitee,
        writeAs(c, [{ bucket }], (db) => acceptInvitation(db, target, tokenHash, firstKey, invitee)),
      );
      if (!accepted.acceptance) throw ACCEPT_REFUSALS[accepted.verdict as keyof typeof ACCEPT_REFUSALS]();
      return c.json(accepted.newUser ? { ...accepted.acceptance, api_key: key } : accepted.acceptance, 200);
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
