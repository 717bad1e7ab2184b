import { newId } from "../db/buckets";
import { CALLER_CTE } from "../db/caller";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import type { CallerWriteDb } from "../db/handles";
import { ADMIN_ROLES_SQL, type Role } from "../db/roles";
import { sql } from "../db/sql";
import { type MemberRow, toWorkspace, type WorkspaceDetails, workspaceStatements } from "./workspaces.sql.ts";

/**
 * Changing a member's role, or removing them, through workspace :workspace_id of organization :organization_id
 * (roles are per organization). :email is the member's email, :to_role the new role (null: removal), :only_from the
 * role the member must have for anything to change (null: any). The verdict is decided once, here, inside the write's own transaction: the facts
 * read and the write both go by it, so that two owners demoting each other at the same moment leave one owner.
 */
const MEMBER_VERDICT = `target AS (
  SELECT om.user_id, om.role FROM organization_members om JOIN users u ON u.id = om.user_id
   WHERE om.organization_id = :organization_id AND u.email = :email),
mine AS (SELECT role FROM membership WHERE organization_id = :organization_id),
verdict AS (SELECT CASE
  WHEN NOT EXISTS (SELECT 1 FROM mine) OR NOT EXISTS (SELECT 1 FROM workspaces WHERE id = :workspace_id AND organization_id = :organization_id)
    THEN 'not_found'
  WHEN (SELECT role FROM mine) NOT IN ${ADMIN_ROLES_SQL} THEN 'forbidden'
  WHEN NOT EXISTS (SELECT 1 FROM target) THEN 'no_member'
  WHEN :only_from IS NOT NULL AND (SELECT role FROM target) <> :only_from THEN 'unchanged'
  WHEN (SELECT role FROM target) = :to_role THEN 'unchanged'
  WHEN (:to_role = 'owner' OR (SELECT role FROM target) = 'owner') AND (SELECT role FROM mine) <> 'owner' THEN 'forbidden'
  WHEN (SELECT role FROM target) = 'owner' AND NOT EXISTS (
         SELECT 1 FROM organization_members
          WHERE organization_id = :organization_id AND role = 'owner' AND user_id <> (SELECT user_id FROM target))
    THEN 'last_owner'
  ELSE 'change' END AS verdict)`;

export type MemberVerdict = "not_found" | "forbidden" | "no_member" | "unchanged" | "last_owner" | "change";

interface MemberChange {
  organizationId: string;
  workspaceId: string;
  email: string;
}

const changeValues = (change: MemberChange, to: Role | null, onlyFrom: Role | null) => ({
  organization_id: change.organizationId,
  workspace_id: change.workspaceId,
  email: change.email,
  to_role: to,
  only_from: onlyFrom,
});

const VERDICT = sql<{ verdict: MemberVerdict }>(`WITH ${CALLER_CTE}, ${MEMBER_VERDICT} SELECT verdict FROM verdict`);

const ROLE_CHANGED = sql(
  `WITH ${CALLER_CTE}, ${MEMBER_VERDICT} ${INSERT_EVENT}
   SELECT :event_id, 'member.role_changed', :organization_id, :workspace_id, NULL, NULL, ${EVENT_ACTOR},
          json_object('email', :email, 'user_id', target.user_id, 'role', :to_role, 'previous_role', target.role, 'workspace_id', :workspace_id)
     FROM target WHERE (SELECT verdict FROM verdict) = 'change' ${EVENT_HANDOFF}`,
);

const CHANGE_ROLE = sql(
  `WITH ${CALLER_CTE}, ${MEMBER_VERDICT}
   UPDATE organization_members SET role = :to_role
    WHERE organization_id = :organization_id AND user_id = (SELECT user_id FROM target) AND (SELECT verdict FROM verdict) = 'change'`,
);

const MEMBER = sql<MemberRow>(
  `WITH ${CALLER_CTE}
   SELECT u.id, u.email, u.username, om.role FROM organization_members om JOIN users u ON u.id = om.user_id
    WHERE om.organization_id = :organization_id AND u.email = :email
      AND EXISTS (SELECT 1 FROM membership WHERE organization_id = :organization_id)`,
);

const MEMBER_REMOVED = sql(
  `WITH ${CALLER_CTE}, ${MEMBER_VERDICT} ${INSERT_EVENT}
   SELECT :event_id, 'member.removed', :organization_id, :workspace_id, NULL, NULL, ${EVENT_ACTOR},
          json_object('email', :email, 'user_id', target.user_id, 'role', target.role, 'workspace_id', :workspace_id)
     FROM target WHERE (SELECT verdict FROM verdict) = 'change' ${EVENT_HANDOFF}`,
);

