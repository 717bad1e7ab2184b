import { v7 as uuidv7 } from "uuid";
import { batchAsCaller, CALLER_CTE, type Caller } from "./caller";
import type { Queryable } from "./d1";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "./events";
import { ADMIN_ROLES, ADMIN_ROLES_SQL, type Role } from "./roles";

/**
 * Organizations and their workspaces as the caller sees them. Statements bind the key as ?1 and ?2 (CALLER_CTE),
 * the organization as ?3 and the workspace as ?4. Members and roles are per organization: every workspace of an
 * organization has the organization's members.
 */

/**
 * An update's event data: the row `o` before, and after with the new values (name, description, type), bound as the
 * three parameters after the ids (?4 to ?6 for an organization, ?5 to ?7 for a workspace; null: unchanged).
 */
const BEFORE_AND_AFTER = `'before', json_object('name', o.name, 'description', o.description, 'type', o.type),
  'after', json_object('name', COALESCE(?4, o.name), 'description', COALESCE(?5, o.description), 'type', COALESCE(?6, o.type))`;
const BEFORE_AND_AFTER_WORKSPACE = `'before', json_object('name', o.name, 'description', o.description, 'type', o.type),
  'after', json_object('name', COALESCE(?5, o.name), 'description', COALESCE(?6, o.description), 'type', COALESCE(?7, o.type))`;
/** Whether an update of organization `o` to ?4-?6 changes it: one that does not records no event (docs/EVENTS.md). */
const ORGANIZATION_CHANGES = `(COALESCE(?4, o.name) IS NOT o.name OR COALESCE(?5, o.description) IS NOT o.description
  OR COALESCE(?6, o.type) IS NOT o.type)`;
/** The same for workspace `o` and ?5-?7. */
const WORKSPACE_CHANGES = `(COALESCE(?5, o.name) IS NOT o.name OR COALESCE(?6, o.description) IS NOT o.description
  OR COALESCE(?7, o.type) IS NOT o.type)`;
const NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/** An organization as lists show it: its workspaces and members by id, and the role the caller acts in there. */
export interface OrganizationRow {
  id: string;
  name: string;
  description: string;
  type: string | null;
  owner: string;
  is_personal: boolean;
  created_at: string;
  updated_at: string;
  role: Role;
  workspaces: string[];
  members: string[];
}

export interface WorkspaceRow {
  id: string;
  name: string;
  description: string;
  type: string | null;
  organization: string;
  default_project_id: string;
  created_at: string;
  updated_at: string;
}

export interface MemberRow {
  id: string;
  email: string;
  username: string;
  role: Role;
}

/** The organizations the caller belongs to, with the caller's role: rows for OrganizationRow (see `toOrganization`). */
const ORGANIZATIONS = `SELECT o.id, o.name, o.description, o.type, o.is_personal, o.created_at,
       COALESCE(o.updated_at, o.created_at) AS updated_at, m.role,
       (SELECT user_id FROM organization_members WHERE organization_id = o.id AND role = 'owner'
         ORDER BY created_at, user_id LIMIT 1) AS owner,
       (SELECT json_group_array(id) FROM (SELECT id FROM workspaces WHERE organization_id = o.id ORDER BY created_at, id)) AS workspaces,
       (SELECT json_group_array(user_id) FROM (SELECT user_id FROM organization_members WHERE organization_id = o.id
         ORDER BY created_at, user_id)) AS members
  FROM organizations o JOIN membership m ON m.organization_id = o.id`;

type StoredOrganization = Omit<OrganizationRow, "is_personal" | "workspaces" | "members"> & {
  is_personal: number;
  workspaces: string;
  members: string;
};

const toOrganization = (row: StoredOrganization): OrganizationRow => ({
  ...row,
  is_personal: row.is_personal === 1,
  workspaces: JSON.parse(row.workspaces),
  members: JSON.parse(row.members),
});

const WORKSPACES = `SELECT w.id, w.name, w.description, w.type, w.organization_id AS organization,
       (SELECT id FROM projects WHERE workspace_id = w.id AND is_default = 1) AS default_project_id,
       w.created_at, COALESCE(w.updated_at, w.created_at) AS updated_at
  FROM workspaces w JOIN membership m ON m.organization_id = w.organization_id`;

/** The members of an organization the caller belongs to, oldest first; complete with `WHERE om.organization_id = ...`. */
const MEMBERS = `SELECT u.id, u.email, u.username, om.role
  FROM organization_members om JOIN users u ON u.id = om.user_id JOIN membership m ON m.organization_id = om.organization_id`;

export async function listOrganizations(db: Queryable, caller: Caller): Promise<OrganizationRow[]> {
  const [rows] = await batchAsCaller<StoredOrganization>(db, caller, [
    db.prepare(`WITH ${CALLER_CTE} ${ORGANIZATIONS} ORDER BY o.created_at, o.id`).bind(...caller.credentials),
  ]);
  return rows.results.map(toOrganization);
}

