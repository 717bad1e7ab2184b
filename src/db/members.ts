import { v7 as uuidv7 } from "uuid";
import { batchAsCaller, CALLER_CTE, type Caller } from "./caller";
import type { Queryable } from "./d1";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "./events";
import { type MemberRow, toWorkspace, type WorkspaceDetails, workspaceStatements } from "./organizations";
import { ADMIN_ROLES_SQL, type Role } from "./roles";

/**
 * Changing a member's role, or removing them, through workspace ?4 of organization ?3 (roles are per
 * organization). ?5 is the member's email, ?6 the new role (null: removal), ?7 the role the member must have for
 * anything to change (null: any). The verdict is decided once, here, inside the write's own transaction: the facts
 * read and the write both go by it, so that two owners demoting each other at the same moment leave one owner.
 */
const MEMBER_VERDICT = `target AS (
  SELECT om.user_id, om.role FROM organization_members om JOIN users u ON u.id = om.user_id
   WHERE om.organization_id = ?3 AND u.email = ?5),
mine AS (SELECT role FROM membership WHERE organization_id = ?3),
verdict AS (SELECT CASE
  WHEN NOT EXISTS (SELECT 1 FROM mine) OR NOT EXISTS (SELECT 1 FROM workspaces WHERE id = ?4 AND organization_id = ?3)
    THEN 'not_found'
  WHEN (SELECT role FROM mine) NOT IN ${ADMIN_ROLES_SQL} THEN 'forbidden'
  WHEN NOT EXISTS (SELECT 1 FROM target) THEN 'no_member'
  WHEN ?7 IS NOT NULL AND (SELECT role FROM target) <> ?7 THEN 'unchanged'
  WHEN (SELECT role FROM target) = ?6 THEN 'unchanged'
  WHEN (?6 = 'owner' OR (SELECT role FROM target) = 'owner') AND (SELECT role FROM mine) <> 'owner' THEN 'forbidden'
  WHEN (SELECT role FROM target) = 'owner' AND NOT EXISTS (
         SELECT 1 FROM organization_members
          WHERE organization_id = ?3 AND role = 'owner' AND user_id <> (SELECT user_id FROM target))
    THEN 'last_owner'
  ELSE 'change' END AS verdict)`;

export type MemberVerdict = "not_found" | "forbidden" | "no_member" | "unchanged" | "last_owner" | "change";

interface MemberChange {
  organizationId: string;
  workspaceId: string;
  email: string;
}

const bindings = (caller: Caller, change: MemberChange, to: Role | null, onlyFrom: Role | null) =>
  [...caller.credentials, change.organizationId, change.workspaceId, change.email, to, onlyFrom] as const;

const verdictOf = (facts: D1Result) => (facts.results[0] as { verdict: MemberVerdict }).verdict;

/**
 * Gives the member role `to`, or with `onlyFrom`, only if that is their role now (unassigning a role makes its
 * holder a viewer, the platform's rule). Only an owner grants or removes `owner`; the last owner keeps it.
 */
export async function changeMemberRole(
  db: Queryable,
  caller: Caller,
  change: MemberChange,
  to: Role,
  onlyFrom: Role | null = null,
): Promise<{ verdict: MemberVerdict; member: MemberRow | null }> {
  const bind = bindings(caller, change, to, onlyFrom);
  const [facts, , , member] = await batchAsCaller(db, caller, [
    db.prepare(`WITH ${CALLER_CTE}, ${MEMBER_VERDICT} SELECT verdict FROM verdict`).bind(...bind),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${MEMBER_VERDICT} ${INSERT_EVENT}
         SELECT ?8, 'member.role_changed', ?3, ?4, NULL, NULL, ${EVENT_ACTOR},
                json_object('email', ?5, 'user_id', target.user_id, 'role', ?6, 'previous_role', target.role, 'workspace_id', ?4)
           FROM target WHERE (SELECT verdict FROM verdict) = 'change' ${EVENT_HANDOFF}`,
      )
      .bind(...bind, uuidv7()),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${MEMBER_VERDICT}
         UPDATE organization_members SET role = ?6
          WHERE organization_id = ?3 AND user_id = (SELECT user_id FROM target) AND (SELECT verdict FROM verdict) = 'change'`,
      )
      .bind(...bind),
    db
      .prepare(
        `WITH ${CALLER_CTE}
         SELECT u.id, u.email, u.username, om.role FROM organization_members om JOIN users u ON u.id = om.user_id
          WHERE om.organization_id = ?3 AND u.email = ?4 AND EXISTS (SELECT 1 FROM membership WHERE organization_id = ?3)`,
      )
      .bind(...caller.credentials, change.organizationId, change.email),
  ]);
  return { verdict: verdictOf(facts), member: (member.results[0] as unknown as MemberRow | undefined) ?? null };
}

/**
 * Removes the member from the organization and, in the same transaction, revokes their keys for its projects.
 * Removing an owner takes an owner; the last owner stays. Answers the workspace as it is after: read before the
 * removal (a member who removes themselves can no longer read it), without the member removed.
 */
export async function removeMember(
  db: Queryable,
  caller: Caller,
  change: MemberChange,
): Promise<{ verdict: MemberVerdict; workspace: WorkspaceDetails | null }> {
  const bind = bindings(caller, change, null, null);
  const [facts, ...rest] = await batchAsCaller(db, caller, [
    db.prepare(`WITH ${CALLER_CTE}, ${MEMBER_VERDICT} SELECT verdict FROM verdict`).bind(...bind),
    ...workspaceStatements(db, caller, change.workspaceId),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${MEMBER_VERDICT} ${INSERT_EVENT}
         SELECT ?8, 'member.removed', ?3, ?4, NULL, NULL, ${EVENT_ACTOR},
                json_object('email', ?5, 'user_id', target.user_id, 'role', target.role, 'workspace_id', ?4)
           FROM target WHERE (SELECT verdict FROM verdict) = 'change' ${EVENT_HANDOFF}`,
      )
      .bind(...bind, uuidv7()),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${MEMBER_VERDICT}
         DELETE FROM organization_members
          WHERE organization_id = ?3 AND user_id = (SELECT user_id FROM target) AND (SELECT verdict FROM verdict) = 'change'`,
      )
      .bind(...bind),
    // Then their keys for the organization's projects: whoever is no longer a member there. Not by the verdict, nor
    // behind the caller's key: a member who removes themselves may have used one of those very keys.
    db
      .prepare(
        `UPDATE api_keys SET revoked_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
          WHERE user_id = (SELECT id FROM users WHERE email = ?2) AND revoked_at IS NULL
            AND project_id IN (SELECT p.id FROM projects p JOIN workspaces w ON w.id = p.workspace_id WHERE w.organization_id = ?1)
            AND NOT EXISTS (SELECT 1 FROM organization_members WHERE organization_id = ?1 AND user_id = api_keys.user_id)`,
      )
      .bind(change.organizationId, change.email),
  ]);
  const verdict = verdictOf(facts);
  const workspace = toWorkspace(rest.slice(0, 2));
  if (workspace && verdict === "change") {
    const removed = workspace.members.findIndex((member) => member.email.toLowerCase() === change.email.toLowerCase());
    workspace.members.splice(removed, 1);
  }
  return { verdict, workspace };
}
