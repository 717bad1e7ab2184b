import { type Context, Hono } from "hono";
import { generateApiKey, generateInvitationToken, hashApiKey, hashInvitationToken } from "../auth/api-keys";
import { optionalApiKey, requireApiKey } from "../auth/require-api-key";
import type { RequestCaller } from "../db/caller";
import { type AcceptVerdict, acceptInvitation, type InviteVerdict, issueInvitation } from "../db/invitations";
import {
  createOrganizationAsCaller,
  createWorkspaceAsCaller,
  fetchOrganization,
  fetchOwnOrganization,
  listOrganizations,
  updateOrganizationAsCaller,
  updateWorkspaceAsCaller,
} from "../db/organizations";
import type { Role } from "../db/roles";
import { readAs, writeAs } from "../http/d1-session";
import {
  type ApiError,
  alreadyMember,
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
  validationFailed,
  workspaceNotFound,
} from "../http/errors";
import { jsonBody, validate } from "../http/validation";
import type { AppEnv } from "../types";
import { toWorkspace } from "../workspaces/workspaces.schemas";
import { mailInvitation, tokenDelivery } from "./invitation-mail";
import {
  AcceptBody,
  AcceptQuery,
  CreateOrganizationBody,
  CreateWorkspaceBody,
  InviteBody,
  OrganizationParams,
  ResendBody,
  toOrganizationDetails,
  UpdateOrganizationBody,
  UpdateWorkspaceBody,
  WorkspaceParams,
} from "./organizations.schemas";

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
};

/**
 * Invites (`role`), or re-sends the open invitation (null), under a new token: mailed to the invitee where mail is
 * set up, and in the answer (shown once) where it is not, or in development.
 */
async function issue(
  c: Context<AppEnv & { Variables: { caller: RequestCaller } }>,
  target: { organizationId: string; workspaceId: string; email: string },
  role: Role | null,
) {
  const delivery = tokenDelivery(c.env);
  const token = generateInvitationToken();
  const tokenHash = await hashInvitationToken(token);
  const issued = await writeAs(c, (db) => issueInvitation(db, target, role, { hash: tokenHash, mailed: delivery.mail !== null }));
  if (!issued.invitation) throw INVITE_REFUSALS[issued.verdict as keyof typeof INVITE_REFUSALS]();
  const { organization_name, invited_by, ...invitation } = issued.invitation;
  if (delivery.mail) {
    // The accept URL is this request's, whatever prefix or host it came through.
    const acceptUrl = new URL(c.req.url);
    acceptUrl.pathname = acceptUrl.pathname.replace(/\/invite(\/resend)?\/?$/, "/invite/accept");
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

/** Routes under /organizations: organizations, their workspaces, and invitations to them. */
export const organizationsRoutes = new Hono<AppEnv>()
  .get("/", requireApiKey, async (c) => {
    return c.json(await readAs(c, (db) => listOrganizations(db)), 200);
  })
  .post("/", requireApiKey, ...jsonBody(), validate("json", CreateOrganizationBody), async (c) => {
    const made = await writeAs(c, (db) => createOrganizationAsCaller(db, c.req.valid("json")));
    if (made.outcome !== "done") throw made.outcome === "forbidden" ? forbidden() : ownerIsNotTheCaller();
    return c.json(made.organization, 200);
  })
  // Before /:org_id, which would take "own" for an id.
  .get("/own", requireApiKey, async (c) => {
    const own = await readAs(c, (db) => fetchOwnOrganization(db));
    if (!own) throw organizationNotFound();
    return c.json(own, 200);
  })
  .get("/:org_id", requireApiKey, validate("param", OrganizationParams), async (c) => {
    const details = await readAs(c, (db) => fetchOrganization(db, c.req.valid("param").org_id));
    if (!details) throw organizationNotFound();
    return c.json(toOrganizationDetails(details), 200);
  })
  .put(
    "/:org_id",
    requireApiKey,
    ...jsonBody(),
    validate("param", OrganizationParams),
    validate("json", UpdateOrganizationBody),
    async (c) => {
      const { org_id } = c.req.valid("param");
      const updated = await writeAs(c, (db) => updateOrganizationAsCaller(db, org_id, c.req.valid("json")));
      if (updated.outcome !== "done") throw updated.outcome === "forbidden" ? forbidden() : organizationNotFound();
      return c.json(updated.value, 200);
    },
  )
  .post(
    "/:org_id/workspaces",
    requireApiKey,
    ...jsonBody(),
    validate("param", OrganizationParams),
    validate("json", CreateWorkspaceBody),
    async (c) => {
      const { org_id } = c.req.valid("param");
      const made = await writeAs(c, (db) => createWorkspaceAsCaller(db, org_id, c.req.valid("json")));
      if (made.outcome !== "done") throw made.outcome === "forbidden" ? forbidden() : organizationNotFound();
      return c.json(toWorkspace(made.value), 200);
    },
  )
  .put(
    "/:org_id/workspaces/:workspace_id",
    requireApiKey,
    ...jsonBody(),
    validate("param", WorkspaceParams),
    validate("json", UpdateWorkspaceBody),
    async (c) => {
      const { org_id, workspace_id } = c.req.valid("param");
      const fields = c.req.valid("json");
      const updated = await writeAs(c, (db) => updateWorkspaceAsCaller(db, org_id, workspace_id, fields));
      if (updated.outcome !== "done") throw updated.outcome === "forbidden" ? forbidden() : workspaceNotFound();
      return c.json(toWorkspace(updated.value), 200);
    },
  )
  .post(
    "/:org_id/workspaces/:workspace_id/invite",
    requireApiKey,
    ...jsonBody(),
    validate("param", WorkspaceParams),
    validate("json", InviteBody),
    async (c) => {
      const { org_id, workspace_id } = c.req.valid("param");
      const [{ email, roles }] = c.req.valid("json");
      return c.json(await issue(c, { organizationId: org_id, workspaceId: workspace_id, email }, roles[0]), 200);
    },
  )
  .post(
    "/:org_id/workspaces/:workspace_id/invite/resend",
    requireApiKey,
    ...jsonBody(),
    validate("param", WorkspaceParams),
    validate("json", ResendBody),
    async (c) => {
      const { org_id, workspace_id } = c.req.valid("param");
      const target = { organizationId: org_id, workspaceId: workspace_id, email: c.req.valid("json").email };
      return c.json(await issue(c, target, null), 200);
    },
  )
  .post(
    "/:org_id/workspaces/:workspace_id/invite/accept",
    optionalApiKey,
    ...jsonBody(),
    validate("param", WorkspaceParams),
    validate("query", AcceptQuery),
    validate("json", AcceptBody),
    async (c) => {
      const { org_id, workspace_id } = c.req.valid("param");
      const target = { organizationId: org_id, workspaceId: workspace_id, projectId: c.req.valid("query").project_id };
      const tokenHash = await hashInvitationToken(c.req.valid("json").token);
      const { key, prefix } = generateApiKey();
      const firstKey = { prefix, keyHash: await hashApiKey(key) };
      const accepted = await writeAs(c, (db) => acceptInvitation(db, target, tokenHash, firstKey));
      if (!accepted.acceptance) throw ACCEPT_REFUSALS[accepted.verdict as keyof typeof ACCEPT_REFUSALS]();
      return c.json(accepted.newUser ? { ...accepted.acceptance, api_key: key } : accepted.acceptance, 200);
    },
  );
