import { CALLER_CTE } from "../db/caller";
import type { CallerDb } from "../db/handles";
import type { Role } from "../db/roles";
import { type Results, sql } from "../db/sql";

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

export const WORKSPACES = `SELECT w.id, w.name, w.description, w.type, w.organization_id AS organization,
       (SELECT id FROM projects WHERE workspace_id = w.id AND is_default = 1) AS default_project_id,
       w.created_at, COALESCE(w.updated_at, w.created_at) AS updated_at
  FROM workspaces w JOIN membership m ON m.organization_id = w.organization_id`;

/** The members of an organization the caller belongs to, oldest first; complete with `WHERE om.organization_id = ...`. */
export const MEMBERS = `SELECT u.id, u.email, u.username, om.role
  FROM organization_members om JOIN users u ON u.id = om.user_id JOIN membership m ON m.organization_id = om.organization_id`;

/** A workspace with the organization's members: what the workspace routes answer. */
export interface WorkspaceDetails {
  workspace: WorkspaceRow;
  members: MemberRow[];
}

const WORKSPACE = sql<WorkspaceRow>(`WITH ${CALLER_CTE} ${WORKSPACES} WHERE w.id = :workspace_id`);
const WORKSPACE_MEMBERS = sql<MemberRow>(
  `WITH ${CALLER_CTE} ${MEMBERS}
    WHERE om.organization_id = (SELECT organization_id FROM workspaces WHERE id = :workspace_id) ORDER BY om.created_at, u.id`,
);

/** Statements reading the workspace and its members, to end a batch with; read by `toWorkspace`. */
export function workspaceStatements(db: CallerDb, workspaceId: string) {
  return {
    workspace: db.statement(WORKSPACE, { workspace_id: workspaceId }),
    workspaceMembers: db.statement(WORKSPACE_MEMBERS, { workspace_id: workspaceId }),
  };
}

export function toWorkspace({
  workspace,
  workspaceMembers,
}: Results<ReturnType<typeof workspaceStatements>>): WorkspaceDetails | null {
  const row = workspace.results[0];
  return row ? { workspace: row, members: workspaceMembers.results } : null;
}