const REMOVE_MEMBER = sql(
  `WITH ${CALLER_CTE}, ${MEMBER_VERDICT}
   DELETE FROM organization_members
    WHERE organization_id = :organization_id AND user_id = (SELECT user_id FROM target) AND (SELECT verdict FROM verdict) = 'change'`,
);

/** The live keys of the member :email for the organization's projects. */
const MEMBER_KEYS = `user_id = (SELECT id FROM users WHERE email = :email) AND revoked_at IS NULL
      AND project_id IN (SELECT p.id FROM projects p JOIN workspaces w ON w.id = p.workspace_id WHERE w.organization_id = :organization_id)`;

// Then their keys for the organization's projects: whoever is no longer a member there. Not by the verdict, nor
// behind the caller's key: a member who removes themselves may have used one of those very keys.
const REVOKE_FORMER_MEMBER_KEYS = sql(
  `UPDATE api_keys SET revoked_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
    WHERE ${MEMBER_KEYS}
      AND NOT EXISTS (SELECT 1 FROM organization_members WHERE organization_id = :organization_id AND user_id = api_keys.user_id)`,
);

/**
 * Gives the member role `to`, or with `onlyFrom`, only if that is their role now (unassigning a role makes its
 * holder a viewer, the platform's rule). Only an owner grants or removes `owner`; the last owner keeps it.
 */
export async function changeMemberRole(
  db: CallerWriteDb,
  change: MemberChange,
  to: Role,
  onlyFrom: Role | null = null,
): Promise<{ verdict: MemberVerdict; member: MemberRow | null }> {
  const values = changeValues(change, to, onlyFrom);
  const { facts, member } = await db.batch({
    facts: db.statement(VERDICT, values),
    event: db.statement(ROLE_CHANGED, { ...values, event_id: newId(db.bucket) }),
    change: db.statement(CHANGE_ROLE, values),
    member: db.statement(MEMBER, values),
  });
  return { verdict: facts.results[0].verdict, member: member.results[0] ?? null };
}

/**
 * Removes the member from the organization and, in the same transaction, revokes their keys for its projects.
 * Removing an owner takes an owner; the last owner stays. Answers the workspace as it is after: read before the
 * removal (a member who removes themselves can no longer read it), without the member removed.
 */
export async function removeMember(
  db: CallerWriteDb,
  change: MemberChange,
): Promise<{ verdict: MemberVerdict; workspace: WorkspaceDetails | null }> {
  const values = changeValues(change, null, null);
  const { facts, ...rest } = await db.batch({
    facts: db.statement(VERDICT, values),
    ...workspaceStatements(db, change.workspaceId),
    event: db.statement(MEMBER_REMOVED, { ...values, event_id: newId(db.bucket) }),
    removal: db.statement(REMOVE_MEMBER, values),
    keys: db.statement(REVOKE_FORMER_MEMBER_KEYS, values),
  });
  const verdict = facts.results[0].verdict;
  const workspace = toWorkspace(rest);
  if (workspace && verdict === "change") {
    const removed = workspace.members.findIndex((member) => member.email.toLowerCase() === change.email.toLowerCase());
    workspace.members.splice(removed, 1);
  }
  return { verdict, workspace };
}

/** The keys a removal (:to_role null) would revoke; none for a change of role. */
const KEYS_TO_REVOKE = sql<{ keys: number }>(`SELECT count(*) AS keys FROM api_keys WHERE ${MEMBER_KEYS} AND :to_role IS NULL`);

export interface MemberPreview {
  verdict: MemberVerdict;
  /** The member as they are now. */
  member: MemberRow | null;
  /** How many of their keys the call would revoke. */
  keys: number;
}

/**
 * The dry-run of `changeMemberRole` (`to`, `onlyFrom`) or, `to` null, of `removeMember`: its verdict, the member as
 * they are and the keys it would revoke; one read, nothing written.
 */
export async function previewMemberChange(
  db: CallerWriteDb,
  change: MemberChange,
  to: Role | null,
  onlyFrom: Role | null = null,
): Promise<MemberPreview> {
  const values = changeValues(change, to, onlyFrom);
  const { facts, member, keys } = await db.batch({
    facts: db.statement(VERDICT, values),
    member: db.statement(MEMBER, values),
    keys: db.statement(KEYS_TO_REVOKE, values),
  });
  return { verdict: facts.results[0].verdict, member: member.results[0] ?? null, keys: keys.results[0].keys };
}
