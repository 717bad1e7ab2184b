import { newId } from "../db/buckets";
import { CALLER_CTE, COPY_VOUCHED_USER } from "../db/caller";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import type { CallerDb, CallerWriteDb } from "../db/handles";
import { ADMIN_ROLES_SQL, type Role } from "../db/roles";
import { sql } from "../db/sql";

/**
 * Invitations to an organization, through one of its workspaces: :organization_id is the organization,
 * :workspace_id the workspace, :email the invited email. Only the SHA-256 of a token is stored. An invitation is open until accepted or voided (replaced by a
 * resend or a new invitation of the same email); one past expires_at stays open but cannot be accepted.
 */

/** Open invitations of organization :organization_id for email :email. */
const IS_OPEN_INVITATION = "organization_id = :organization_id AND email = :email AND accepted_at IS NULL AND voided_at IS NULL";

/**
 * Whether the caller may (re)send an invitation of role :role through workspace :workspace_id (:role null: the
 * open one's role): admins do, and only an owner invites an owner, or voids (by inviting the email again, in any
 * role and workspace) an owner invitation that can still be accepted. :resend = 1 for a resend, which needs an open
 * invitation there.
 */
const INVITE_VERDICT = `mine AS (SELECT role FROM membership WHERE organization_id = :organization_id),
open_invitation AS (SELECT role FROM invitations WHERE ${IS_OPEN_INVITATION} AND workspace_id = :workspace_id),
verdict AS (SELECT CASE
  WHEN NOT EXISTS (SELECT 1 FROM mine) OR NOT EXISTS (SELECT 1 FROM workspaces WHERE id = :workspace_id AND organization_id = :organization_id)
    THEN 'not_found'
  WHEN (SELECT role FROM mine) NOT IN ${ADMIN_ROLES_SQL} THEN 'forbidden'
  WHEN :resend = 1 AND NOT EXISTS (SELECT 1 FROM open_invitation) THEN 'no_invitation'
  WHEN (SELECT role FROM mine) <> 'owner'
   AND (COALESCE(:role, (SELECT role FROM open_invitation)) = 'owner'
        OR EXISTS (SELECT 1 FROM invitations WHERE ${IS_OPEN_INVITATION} AND role = 'owner'
                    AND expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))) THEN 'forbidden'
  WHEN EXISTS (SELECT 1 FROM organization_members om JOIN users u ON u.id = om.user_id
                WHERE om.organization_id = :organization_id AND u.email = :email) THEN 'member'
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
  db: CallerWriteDb,
  target: { organizationId: string; workspaceId: string; email: string },
  role: Role | null,
  token: { hash: string; mailed: boolean },
): Promise<{ verdict: InviteVerdict; invitation: InvitationToMail | null }> {
  const values = {
    organization_id: target.organizationId,
    workspace_id: target.workspaceId,
    email: target.email,
    role,
    resend: role === null ? 1 : 0,
    invitation_id: newId(db.bucket),
    token_hash: token.hash,
    token_mailed: token.mailed ? 1 : 0,
  };
  const { facts, issued } = await db.batch({
    facts: db.statement(INVITE, values),
    voided: db.statement(VOID_OPEN_INVITATIONS, values),
    issued: db.statement(INSERT_INVITATION, values),
    event: db.statement(MEMBER_INVITED, { ...values, event_id: newId(db.bucket) }),
  });
  const verdict = facts.results[0].verdict;
  return { verdict, invitation: verdict === "invite" ? issued.results[0] : null };
}

const INVITE = sql<{ verdict: InviteVerdict }>(`WITH ${CALLER_CTE}, ${INVITE_VERDICT} SELECT verdict FROM verdict`);

const VOID_OPEN_INVITATIONS = sql(
  `WITH ${CALLER_CTE}, ${INVITE_VERDICT}
   UPDATE invitations SET voided_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), replaced_by = :invitation_id
    WHERE ${IS_OPEN_INVITATION} AND (SELECT verdict FROM verdict) = 'invite'`,
);

// A resend's verdict no longer finds the invitation it voided: that one is found by what replaced it.
const INSERT_INVITATION = sql<InvitationToMail>(
  `WITH ${CALLER_CTE}, ${INVITE_VERDICT}
   INSERT INTO invitations
          (id, organization_id, workspace_id, email, role, token_hash, invited_by, expires_at, token_mailed)
   SELECT :invitation_id, :organization_id, :workspace_id, :email,
          COALESCE(:role, (SELECT role FROM invitations WHERE replaced_by = :invitation_id AND workspace_id = :workspace_id)),
          :token_hash, caller.user_id, ${INVITATION_EXPIRY}, :token_mailed
     FROM caller
    WHERE CASE WHEN :resend = 1 THEN EXISTS (SELECT 1 FROM invitations WHERE replaced_by = :invitation_id AND workspace_id = :workspace_id)
               ELSE (SELECT verdict FROM verdict) = 'invite' END
   RETURNING email, role, organization_id, workspace_id, expires_at,
             (SELECT id FROM projects WHERE workspace_id = :workspace_id AND is_default = 1) AS project_id,
             (SELECT name FROM organizations WHERE id = :organization_id) AS organization_name,
             (SELECT username FROM users WHERE id = invited_by) AS invited_by`,
);

// user_id is null until the invitee joins: the event does not tell an admin which emails have an account.
const MEMBER_INVITED = sql(
  `WITH ${CALLER_CTE} ${INSERT_EVENT}
   SELECT :event_id, 'member.invited', i.organization_id, i.workspace_id, NULL, NULL, ${EVENT_ACTOR},
          json_object('email', i.email, 'user_id', NULL, 'role', i.role,
                      'workspace_id', i.workspace_id, 'resent', json(CASE WHEN :resend = 1 THEN 'true' ELSE 'false' END))
     FROM invitations i WHERE i.id = :invitation_id ${EVENT_HANDOFF}`,
);

/**
 * Accepting: :token_hash is the token's hash, :project_id the project the client names, :new_user_id the id a new
 * user would get (never an existing user's, so the verdict stays what it was once that user is made). An email with a user needs that user's
 * own key. An email without one needs no key, and gets a user and its first key, but only with a mailed token (the
 * mailbox's owner is the only one who has it): a token the inviter saw needs the invitee's key too, whether or not
 * the email has an account, and a wrong key is "other_user" for both, so the inviter learns nothing of accounts.
 */
const ACCEPT_VERDICT = `invitation AS (SELECT * FROM invitations WHERE token_hash = :token_hash AND organization_id = :organization_id AND workspace_id = :workspace_id),
invitee AS (SELECT id FROM users WHERE email = (SELECT email FROM invitation) AND id <> :new_user_id
            UNION SELECT :email_holder WHERE :email_holder IS NOT NULL),
