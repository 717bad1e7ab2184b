import { newId } from "../db/buckets";
import { CALLER_CTE, COPY_VOUCHED_USER } from "../db/caller";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import { COPIED_BUCKETS } from "../db/fences";
import type { CallerDb, CallerWriteDb } from "../db/handles";
import { ADMIN_ROLES, ADMIN_ROLES_SQL, type Role } from "../db/roles";
import { sql } from "../db/sql";
import {
  MEMBERS,
  type MemberRow,
  toWorkspace,
  WORKSPACES,
  type WorkspaceDetails,
  type WorkspaceRow,
  workspaceStatements,
} from "../workspaces/workspaces.sql.ts";

/**
 * Organizations and their workspaces as the caller sees them. Statements bind the organization as
 * :organization_id and the workspace as :workspace_id. Members and roles are per organization: every workspace of
 * an organization has the organization's members.
 */

/**
 * An update's event data: the row `o` before, and after with the new values (:name, :description, :type; null:
 * unchanged).
 */
const BEFORE_AND_AFTER = `'before', json_object('name', o.name, 'description', o.description, 'type', o.type),
  'after', json_object('name', COALESCE(:name, o.name), 'description', COALESCE(:description, o.description),
                       'type', COALESCE(:type, o.type))`;
/** Whether an update of organization or workspace `o` changes it: one that does not records no event (docs/EVENTS.md). */
const CHANGES = `(COALESCE(:name, o.name) IS NOT o.name OR COALESCE(:description, o.description) IS NOT o.description
  OR COALESCE(:type, o.type) IS NOT o.type)`;
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

const ORGANIZATION_LIST = sql<StoredOrganization>(
  `WITH ${CALLER_CTE} ${ORGANIZATIONS} WHERE o.bucket NOT IN ${COPIED_BUCKETS} ORDER BY o.created_at, o.id`,
);

export async function listOrganizations(db: CallerDb): Promise<OrganizationRow[]> {
  const { rows } = await db.batch({ rows: db.statement(ORGANIZATION_LIST) });
  return rows.results.map(toOrganization);
}

const OWN_ORGANIZATION = sql<{ id: string; name: string; personal: number }>(
  `WITH ${CALLER_CTE}
   SELECT o.id, o.name, o.is_personal AS personal FROM organizations o JOIN organization_members om ON om.organization_id = o.id
    WHERE om.user_id = (SELECT user_id FROM caller) AND o.bucket NOT IN ${COPIED_BUCKETS}
      AND ((o.is_personal = 1 AND om.role = 'owner')
           OR o.id = (SELECT w.organization_id FROM projects p JOIN workspaces w ON w.id = p.workspace_id
                       WHERE p.id = (SELECT project_id FROM caller)))
    ORDER BY o.is_personal DESC, o.created_at LIMIT 1`,
);

/**
 * The caller's own organization on this shard: their personal one, else (a user who joined by invitation) the key's
 * (`personal` tells them apart).
 */
export async function fetchOwnOrganization(db: CallerDb): Promise<{ id: string; name: string; personal: number } | null> {
  const { rows } = await db.batch({ rows: db.statement(OWN_ORGANIZATION) });
  return rows.results[0] ?? null;
}

export interface OrganizationDetails {
  organization: OrganizationRow;
  workspaces: WorkspaceRow[];
  members: MemberRow[];
  /** Open invitations, for the organization's admins (none for other roles). */
  invitations: { email: string; role: Role; workspace_id: string; created_at: string; expires_at: string }[];
}

const ORGANIZATION = sql<StoredOrganization>(`WITH ${CALLER_CTE} ${ORGANIZATIONS} WHERE o.id = :organization_id`);
const ORGANIZATION_WORKSPACES = sql<WorkspaceRow>(
  `WITH ${CALLER_CTE} ${WORKSPACES} WHERE w.organization_id = :organization_id ORDER BY w.created_at, w.id`,
);
const ORGANIZATION_MEMBERS = sql<MemberRow>(
  `WITH ${CALLER_CTE} ${MEMBERS} WHERE om.organization_id = :organization_id ORDER BY om.created_at, u.id`,
);
const OPEN_INVITATIONS = sql<OrganizationDetails["invitations"][number]>(
  `WITH ${CALLER_CTE}
   SELECT email, role, workspace_id, created_at, expires_at FROM invitations
    WHERE organization_id = :organization_id AND accepted_at IS NULL AND voided_at IS NULL
      AND (SELECT read_role FROM membership WHERE organization_id = :organization_id) IN ${ADMIN_ROLES_SQL}
    ORDER BY created_at, id`,
);