/** The caller's own organization: their personal one, else (a user who joined by invitation) the key's. */
export async function fetchOwnOrganization(db: Queryable, caller: Caller): Promise<{ id: string; name: string } | null> {
  const [rows] = await batchAsCaller<{ id: string; name: string }>(db, caller, [
    db
      .prepare(
        `WITH ${CALLER_CTE}
         SELECT o.id, o.name FROM organizations o JOIN organization_members om ON om.organization_id = o.id
          WHERE om.user_id = (SELECT user_id FROM caller)
            AND ((o.is_personal = 1 AND om.role = 'owner')
                 OR o.id = (SELECT w.organization_id FROM projects p JOIN workspaces w ON w.id = p.workspace_id
                             WHERE p.id = (SELECT project_id FROM caller)))
          ORDER BY o.is_personal DESC, o.created_at LIMIT 1`,
      )
      .bind(...caller.credentials),
  ]);
  return rows.results[0] ?? null;
}

export interface OrganizationDetails {
  organization: OrganizationRow;
  workspaces: WorkspaceRow[];
  members: MemberRow[];
  /** Open invitations, for the organization's admins (none for other roles). */
  invitations: { email: string; role: Role; workspace_id: string; created_at: string; expires_at: string }[];
}

/** Statements reading organization ?3 whole, to end a batch with; read by `toDetails`. */
function detailsStatements(db: Queryable, caller: Caller, organizationId: string) {
  const bind = [...caller.credentials, organizationId];
  return [
    db.prepare(`WITH ${CALLER_CTE} ${ORGANIZATIONS} WHERE o.id = ?3`).bind(...bind),
    db.prepare(`WITH ${CALLER_CTE} ${WORKSPACES} WHERE w.organization_id = ?3 ORDER BY w.created_at, w.id`).bind(...bind),
    db.prepare(`WITH ${CALLER_CTE} ${MEMBERS} WHERE om.organization_id = ?3 ORDER BY om.created_at, u.id`).bind(...bind),
    db
      .prepare(
        `WITH ${CALLER_CTE}
         SELECT email, role, workspace_id, created_at, expires_at FROM invitations
          WHERE organization_id = ?3 AND accepted_at IS NULL AND voided_at IS NULL
            AND (SELECT read_role FROM membership WHERE organization_id = ?3) IN ${ADMIN_ROLES_SQL}
          ORDER BY created_at, id`,
      )
      .bind(...bind),
  ];
}

function toDetails([organization, workspaces, members, invitations]: D1Result[]): OrganizationDetails | null {
  const row = organization.results[0] as StoredOrganization | undefined;
  if (!row) return null;
  return {
    organization: toOrganization(row),
    workspaces: workspaces.results as unknown as WorkspaceRow[],
    members: members.results as unknown as MemberRow[],
    invitations: invitations.results as unknown as OrganizationDetails["invitations"],
  };
}

export async function fetchOrganization(
  db: Queryable,
  caller: Caller,
  organizationId: string,
): Promise<OrganizationDetails | null> {
  return toDetails(await batchAsCaller(db, caller, detailsStatements(db, caller, organizationId)));
}

export interface OrganizationFields {
  name?: string;
  description?: string;
  type?: string;
}

/**
 * A new organization owned by the caller, with its default workspace and project, in one batch. `owner` (the
 * client's required field) must name the caller, by id or email: nobody makes someone else an owner.
 */
export async function createOrganizationAsCaller(
  db: Queryable,
  caller: Caller,
  fields: OrganizationFields & { name: string; owner: string },
): Promise<{ outcome: "done"; organization: OrganizationRow } | { outcome: "forbidden" | "not_the_caller" }> {
  const [organizationId, workspaceId, projectId] = [uuidv7(), uuidv7(), uuidv7()];
  const made = "EXISTS (SELECT 1 FROM organizations WHERE id = ?3)";
  const bind = [...caller.credentials, organizationId];
  const [facts, , , , , organization] = await batchAsCaller(db, caller, [
    db
      .prepare(
        `WITH ${CALLER_CTE}
         SELECT caller.read_only AS readOnly, (u.id = ?3 OR u.email = ?3) AS isCaller
           FROM caller JOIN users u ON u.id = caller.user_id`,
      )
      .bind(...caller.credentials, fields.owner),
    db
      .prepare(
        `WITH ${CALLER_CTE}
         INSERT INTO organizations (id, name, description, type)
         SELECT ?3, ?4, ?5, ?6 FROM caller JOIN users u ON u.id = caller.user_id
          WHERE caller.read_only = 0 AND (u.id = ?7 OR u.email = ?7)`,
      )
      .bind(...bind, fields.name, fields.description ?? "", fields.type ?? null, fields.owner),
    db
      .prepare(
        `WITH ${CALLER_CTE}
         INSERT INTO organization_members (organization_id, user_id, role) SELECT ?3, user_id, 'owner' FROM caller WHERE ${made}`,
      )
      .bind(...bind),
    db
      .prepare(`INSERT INTO workspaces (id, organization_id, name, is_default) SELECT ?4, ?3, 'Default', 1 WHERE ${made}`)
      .bind(...bind, workspaceId),
    db
      .prepare(`INSERT INTO projects (id, workspace_id, name, is_default) SELECT ?5, ?4, 'Default', 1 WHERE ${made}`)
      .bind(...bind, workspaceId, projectId),
    db.prepare(`WITH ${CALLER_CTE} ${ORGANIZATIONS} WHERE o.id = ?3`).bind(...bind),
  ]);
  const row = organization.results[0] as StoredOrganization | undefined;
  if (row) return { outcome: "done", organization: toOrganization(row) };
  const found = facts.results[0] as { readOnly: number; isCaller: number };
  return { outcome: found.readOnly === 1 ? "forbidden" : "not_the_caller" };
}

