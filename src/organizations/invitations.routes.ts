import type { Context } from "hono";
import type * as z from "zod/mini";
import { generateApiKey, hashApiKey, hashInvitationToken } from "../auth/api-keys";
import { newId, newInvitationToken } from "../db/buckets";
import { Caller } from "../db/caller";
import type { Role } from "../db/roles";
import { writeAs } from "../http/d1-session";
import { type ApiError, forbidden } from "../http/errors";
import { DEMO_USER_ID, errorResponse, responseRef } from "../http/openapi-parts";
import { requestBucket } from "../http/request-bucket";
import { type RouteEnv, route } from "../http/route";
import {
  ADMINS_ONLY,
  EXAMPLE_INVITEE_ID,
  EXAMPLE_ORGANIZATION_ID,
  EXAMPLE_PROJECT_ID,
  EXAMPLE_WORKSPACE_ID,
  PER_ORGANIZATION,
} from "../workspaces/documentation";
import { workspaceNotFound } from "../workspaces/errors";
import { demoInvitation, forbiddenUnlessAdmin, TOKEN, workspacePath } from "./declarations";
import {
  alreadyMember,
  emailBeingClaimed,
  invitationExpired,
  invitationForAnotherEmail,
  invitationForNewAccount,
  invitationNeedsInviteeKey,
  invitationNeedsKey,
  invitationNotFound,
  invitationNotMailed,
  invitationReplaced,
  invitationUsed,
  projectNotInWorkspace,
} from "./errors";
import { mailInvitation, tokenDelivery } from "./invitation-mail";
import { type AcceptVerdict, acceptInvitation, type InviteVerdict, issueInvitation } from "./invitations.sql.ts";
import { inviteeOf, settleClaim } from "./invitee-claim";
import { AcceptBody, AcceptedInvitation, AcceptQuery, Invitation, InviteBody, ResendBody } from "./organizations.schemas";

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

/** Routes under /organizations/{org_id}/workspaces/{workspace_id}/invite: invitations, re-sent and accepted. */
export const invitationsRoutes = [
  route(
    {
      method: "post",
      path: "/organizations/{org_id}/workspaces/{workspace_id}/invite",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "POST .../invite",
            path: "/organizations/{org.organizationId}/workspaces/{org.workspaceId}/invite",
            body: [{ email: "counted-2@example.com", roles: ["viewer"] }],
            trips: 1,
          },
        ],
      },
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
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "POST .../invite/resend",
            path: "/organizations/{org.organizationId}/workspaces/{org.workspaceId}/invite/resend",
            body: { email: "counted-2@example.com" },
            trips: 1,
          },
        ],
      },
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
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "POST .../invite/accept, a new email without a key",
            path: "/organizations/{org.organizationId}/workspaces/{org.workspaceId}/invite/accept?project_id={newcomer.project_id}",
            key: "none",
            body: { token: "{newcomer.token}" },
            trips: 4,
          },
          {
            name: "POST .../invite/accept, a used token",
            path: "/organizations/{org.organizationId}/workspaces/{org.workspaceId}/invite/accept?project_id={newcomer.project_id}",
            key: "none",
            body: { token: "{newcomer.token}" },
            status: 409,
            trips: 3,
          },
        ],
      },
      auth: "optional",
      params: workspacePath,
      query: { schema: AcceptQuery, examples: globalThis.DOCUMENTATION && { project_id: EXAMPLE_PROJECT_ID } },
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
                user_id: EXAMPLE_INVITEE_ID,
                email: demoInvitation.email,
                role: "editor",
                organization_id: EXAMPLE_ORGANIZATION_ID,
                workspace_id: EXAMPLE_WORKSPACE_ID,
                project_id: EXAMPLE_PROJECT_ID,
                api_key: "Qw8eR2tY.0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9",
              } satisfies z.output<typeof AcceptedInvitation>,
            },
            existingUser: {
              summary: "An existing user, with their own key",
              value: {
                user_id: DEMO_USER_ID,
                email: "demo@example.com",
                role: "editor",
                organization_id: EXAMPLE_ORGANIZATION_ID,
                workspace_id: EXAMPLE_WORKSPACE_ID,
                project_id: EXAMPLE_PROJECT_ID,
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
