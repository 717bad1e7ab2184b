import { v7 as uuidv7 } from "uuid";
import { batchAsCaller, CALLER_CTE, type Caller } from "./caller";
import type { Queryable } from "./d1";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "./events";
import { ADMIN_ROLES_SQL, type Role } from "./roles";

/**
 * Invitations to an organization, through one of its workspaces: ?3 is the organization, ?4 the workspace, ?5 the
 * invited email. Only the SHA-256 of a token is stored. An invitation is open until accepted or voided (replaced by a
 * resend or a new invitation of the same email); one past expires_at stays open but cannot be accepted.
 */

/** Open invitations of organization ?3 for email ?5. */
const IS_OPEN_INVITATION = "organization_id = ?3 AND email = ?5 AND accepted_at IS NULL AND voided_at IS NULL";

/**
 * Whether the caller may (re)send an invitation of role ?6 through workspace ?4 (?6 null: the open one's role):
 * admins do, and only an owner invites an owner, or voids (by inviting the email again, in any role and workspace)
 * an owner invitation that can still be accepted. ?7 = 1 for a resend, which needs an open invitation there.
 */
const INVITE_VERDICT = `mine AS (SELECT role FROM membership WHERE organization_id = ?3),
open_invitation AS (SELECT role FROM invitations WHERE ${IS_OPEN_INVITATION} AND workspace_id = ?4),
verdict AS (SELECT CASE
  WHEN NOT EXISTS (SELECT 1 FROM mine) OR NOT EXISTS (SELECT 1 FROM workspaces WHERE id = ?4 AND organization_id = ?3)
    THEN 'not_found'
  WHEN (SELECT role FROM mine) NOT IN ${ADMIN_ROLES_SQL} THEN 'forbidden'
  WHEN ?7 = 1 AND NOT EXISTS (SELECT 1 FROM open_invitation) THEN 'no_invitation'
  WHEN (SELECT role FROM mine) <> 'owner'
   AND (COALESCE(?6, (SELECT role FROM open_invitation)) = 'owner'
        OR EXISTS (SELECT 1 FROM invitations WHERE ${IS_OPEN_INVITATION} AND role = 'owner'
                    AND expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))) THEN 'forbidden'
  WHEN EXISTS (SELECT 1 FROM organization_members om JOIN users u ON u.id = om.user_id
                WHERE om.organization_id = ?3 AND u.email = ?5) THEN 'member'
  ELSE 'invite' END AS verdict)`;

export type InviteVerdict = "not_found" | "forbidden" | "no_invitation" | "member" | "invite";

export interface IssuedInvitation {
  email: string;
  role: Role;
  organization_id: string;
  workspace_id: string;
  project_id: string;
  expires_at: string;
}

/** An issued invitation, with what its mail names: the organization and the inviter. */
export interface InvitationToMail extends IssuedInvitation {
  organization_name: string;
  invited_by: string;
}

/** When an invitation made now expires: 7 days on (accepting after is a 410). */
const INVITATION_EXPIRY = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+7 days')";

/**
 * Invites `email` (role given), or with `role` null re-sends the open invitation of that email in the workspace
 * (same role), under a new token: any open invitation of that email in the organization is voided in the same
 * transaction, so that its token stops working. `token.mailed`: the token goes to the invited address by mail, so
 * that it alone may make a new account.
 */