/** What a write on an organization or workspace found: done, nothing the caller can see, or a role that may not. */
export type ScopedOutcome<T> = { outcome: "done"; value: T } | { outcome: "not_found" | "forbidden" };

/** The caller's role in organization ?3, and whether workspace ?4 (if any) is one of its: to start a batch with. */
export const scopeFacts = (db: Queryable, caller: Caller, organizationId: string, workspaceId: string | null) =>
  db
    .prepare(
      `WITH ${CALLER_CTE}
       SELECT (SELECT role FROM membership WHERE organization_id = ?3) AS role,
              (?4 IS NULL OR EXISTS (SELECT 1 FROM workspaces WHERE id = ?4 AND organization_id = ?3)) AS workspaceFound`,
    )
    .bind(...caller.credentials, organizationId, workspaceId);

/** Why a scoped write wrote nothing: not a member or no such workspace (404), else a role short of `allowed` (403). */
export function scopeRefusal(facts: D1Result, allowed: readonly Role[]): "not_found" | "forbidden" {
  const found = facts.results[0] as { role: Role | null; workspaceFound: number };
  if (found.role === null || found.workspaceFound !== 1) return "not_found";
  return allowed.includes(found.role) ? "not_found" : "forbidden";
}

/** Renames or describes organization ?3: its owners only. */
export async function updateOrganizationAsCaller(
  db: Queryable,
  caller: Caller,
  organizationId: string,
  fields: OrganizationFields,
): Promise<ScopedOutcome<OrganizationRow>> {
  const bind = [...caller.credentials, organizationId];
  const changed = [fields.name ?? null, fields.description ?? null, fields.type ?? null];
  const [facts, , updated, organization] = await batchAsCaller(db, caller, [
    scopeFacts(db, caller, organizationId, null),
    // Before the update, which it is conditioned like.
    db
      .prepare(
        `WITH ${CALLER_CTE} ${INSERT_EVENT}
         SELECT ?7, 'organization.updated', o.id, NULL, NULL, NULL, ${EVENT_ACTOR},
                json_object('organization_id', o.id, ${BEFORE_AND_AFTER})
           FROM organizations o
          WHERE o.id = ?3 AND (SELECT role FROM membership WHERE organization_id = ?3) = 'owner' AND ${ORGANIZATION_CHANGES}
         ${EVENT_HANDOFF}`,
      )
      .bind(...bind, ...changed, uuidv7()),
    db
      .prepare(
        `WITH ${CALLER_CTE}
         UPDATE organizations AS o
            SET name = COALESCE(?4, name), description = COALESCE(?5, description), type = COALESCE(?6, type),
                updated_at = CASE WHEN ${ORGANIZATION_CHANGES} THEN ${NOW} ELSE updated_at END
          WHERE id = ?3 AND (SELECT role FROM membership WHERE organization_id = ?3) = 'owner'
         RETURNING id`,
      )
      .bind(...bind, ...changed),
    db.prepare(`WITH ${CALLER_CTE} ${ORGANIZATIONS} WHERE o.id = ?3`).bind(...bind),
  ]);
  if (updated.results.length === 0) return { outcome: scopeRefusal(facts, ["owner"]) };
  return { outcome: "done", value: toOrganization(organization.results[0] as StoredOrganization) };
}

/** A workspace with the organization's members: what the workspace routes answer. */
export interface WorkspaceDetails {
  workspace: WorkspaceRow;
  members: MemberRow[];
}