export async function fetchOrganization(db: CallerDb, organizationId: string): Promise<OrganizationDetails | null> {
  const values = { organization_id: organizationId };
  const { organization, workspaces, members, invitations } = await db.batch({
    organization: db.statement(ORGANIZATION, values),
    workspaces: db.statement(ORGANIZATION_WORKSPACES, values),
    members: db.statement(ORGANIZATION_MEMBERS, values),
    invitations: db.statement(OPEN_INVITATIONS, values),
  });
  const row = organization.results[0];
  if (!row) return null;
  return {
    organization: toOrganization(row),
    workspaces: workspaces.results,
    members: members.results,
    invitations: invitations.results,
  };
}

export interface OrganizationFields {
  name?: string;
  description?: string;
  type?: string;
}

/** The new values of an update (null: unchanged): :name, :description, :type. */
const changedValues = (fields: OrganizationFields) => ({
  name: fields.name ?? null,
  description: fields.description ?? null,
  type: fields.type ?? null,
});

// A caller homed on another shard becomes the owner here: their user row first (no key check reads it).
const COPY_OWNER = sql(
  `${COPY_VOUCHED_USER} AND :vouched_read_only = 0 AND (:owner = :vouched_user_id OR :owner = :vouched_email COLLATE NOCASE)`,
);
const OWNER_FACTS = sql<{ readOnly: number; isCaller: number | null }>(
  `WITH ${CALLER_CTE}
   SELECT caller.read_only AS readOnly, (u.id = :owner OR u.email = :owner) AS isCaller
     FROM caller LEFT JOIN users u ON u.id = caller.user_id`,
);
const INSERT_ORGANIZATION = sql(
  `WITH ${CALLER_CTE}
   INSERT INTO organizations (id, name, description, type, bucket)
   SELECT :organization_id, :name, :description, :type, :bucket FROM caller JOIN users u ON u.id = caller.user_id
    WHERE caller.read_only = 0 AND (u.id = :owner OR u.email = :owner)`,
);
const MADE = "EXISTS (SELECT 1 FROM organizations WHERE id = :organization_id)";
const INSERT_OWNER = sql(
  `WITH ${CALLER_CTE}
   INSERT INTO organization_members (organization_id, user_id, role) SELECT :organization_id, user_id, 'owner' FROM caller WHERE ${MADE}`,
);
const INSERT_DEFAULT_WORKSPACE = sql(
  `INSERT INTO workspaces (id, organization_id, name, is_default) SELECT :workspace_id, :organization_id, 'Default', 1 WHERE ${MADE}`,
);
const INSERT_DEFAULT_PROJECT = sql(
  `INSERT INTO projects (id, workspace_id, name, is_default) SELECT :project_id, :workspace_id, 'Default', 1 WHERE ${MADE}`,
);

const ORGANIZATION_CREATED = sql(
  `WITH ${CALLER_CTE} ${INSERT_EVENT}
   SELECT :event_id, 'organization.created', o.id, NULL, NULL, NULL, ${EVENT_ACTOR},
          json_object('organization_id', o.id, 'workspace_id', :workspace_id, 'project_id', :project_id,
                      'after', json_object('name', o.name, 'description', o.description, 'type', o.type))
     FROM organizations o WHERE o.id = :organization_id ${EVENT_HANDOFF}`,
);

/**
 * A new organization owned by the caller, with its default workspace and project, in one batch with its event, in the
 * handle's bucket (the route places it). `owner` (the client's required field) must name the caller, by id or email:
 * nobody makes someone else an owner.
 */