export async function issueInvitation(
  db: Queryable,
  caller: Caller,
  target: { organizationId: string; workspaceId: string; email: string },
  role: Role | null,
  token: { hash: string; mailed: boolean },
): Promise<{ verdict: InviteVerdict; invitation: InvitationToMail | null }> {
  const invitationId = uuidv7();
  const bind = [...caller.credentials, target.organizationId, target.workspaceId, target.email, role, role === null ? 1 : 0];
  const [facts, , issued] = await batchAsCaller(db, caller, [
    db.prepare(`WITH ${CALLER_CTE}, ${INVITE_VERDICT} SELECT verdict FROM verdict`).bind(...bind),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${INVITE_VERDICT}
         UPDATE invitations SET voided_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), replaced_by = ?8
          WHERE ${IS_OPEN_INVITATION} AND (SELECT verdict FROM verdict) = 'invite'`,
      )
      .bind(...bind, invitationId),
    // A resend's verdict no longer finds the invitation it voided: that one is found by what replaced it.
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${INVITE_VERDICT}
         INSERT INTO invitations
                (id, organization_id, workspace_id, email, role, token_hash, invited_by, expires_at, token_mailed)
         SELECT ?8, ?3, ?4, ?5, COALESCE(?6, (SELECT role FROM invitations WHERE replaced_by = ?8 AND workspace_id = ?4)), ?9,
                caller.user_id, ${INVITATION_EXPIRY}, ?10
           FROM caller
          WHERE CASE WHEN ?7 = 1 THEN EXISTS (SELECT 1 FROM invitations WHERE replaced_by = ?8 AND workspace_id = ?4)
                     ELSE (SELECT verdict FROM verdict) = 'invite' END
         RETURNING email, role, organization_id, workspace_id, expires_at,
                   (SELECT id FROM projects WHERE workspace_id = ?4 AND is_default = 1) AS project_id,
                   (SELECT name FROM organizations WHERE id = ?3) AS organization_name,
                   (SELECT username FROM users WHERE id = invited_by) AS invited_by`,
      )
      .bind(...bind, invitationId, token.hash, token.mailed ? 1 : 0),
    db
      .prepare(
        // user_id is null until the invitee joins: the event does not tell an admin which emails have an account.
        `WITH ${CALLER_CTE} ${INSERT_EVENT}
         SELECT ?4, 'member.invited', i.organization_id, i.workspace_id, NULL, NULL, ${EVENT_ACTOR},
                json_object('email', i.email, 'user_id', NULL, 'role', i.role,
                            'workspace_id', i.workspace_id, 'resent', json(CASE WHEN ?5 = 1 THEN 'true' ELSE 'false' END))
           FROM invitations i WHERE i.id = ?3 ${EVENT_HANDOFF}`,
      )
      .bind(...caller.credentials, invitationId, uuidv7(), role === null ? 1 : 0),
  ]);
  const verdict = (facts.results[0] as { verdict: InviteVerdict }).verdict;
  return { verdict, invitation: verdict === "invite" ? (issued.results[0] as unknown as InvitationToMail) : null };
}

/**
 * Accepting: ?5 is the token's hash, ?6 the project the client names, ?8 the id a new user would get (never an
 * existing user's, so the verdict stays what it was once that user is made). An email with a user needs that user's
 * own key. An email without one needs no key, and gets a user and its first key, but only with a mailed token (the
 * mailbox's owner is the only one who has it): a token the inviter saw needs the invitee's key too, whether or not
 * the email has an account, and a wrong key is "other_user" for both, so the inviter learns nothing of accounts.
 */
const ACCEPT_VERDICT = `invitation AS (SELECT * FROM invitations WHERE token_hash = ?5 AND organization_id = ?3 AND workspace_id = ?4),
invitee AS (SELECT id FROM users WHERE email = (SELECT email FROM invitation) AND id <> ?8),
verdict AS (SELECT CASE
  WHEN NOT EXISTS (SELECT 1 FROM invitation) THEN 'not_found'
  WHEN (SELECT accepted_at FROM invitation) IS NOT NULL THEN 'used'
  WHEN (SELECT voided_at FROM invitation) IS NOT NULL THEN 'replaced'
  WHEN (SELECT expires_at FROM invitation) <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now') THEN 'expired'
  WHEN NOT EXISTS (SELECT 1 FROM projects WHERE id = ?6 AND workspace_id = ?4) THEN 'no_project'
  WHEN NOT EXISTS (SELECT 1 FROM caller) AND (SELECT token_mailed FROM invitation) = 0 THEN 'key_needed_unmailed'
  WHEN NOT EXISTS (SELECT 1 FROM caller) AND EXISTS (SELECT 1 FROM invitee) THEN 'key_needed'
  WHEN EXISTS (SELECT 1 FROM caller) AND NOT EXISTS (SELECT 1 FROM invitee) AND (SELECT token_mailed FROM invitation) = 1
    THEN 'new_account'
  WHEN EXISTS (SELECT 1 FROM caller) AND (SELECT user_id FROM caller) IS NOT (SELECT id FROM invitee) THEN 'other_user'
  WHEN (SELECT read_only FROM caller) = 1 THEN 'read_only'
  WHEN EXISTS (SELECT 1 FROM organization_members WHERE organization_id = ?3 AND user_id = (SELECT id FROM invitee))
    THEN 'member'
  ELSE 'accept' END AS verdict)`;

export type AcceptVerdict =
  | "not_found"
  | "used"
  | "replaced"
  | "expired"
  | "no_project"
  | "key_needed_unmailed"
  | "key_needed"
  | "new_account"
  | "other_user"
  | "read_only"
  | "member"
  | "accept";

export interface Acceptance {
  user_id: string;
  email: string;
  role: Role;
  organization_id: string;
  workspace_id: string;
  project_id: string;
}