verdict AS (SELECT CASE
  WHEN NOT EXISTS (SELECT 1 FROM invitation) THEN 'not_found'
  WHEN (SELECT accepted_at FROM invitation) IS NOT NULL THEN 'used'
  WHEN (SELECT voided_at FROM invitation) IS NOT NULL THEN 'replaced'
  WHEN (SELECT expires_at FROM invitation) <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now') THEN 'expired'
  WHEN NOT EXISTS (SELECT 1 FROM projects WHERE id = :project_id AND workspace_id = :workspace_id) THEN 'no_project'
  WHEN NOT EXISTS (SELECT 1 FROM caller) AND (SELECT token_mailed FROM invitation) = 0 THEN 'key_needed_unmailed'
  WHEN NOT EXISTS (SELECT 1 FROM caller) AND EXISTS (SELECT 1 FROM invitee) THEN 'key_needed'
  WHEN EXISTS (SELECT 1 FROM caller) AND NOT EXISTS (SELECT 1 FROM invitee) AND (SELECT token_mailed FROM invitation) = 1
    THEN 'new_account'
  WHEN EXISTS (SELECT 1 FROM caller) AND (SELECT user_id FROM caller) IS NOT (SELECT id FROM invitee) THEN 'other_user'
  WHEN (SELECT read_only FROM caller) = 1 THEN 'read_only'
  WHEN EXISTS (SELECT 1 FROM organization_members WHERE organization_id = :organization_id AND user_id = (SELECT id FROM invitee))
    THEN 'member'
  WHEN NOT EXISTS (SELECT 1 FROM invitee) AND :claim_until <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now') THEN 'claim_lapsed'
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
  | "claim_lapsed"
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

const ACCEPT = sql<{ verdict: AcceptVerdict }>(`WITH ${CALLER_CTE}, ${ACCEPT_VERDICT} SELECT verdict FROM verdict`);

// A caller homed on another shard, invited by their email: their user row first, so that the verdict finds them the
// invitee, when the invitation would be accepted (the verdict's conditions for a user with a key).
const COPY_INVITEE = sql(
  `WITH invitation AS (SELECT * FROM invitations WHERE token_hash = :token_hash AND organization_id = :organization_id AND workspace_id = :workspace_id)
   ${COPY_VOUCHED_USER} AND :vouched_read_only = 0 AND (SELECT email FROM invitation) = :vouched_email COLLATE NOCASE
     AND (SELECT accepted_at IS NULL AND voided_at IS NULL AND expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now') FROM invitation)
     AND EXISTS (SELECT 1 FROM projects WHERE id = :project_id AND workspace_id = :workspace_id)`,
);

const INSERT_INVITEE = sql(
  `WITH ${CALLER_CTE}, ${ACCEPT_VERDICT}
   INSERT INTO users (id, username, email, created_at)
   SELECT :new_user_id,
          CASE WHEN EXISTS (SELECT 1 FROM users WHERE username = COALESCE(:new_username, local))
               THEN local || '-' || substr(:new_user_id, -12) ELSE COALESCE(:new_username, local) END,
          email, COALESCE(:new_created_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
     FROM (SELECT email, substr(email, 1, instr(email, '@') - 1) AS local FROM invitation)
    WHERE (SELECT verdict FROM verdict) = 'accept' AND NOT EXISTS (SELECT 1 FROM invitee)`,
);

const MARK_ACCEPTED = sql(
  `WITH ${CALLER_CTE}, ${ACCEPT_VERDICT}
   UPDATE invitations SET accepted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
          accepted_by = COALESCE((SELECT id FROM invitee), :new_user_id), acceptance_id = :acceptance_id
    WHERE id = (SELECT id FROM invitation) AND (SELECT verdict FROM verdict) = 'accept'`,
);

// The rest act on this request's acceptance only (:acceptance_id), whatever else the token has seen.
const INSERT_MEMBERSHIP = sql(
  `INSERT INTO organization_members (organization_id, user_id, role)
   SELECT organization_id, accepted_by, role FROM invitations WHERE acceptance_id = :acceptance_id`,
);

const INSERT_FIRST_KEY = sql(
  `INSERT INTO api_keys (id, prefix, key_hash, user_id, project_id)
   SELECT :key_id, :prefix, :key_hash, accepted_by, :project_id FROM invitations
    WHERE acceptance_id = :acceptance_id AND accepted_by = :new_user_id`,
);

// The joiner acts: with their key, or (a new user, no key) as the user this batch made.
const MEMBER_JOINED = sql(
  `${INSERT_EVENT}
   SELECT :event_id, 'member.joined', i.organization_id, i.workspace_id, NULL, NULL, i.accepted_by,
          (SELECT username FROM users WHERE id = i.accepted_by), :caller_prefix,
          json_object('email', i.email, 'user_id', i.accepted_by, 'role', i.role, 'workspace_id', i.workspace_id)
     FROM invitations i WHERE i.acceptance_id = :acceptance_id ${EVENT_HANDOFF}`,
);

const FIRST_KEY_CREATED = sql(
  `${INSERT_EVENT}
   SELECT :event_id, 'api_key.created', w.organization_id, w.id, p.id, NULL, k.user_id, (SELECT username FROM users WHERE id = k.user_id),
          NULL, json_object('prefix', k.prefix, 'user_id', k.user_id, 'project_id', k.project_id)
     FROM api_keys k JOIN projects p ON p.id = k.project_id JOIN workspaces w ON w.id = p.workspace_id WHERE k.id = :key_id ${EVENT_HANDOFF}`,
);

const ACCEPTANCE = sql<Acceptance>(
  `SELECT accepted_by AS user_id, email, role, organization_id, workspace_id, :project_id AS project_id
     FROM invitations WHERE acceptance_id = :acceptance_id`,
);

/**
 * What the directory said of the invited email before a keyless accept (docs/SHARDING.md §3.3), for the user the
 * accept would make (`id`): claimed for it (its `username` and `createdAt`, until `claimUntil`), or held by another user
 * (`emailHolder`), or not asked (all null but `id`: an accept with a key makes no user).
 */
export interface NewInvitee {
  id: string;
  username: string | null;
  createdAt: string | null;
  claimUntil: string | null;
  emailHolder: string | null;
}

/**
 * Accepts the invitation whose token hashes to `tokenHash`, in one batch: for a new email, the user (`newInvitee`),
 * the membership and `firstKey` (for project `projectId`); for an existing user (the caller, by their key), the
 * membership. The caller may be `Caller.nobody`: no key was presented. A claim that lapsed refuses the batch
 * ('claim_lapsed'): the directory may have given the email to another since.
 */
// The invitation an accept names (docs/SHARDING.md §3.3: the directory is asked about its email first).
const INVITATION_BY_TOKEN = sql<{ id: string; email: string }>(
  `SELECT id, email FROM invitations WHERE token_hash = :token_hash AND organization_id = :organization_id AND workspace_id = :workspace_id`,
);

/** The id and email of the invitation whose token hashes to `tokenHash` through this organization and workspace. */
export async function invitationByToken(
  db: CallerDb,
  target: { organizationId: string; workspaceId: string },
  tokenHash: string,
): Promise<{ id: string; email: string } | null> {
  const values = { token_hash: tokenHash, organization_id: target.organizationId, workspace_id: target.workspaceId };
  const { invitation } = await db.batch({ invitation: db.statement(INVITATION_BY_TOKEN, values) });
  return invitation.results[0] ?? null;
}

export async function acceptInvitation(
  db: CallerWriteDb,
  target: { organizationId: string; workspaceId: string; projectId: string },
  tokenHash: string,
  firstKey: FirstKey,
  newInvitee: NewInvitee,
): Promise<{ verdict: AcceptVerdict; acceptance: Acceptance | null; newUser: boolean }> {
  const newUserId = newInvitee.id;
  const values = {
    organization_id: target.organizationId,
    workspace_id: target.workspaceId,
    token_hash: tokenHash,
    project_id: target.projectId,
    acceptance_id: newId(db.bucket),
    new_user_id: newUserId,
    new_username: newInvitee.username,
    new_created_at: newInvitee.createdAt,
    claim_until: newInvitee.claimUntil,
    email_holder: newInvitee.emailHolder,
    key_id: newId(db.bucket),
    prefix: firstKey.prefix,
    key_hash: firstKey.keyHash,
  };
  const { facts, acceptance } = await db.batch({
    inviteeCopy: db.statement(COPY_INVITEE, values),
    facts: db.statement(ACCEPT, values),
    invitee: db.statement(INSERT_INVITEE, values),
    accepted: db.statement(MARK_ACCEPTED, values),
    membership: db.statement(INSERT_MEMBERSHIP, values),
    key: db.statement(INSERT_FIRST_KEY, values),
    joined: db.statement(MEMBER_JOINED, { ...values, event_id: newId(db.bucket) }),
    keyCreated: db.statement(FIRST_KEY_CREATED, { ...values, event_id: newId(db.bucket) }),
    acceptance: db.statement(ACCEPTANCE, values),
  });
  const row = acceptance.results[0] ?? null;
  return { verdict: facts.results[0].verdict, acceptance: row, newUser: row?.user_id === newUserId };
}
