import {
  type ApproverRole,
  type BypassRole,
  PROTECTION_COLUMNS,
  PROTECTION_DEFAULTS,
  type ProtectedEnvironmentName,
} from "../core/protection.sql.ts";
import { newId } from "../db/buckets";
import { CALLER_CTE } from "../db/caller";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import type { CallerDb, CallerWriteDb } from "../db/handles";
import { ADMIN_ROLES, ADMIN_ROLES_SQL, ROLES, type Role } from "../db/roles";
import { type Results, sql } from "../db/sql";

/** An environment's protection settings (docs/CHANGE-REQUESTS.md §1), as the API names them. */
export interface ProtectionSettings {
  protected: boolean;
  required_approvals: number;
  allow_self_approval: boolean;
  approver_roles: ApproverRole[];
  bypass_roles: BypassRole[];
  request_ttl_days: number;
}

/** The settings of a project's environment, with who set them last (null: never set, every setting its default). */
export interface Protection extends ProtectionSettings {
  project_id: string;
  environment: ProtectedEnvironmentName;
  updated_at: string | null;
  updated_by: { user_id: string; username: string } | null;
}

/** A change of settings: each given one replaced, each null kept as it is. */
export type ProtectionChange = { [K in keyof ProtectionSettings]: ProtectionSettings[K] | null };

/**
 * The CTEs `project` (project :project_id as the caller sees it, with the caller's role in its organization; no row:
 * not visible) and `current` (its environment :environment's settings, PROTECTION_COLUMNS, defaults where no row).
 */
const CURRENT_CTES = `project AS (
  SELECT p.id, w.organization_id, w.id AS workspace_id, m.role
    FROM projects p JOIN workspaces w ON w.id = p.workspace_id JOIN membership m ON m.organization_id = w.organization_id
   WHERE p.id = :project_id),
current AS (
  SELECT ${PROTECTION_COLUMNS}
    FROM project LEFT JOIN environment_protections ep ON ep.project_id = project.id AND ep.environment = :environment)`;

/** Settings `s` (columns as PROTECTION_COLUMNS names them) as the API's JSON object, in ProtectionSettings' order. */
const SETTINGS_JSON = `json_object('protected', json(CASE WHEN s.protected THEN 'true' ELSE 'false' END),
  'required_approvals', s.required_approvals, 'allow_self_approval', json(CASE WHEN s.allow_self_approval THEN 'true' ELSE 'false' END),
  'approver_roles', json(s.approver_roles), 'bypass_roles', json(s.bypass_roles), 'request_ttl_days', s.request_ttl_days)`;

type ProtectionRow = Omit<Protection, "protected" | "allow_self_approval" | "approver_roles" | "bypass_roles" | "updated_by"> & {
  role: Role;
  protected: number;
  allow_self_approval: number;
  approver_roles: string;
  bypass_roles: string;
  updated_by_id: string | null;
  updated_by_username: string | null;
};

const PROTECTION = sql<ProtectionRow>(
  `WITH ${CALLER_CTE}, ${CURRENT_CTES}
   SELECT project.id AS project_id, :environment AS environment, project.role, s.protected, s.required_approvals,
          s.allow_self_approval, s.approver_roles, s.bypass_roles, s.request_ttl_days, s.protection_updated_at AS updated_at,
          s.protection_updated_by AS updated_by_id, u.username AS updated_by_username
     FROM project JOIN current s LEFT JOIN users u ON u.id = s.protection_updated_by`,
);

/**
 * After CURRENT_CTES: `next`, the settings :protected, :required_approvals, ... where given (else the current one;
 * numbers as integers: D1 binds a JavaScript number as a real, which JSON writes `2.0`), and `change`, one row with both as JSON when they differ and the caller may change them (owner or workspace_admin).
 */
const CHANGE_CTES = `${CURRENT_CTES},
next AS (
  SELECT COALESCE(:protected, protected) AS protected,
         CAST(COALESCE(:required_approvals, required_approvals) AS INTEGER) AS required_approvals,
         COALESCE(:allow_self_approval, allow_self_approval) AS allow_self_approval,
         COALESCE(:approver_roles, approver_roles) AS approver_roles, COALESCE(:bypass_roles, bypass_roles) AS bypass_roles,
         CAST(COALESCE(:request_ttl_days, request_ttl_days) AS INTEGER) AS request_ttl_days
    FROM current),
change AS (
  SELECT before.settings AS before, after.settings AS after
    FROM (SELECT ${SETTINGS_JSON} AS settings FROM current s) before, (SELECT ${SETTINGS_JSON} AS settings FROM next s) after
   WHERE before.settings <> after.settings AND (SELECT role FROM project) IN ${ADMIN_ROLES_SQL})`;

// Before the write, which reads what it changes.
const PROTECTION_CHANGED = sql(
  `WITH ${CALLER_CTE}, ${CHANGE_CTES} ${INSERT_EVENT}
   SELECT :event_id, 'environment.protection_changed', project.organization_id, project.workspace_id, project.id, NULL,
          ${EVENT_ACTOR},
          json_object('project_id', project.id, 'environment', :environment, 'before', json(change.before), 'after', json(change.after))
     FROM project JOIN change ${EVENT_HANDOFF}`,
);