/** Statements reading workspace ?4 and its members, to end a batch with; read by `toWorkspace`. */
export function workspaceStatements(db: Queryable, caller: Caller, workspaceId: string) {
  const bind = [...caller.credentials, null, workspaceId];
  return [
    db.prepare(`WITH ${CALLER_CTE} ${WORKSPACES} WHERE w.id = ?4`).bind(...bind),
    db
      .prepare(
        `WITH ${CALLER_CTE} ${MEMBERS}
          WHERE om.organization_id = (SELECT organization_id FROM workspaces WHERE id = ?4) ORDER BY om.created_at, u.id`,
      )
      .bind(...bind),
  ];
}

export function toWorkspace([workspace, members]: D1Result[]): WorkspaceDetails | null {
  const row = workspace.results[0] as WorkspaceRow | undefined;
  return row ? { workspace: row, members: members.results as unknown as MemberRow[] } : null;
}

/** A new workspace of organization ?3, with its default project: its admins only. */
export async function createWorkspaceAsCaller(
  db: Queryable,
  caller: Caller,
  organizationId: string,
  fields: OrganizationFields & { name: string },
): Promise<ScopedOutcome<WorkspaceDetails>> {
  const [workspaceId, projectId] = [uuidv7(), uuidv7()];
  const bind = [...caller.credentials, organizationId, workspaceId];
  const [facts, made, , , ...workspace] = await batchAsCaller(db, caller, [
    scopeFacts(db, caller, organizationId, null),
    db
      .prepare(
        `WITH ${CALLER_CTE}
         INSERT INTO workspaces (id, organization_id, name, description, type)
         SELECT ?4, ?3, ?5, ?6, ?7 WHERE (SELECT role FROM membership WHERE organization_id = ?3) IN ${ADMIN_ROLES_SQL}
         RETURNING id`,
      )
      .bind(...bind, fields.name, fields.description ?? "", fields.type ?? null),
    db
      .prepare(
        "INSERT INTO projects (id, workspace_id, name, is_default) SELECT ?2, ?1, 'Default', 1 FROM workspaces WHERE id = ?1",
      )
      .bind(workspaceId, projectId),
    db
      .prepare(
        `WITH ${CALLER_CTE} ${INSERT_EVENT}
         SELECT ?5, 'workspace.created', w.organization_id, w.id, NULL, NULL, ${EVENT_ACTOR},
                json_object('workspace_id', w.id, 'name', w.name, 'description', w.description, 'type', w.type)
           FROM workspaces w WHERE w.id = ?4 ${EVENT_HANDOFF}`,
      )
      .bind(...bind, uuidv7()),
    ...workspaceStatements(db, caller, workspaceId),
  ]);
  const details = made.results.length > 0 ? toWorkspace(workspace) : null;
  return details ? { outcome: "done", value: details } : { outcome: scopeRefusal(facts, ADMIN_ROLES) };
}

/** Renames or describes workspace ?4 of organization ?3: its admins only. */
export async function updateWorkspaceAsCaller(
  db: Queryable,
  caller: Caller,
  organizationId: string,
  workspaceId: string,
  fields: OrganizationFields,
): Promise<ScopedOutcome<WorkspaceDetails>> {
  const bind = [...caller.credentials, organizationId, workspaceId];
  const changed = [fields.name ?? null, fields.description ?? null, fields.type ?? null];
  const [facts, , updated, ...workspace] = await batchAsCaller(db, caller, [
    scopeFacts(db, caller, organizationId, workspaceId),
    // Before the update, which it is conditioned like.
    db
      .prepare(
        `WITH ${CALLER_CTE} ${INSERT_EVENT}
         SELECT ?8, 'workspace.updated', o.organization_id, o.id, NULL, NULL, ${EVENT_ACTOR},
                json_object('workspace_id', o.id, ${BEFORE_AND_AFTER_WORKSPACE})
           FROM workspaces o
          WHERE o.id = ?4 AND o.organization_id = ?3 AND ${WORKSPACE_CHANGES}
            AND (SELECT role FROM membership WHERE organization_id = ?3) IN ${ADMIN_ROLES_SQL} ${EVENT_HANDOFF}`,
      )
      .bind(...bind, ...changed, uuidv7()),
    db
      .prepare(
        `WITH ${CALLER_CTE}
         UPDATE workspaces AS o
            SET name = COALESCE(?5, name), description = COALESCE(?6, description), type = COALESCE(?7, type),
                updated_at = CASE WHEN ${WORKSPACE_CHANGES} THEN ${NOW} ELSE updated_at END
          WHERE id = ?4 AND organization_id = ?3
            AND (SELECT role FROM membership WHERE organization_id = ?3) IN ${ADMIN_ROLES_SQL}
         RETURNING id`,
      )
      .bind(...bind, ...changed),
    ...workspaceStatements(db, caller, workspaceId),
  ]);
  const details = updated.results.length > 0 ? toWorkspace(workspace) : null;
  return details ? { outcome: "done", value: details } : { outcome: scopeRefusal(facts, ADMIN_ROLES) };
}