export async function createOrganizationAsCaller(
  db: CallerWriteDb,
  fields: OrganizationFields & { name: string; owner: string },
): Promise<{ outcome: "done"; organization: OrganizationRow } | { outcome: "forbidden" | "not_the_caller" }> {
  const values = {
    organization_id: newId(db.bucket),
    workspace_id: newId(db.bucket),
    project_id: newId(db.bucket),
    name: fields.name,
    description: fields.description ?? "",
    type: fields.type ?? null,
    owner: fields.owner,
    bucket: db.bucket,
  };
  const { facts, organization } = await db.batch({
    ownerCopy: db.statement(COPY_OWNER, values),
    facts: db.statement(OWNER_FACTS, values),
    made: db.statement(INSERT_ORGANIZATION, values),
    owner: db.statement(INSERT_OWNER, values),
    workspace: db.statement(INSERT_DEFAULT_WORKSPACE, values),
    project: db.statement(INSERT_DEFAULT_PROJECT, values),
    event: db.statement(ORGANIZATION_CREATED, { ...values, event_id: newId(db.bucket) }),
    organization: db.statement(ORGANIZATION, values),
  });
  const row = organization.results[0];
  if (row) return { outcome: "done", organization: toOrganization(row) };
  return { outcome: facts.results[0].readOnly === 1 ? "forbidden" : "not_the_caller" };
}

/** What a write on an organization or workspace found: done, nothing the caller can see, or a role that may not. */
export type ScopedOutcome<T> = { outcome: "done"; value: T } | { outcome: "not_found" | "forbidden" };

const SCOPE_FACTS = sql<{ role: Role | null; workspaceFound: number }>(
  `WITH ${CALLER_CTE}
   SELECT (SELECT role FROM membership WHERE organization_id = :organization_id) AS role,
          (:workspace_id IS NULL OR EXISTS (SELECT 1 FROM workspaces WHERE id = :workspace_id AND organization_id = :organization_id))
            AS workspaceFound`,
);

/** The caller's role in the organization, and whether the workspace (if any) is one of its: to start a batch with. */
export const scopeFacts = (db: CallerDb, organizationId: string, workspaceId: string | null) =>
  db.statement(SCOPE_FACTS, { organization_id: organizationId, workspace_id: workspaceId });

/** Why a scoped write wrote nothing: not a member or no such workspace (404), else a role short of `allowed` (403). */
export function scopeRefusal(
  facts: D1Result<{ role: Role | null; workspaceFound: number }>,
  allowed: readonly Role[],
): "not_found" | "forbidden" {
  const found = facts.results[0];
  if (found.role === null || found.workspaceFound !== 1) return "not_found";
  return allowed.includes(found.role) ? "not_found" : "forbidden";
}

// Before the update, which it is conditioned like.
const ORGANIZATION_UPDATED = sql(
  `WITH ${CALLER_CTE} ${INSERT_EVENT}
   SELECT :event_id, 'organization.updated', o.id, NULL, NULL, NULL, ${EVENT_ACTOR},
          json_object('organization_id', o.id, ${BEFORE_AND_AFTER})
     FROM organizations o
    WHERE o.id = :organization_id AND (SELECT role FROM membership WHERE organization_id = :organization_id) = 'owner'
      AND ${CHANGES}
   ${EVENT_HANDOFF}`,
);
const UPDATE_ORGANIZATION = sql(
  `WITH ${CALLER_CTE}
   UPDATE organizations AS o
      SET name = COALESCE(:name, name), description = COALESCE(:description, description), type = COALESCE(:type, type),
          updated_at = CASE WHEN ${CHANGES} THEN ${NOW} ELSE updated_at END
    WHERE id = :organization_id AND (SELECT role FROM membership WHERE organization_id = :organization_id) = 'owner'
   RETURNING id`,
);

/** Renames or describes the organization: its owners only. */
export async function updateOrganizationAsCaller(
  db: CallerWriteDb,
  organizationId: string,
  fields: OrganizationFields,
): Promise<ScopedOutcome<OrganizationRow>> {
  const values = { organization_id: organizationId, ...changedValues(fields) };
  const { facts, updated, organization } = await db.batch({
    facts: scopeFacts(db, organizationId, null),
    event: db.statement(ORGANIZATION_UPDATED, { ...values, event_id: newId(db.bucket) }),
    updated: db.statement(UPDATE_ORGANIZATION, values),
    organization: db.statement(ORGANIZATION, values),
  });
  if (updated.results.length === 0) return { outcome: scopeRefusal(facts, ["owner"]) };
  return { outcome: "done", value: toOrganization(organization.results[0]) };
}