const WRITE_PROTECTION = sql(
  `WITH ${CALLER_CTE}, ${CHANGE_CTES}
   INSERT INTO environment_protections (project_id, environment, protected, required_approvals, allow_self_approval,
                                        approver_roles, bypass_roles, request_ttl_days, updated_at, updated_by)
   SELECT :project_id, :environment, protected, required_approvals, allow_self_approval, approver_roles, bypass_roles,
          request_ttl_days, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), (SELECT user_id FROM caller)
     FROM next WHERE EXISTS (SELECT 1 FROM change)
   ON CONFLICT (project_id, environment) DO UPDATE
      SET protected = excluded.protected, required_approvals = excluded.required_approvals,
          allow_self_approval = excluded.allow_self_approval, approver_roles = excluded.approver_roles,
          bypass_roles = excluded.bypass_roles, request_ttl_days = excluded.request_ttl_days,
          updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
);

/** A role list as stored: each role once, in ROLES' order, so that equal lists compare equal. */
const storedRoles = (roles: readonly Role[]) => JSON.stringify(ROLES.filter((role) => roles.includes(role)));

/** The settings a PUT gives: those left out at their defaults (§1). */
export const withDefaults = (given: Partial<ProtectionSettings>): ProtectionSettings => ({
  ...PROTECTION_DEFAULTS,
  approver_roles: [...PROTECTION_DEFAULTS.approver_roles],
  bypass_roles: [],
  ...given,
});

/** The statement reading the settings of project `projectId`'s environment `environment`, for `toProtection`. */
export const protectionStatement = (db: CallerDb, projectId: string, environment: ProtectedEnvironmentName) =>
  db.statement(PROTECTION, { project_id: projectId, environment });

/**
 * The statements of a change of the settings (`change`: null keeps a setting), to end a batch with: the event
 * `environment.protection_changed` with `before` and `after` and the row's write, both only when something changes
 * and the caller is an owner or workspace_admin; then the settings as they are, for `toProtection`.
 */
export function protectionChangeStatements(
  db: CallerWriteDb,
  projectId: string,
  environment: ProtectedEnvironmentName,
  change: ProtectionChange,
) {
  const values = {
    project_id: projectId,
    environment,
    protected: change.protected === null ? null : Number(change.protected),
    required_approvals: change.required_approvals,
    allow_self_approval: change.allow_self_approval === null ? null : Number(change.allow_self_approval),
    approver_roles: change.approver_roles && storedRoles(change.approver_roles),
    bypass_roles: change.bypass_roles && storedRoles(change.bypass_roles),
    request_ttl_days: change.request_ttl_days,
  };
  return {
    protectionChanged: db.statement(PROTECTION_CHANGED, { ...values, event_id: newId(db.bucket) }),
    protectionWrite: db.statement(WRITE_PROTECTION, values),
    protection: protectionStatement(db, projectId, environment),
  };
}

/** What a read or change of settings found: the settings, or why not (no such project visible, or a role short). */
export type ProtectionOutcome = { outcome: "done"; protection: Protection } | { outcome: "not_found" | "forbidden" };

/** The settings `protection` read (a change: `changing`, refused to all but owners and workspace admins). */
export function toProtection(
  { protection }: Results<{ protection: ReturnType<typeof protectionStatement> }>,
  { changing }: { changing: boolean },
): ProtectionOutcome {
  const row = protection.results[0];
  if (!row) return { outcome: "not_found" };
  if (changing && !ADMIN_ROLES.includes(row.role)) return { outcome: "forbidden" };
  const { role, updated_by_id, updated_by_username, ...settings } = row;
  return {
    outcome: "done",
    protection: {
      ...settings,
      protected: settings.protected === 1,
      allow_self_approval: settings.allow_self_approval === 1,
      approver_roles: JSON.parse(settings.approver_roles) as ApproverRole[],
      bypass_roles: JSON.parse(settings.bypass_roles) as BypassRole[],
      updated_by: updated_by_id === null ? null : { user_id: updated_by_id, username: updated_by_username ?? "" },
    },
  };
}

/** The settings of project `projectId`'s environment `environment`, as the caller sees them: one round trip. */
export async function readProtection(
  db: CallerDb,
  projectId: string,
  environment: ProtectedEnvironmentName,
): Promise<ProtectionOutcome> {
  return toProtection(await db.batch({ protection: protectionStatement(db, projectId, environment) }), { changing: false });
}

/** Changes the settings (see `protectionChangeStatements`) and answers them as they are now: one round trip. */
export async function changeProtection(
  db: CallerWriteDb,
  projectId: string,
  environment: ProtectedEnvironmentName,
  change: ProtectionChange,
): Promise<ProtectionOutcome> {
  return toProtection(await db.batch(protectionChangeStatements(db, projectId, environment, change)), { changing: true });
}