export interface FirstKey {
  prefix: string;
  keyHash: string;
}

/**
 * Accepts the invitation whose token hashes to `tokenHash`, in one batch: for a new email, the user, the membership
 * (named after the email's local part) and `firstKey` (for project `projectId`); for an existing user (`caller`, their key), the membership. `caller`
 * null: no key was presented.
 */
export async function acceptInvitation(
  db: Queryable,
  caller: Caller | null,
  target: { organizationId: string; workspaceId: string; projectId: string },
  tokenHash: string,
  firstKey: FirstKey,
): Promise<{ verdict: AcceptVerdict; acceptance: Acceptance | null; newUser: boolean }> {
  const [acceptanceId, newUserId, keyId] = [uuidv7(), uuidv7(), uuidv7()];
  const bind = [
    ...(caller?.credentials ?? [null, null]),
    target.organizationId,
    target.workspaceId,
    tokenHash,
    target.projectId,
    acceptanceId,
    newUserId,
  ];
  const statements = [
    db.prepare(`WITH ${CALLER_CTE}, ${ACCEPT_VERDICT} SELECT verdict FROM verdict`).bind(...bind),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${ACCEPT_VERDICT}
         INSERT INTO users (id, username, email)
         SELECT ?8, CASE WHEN EXISTS (SELECT 1 FROM users WHERE username = local) THEN local || '-' || substr(?8, -12) ELSE local END,
                email
           FROM (SELECT email, substr(email, 1, instr(email, '@') - 1) AS local FROM invitation)
          WHERE (SELECT verdict FROM verdict) = 'accept' AND NOT EXISTS (SELECT 1 FROM invitee)`,
      )
      .bind(...bind),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${ACCEPT_VERDICT}
         UPDATE invitations SET accepted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
                accepted_by = COALESCE((SELECT id FROM invitee), ?8), acceptance_id = ?7
          WHERE id = (SELECT id FROM invitation) AND (SELECT verdict FROM verdict) = 'accept'`,
      )
      .bind(...bind),
    // The rest act on this request's acceptance only (?1), whatever else the token has seen.
    db
      .prepare(
        `INSERT INTO organization_members (organization_id, user_id, role)
         SELECT organization_id, accepted_by, role FROM invitations WHERE acceptance_id = ?1`,
      )
      .bind(acceptanceId),
    db
      .prepare(
        `INSERT INTO api_keys (id, prefix, key_hash, user_id, project_id)
         SELECT ?2, ?3, ?4, accepted_by, ?5 FROM invitations WHERE acceptance_id = ?1 AND accepted_by = ?6`,
      )
      .bind(acceptanceId, keyId, firstKey.prefix, firstKey.keyHash, target.projectId, newUserId),
    // The joiner acts: with their key, or (a new user, no key) as the user this batch made.
    db
      .prepare(
        `${INSERT_EVENT}
         SELECT ?2, 'member.joined', i.organization_id, i.workspace_id, NULL, NULL, i.accepted_by,
                (SELECT username FROM users WHERE id = i.accepted_by), ?3,
                json_object('email', i.email, 'user_id', i.accepted_by, 'role', i.role, 'workspace_id', i.workspace_id)
           FROM invitations i WHERE i.acceptance_id = ?1 ${EVENT_HANDOFF}`,
      )
      .bind(acceptanceId, uuidv7(), caller?.credentials[0] ?? null),
    db
      .prepare(
        `${INSERT_EVENT}
         SELECT ?2, 'api_key.created', w.organization_id, w.id, p.id, NULL, k.user_id, (SELECT username FROM users WHERE id = k.user_id),
                NULL, json_object('prefix', k.prefix, 'user_id', k.user_id, 'project_id', k.project_id)
           FROM api_keys k JOIN projects p ON p.id = k.project_id JOIN workspaces w ON w.id = p.workspace_id WHERE k.id = ?1 ${EVENT_HANDOFF}`,
      )
      .bind(keyId, uuidv7()),
    db
      .prepare(
        `SELECT accepted_by AS user_id, email, role, organization_id, workspace_id, ?2 AS project_id
           FROM invitations WHERE acceptance_id = ?1`,
      )
      .bind(acceptanceId, target.projectId),
  ];
  const [facts, , , , , , , acceptance] = caller ? await batchAsCaller(db, caller, statements) : await db.batch(statements);
  const verdict = (facts.results[0] as { verdict: AcceptVerdict }).verdict;
  const row = (acceptance.results[0] as unknown as Acceptance | undefined) ?? null;
  return { verdict, acceptance: row, newUser: row?.user_id === newUserId };
}