const INSERT_WORKSPACE = sql(
  `WITH ${CALLER_CTE}
   INSERT INTO workspaces (id, organization_id, name, description, type)
   SELECT :workspace_id, :organization_id, :name, :description, :type
    WHERE (SELECT role FROM membership WHERE organization_id = :organization_id) IN ${ADMIN_ROLES_SQL}
   RETURNING id`,
);
const INSERT_WORKSPACE_PROJECT = sql(
  "INSERT INTO projects (id, workspace_id, name, is_default) SELECT :project_id, :workspace_id, 'Default', 1 FROM workspaces WHERE id = :workspace_id",
);
const WORKSPACE_CREATED = sql(
  `WITH ${CALLER_CTE} ${INSERT_EVENT}
   SELECT :event_id, 'workspace.created', w.organization_id, w.id, NULL, NULL, ${EVENT_ACTOR},
          json_object('workspace_id', w.id, 'name', w.name, 'description', w.description, 'type', w.type)
     FROM workspaces w WHERE w.id = :workspace_id ${EVENT_HANDOFF}`,
);

/** A new workspace of the organization, with its default project: its admins only. */
export async function createWorkspaceAsCaller(
  db: CallerWriteDb,
  organizationId: string,
  fields: OrganizationFields & { name: string },
): Promise<ScopedOutcome<WorkspaceDetails>> {
  const workspaceId = newId(db.bucket);
  const values = {
    organization_id: organizationId,
    workspace_id: workspaceId,
    project_id: newId(db.bucket),
    name: fields.name,
    description: fields.description ?? "",
    type: fields.type ?? null,
  };
  const { facts, made, ...rest } = await db.batch({
    facts: scopeFacts(db, organizationId, null),
    made: db.statement(INSERT_WORKSPACE, values),
    project: db.statement(INSERT_WORKSPACE_PROJECT, values),
    event: db.statement(WORKSPACE_CREATED, { ...values, event_id: newId(db.bucket) }),
    ...workspaceStatements(db, workspaceId),
  });
  const details = made.results.length > 0 ? toWorkspace(rest) : null;
  return details ? { outcome: "done", value: details } : { outcome: scopeRefusal(facts, ADMIN_ROLES) };
}

// Before the update, which it is conditioned like.
const WORKSPACE_UPDATED = sql(
  `WITH ${CALLER_CTE} ${INSERT_EVENT}
   SELECT :event_id, 'workspace.updated', o.organization_id, o.id, NULL, NULL, ${EVENT_ACTOR},
          json_object('workspace_id', o.id, ${BEFORE_AND_AFTER})
     FROM workspaces o
    WHERE o.id = :workspace_id AND o.organization_id = :organization_id AND ${CHANGES}
      AND (SELECT role FROM membership WHERE organization_id = :organization_id) IN ${ADMIN_ROLES_SQL} ${EVENT_HANDOFF}`,
);
const UPDATE_WORKSPACE = sql(
  `WITH ${CALLER_CTE}
   UPDATE workspaces AS o
      SET name = COALESCE(:name, name), description = COALESCE(:description, description), type = COALESCE(:type, type),
          updated_at = CASE WHEN ${CHANGES} THEN ${NOW} ELSE updated_at END
    WHERE id = :workspace_id AND organization_id = :organization_id
      AND (SELECT role FROM membership WHERE organization_id = :organization_id) IN ${ADMIN_ROLES_SQL}
   RETURNING id`,
);

/** Renames or describes the workspace of the organization: its admins only. */
export async function updateWorkspaceAsCaller(
  db: CallerWriteDb,
  organizationId: string,
  workspaceId: string,
  fields: OrganizationFields,
): Promise<ScopedOutcome<WorkspaceDetails>> {
  const values = { organization_id: organizationId, workspace_id: workspaceId, ...changedValues(fields) };
  const { facts, updated, ...rest } = await db.batch({
    facts: scopeFacts(db, organizationId, workspaceId),
    event: db.statement(WORKSPACE_UPDATED, { ...values, event_id: newId(db.bucket) }),
    updated: db.statement(UPDATE_WORKSPACE, values),
    ...workspaceStatements(db, workspaceId),
  });
  const details = updated.results.length > 0 ? toWorkspace(rest) : null;
  return details ? { outcome: "done", value: details } : { outcome: scopeRefusal(facts, ADMIN_ROLES) };
}
