/**
 * An environment's protection settings (docs/CHANGE-REQUESTS.md §1), kept per project and environment name in
 * `environment_protections` (migrations/0014); no row means every setting at its default.
 */

/** The environment names settings exist for. */
export const PROTECTED_ENVIRONMENT_NAMES = ["development", "staging", "production"] as const;
export type ProtectedEnvironmentName = (typeof PROTECTED_ENVIRONMENT_NAMES)[number];

/** The roles a setting may name: that approve change requests, that may bypass a protection. */
export const APPROVER_ROLES = ["owner", "workspace_admin", "editor", "deployment_manager"] as const;
export type ApproverRole = (typeof APPROVER_ROLES)[number];
export const BYPASS_ROLES = ["owner", "workspace_admin"] as const;
export type BypassRole = (typeof BYPASS_ROLES)[number];

/** The settings of a project's environment that has no row. */
export const PROTECTION_DEFAULTS = {
  protected: false,
  required_approvals: 1,
  allow_self_approval: false,
  approver_roles: ["owner", "workspace_admin", "deployment_manager"],
  bypass_roles: [],
  request_ttl_days: 14,
} as const;

/**
 * The settings' columns of `ep`, a LEFT JOIN of environment_protections, with the defaults where no row matched (the
 * same as PROTECTION_DEFAULTS, written out so that SQL text stays made of literals): integers for the flags, JSON text
 * for the role lists.
 */
export const PROTECTION_COLUMNS = `COALESCE(ep.protected, 0) AS protected, COALESCE(ep.required_approvals, 1) AS required_approvals,
  COALESCE(ep.allow_self_approval, 0) AS allow_self_approval,
  COALESCE(ep.approver_roles, '["owner","workspace_admin","deployment_manager"]') AS approver_roles,
  COALESCE(ep.bypass_roles, '[]') AS bypass_roles, COALESCE(ep.request_ttl_days, 14) AS request_ttl_days,
  ep.updated_at AS protection_updated_at, ep.updated_by AS protection_updated_by`;

/**
 * How the protection of environment `target.name` of the app's project (after CTEs `app`, with its `project_id` and
 * the caller's `role`, and `target`, with the environment's `name`) treats a write to it: a CTE `gate`, one row,
 * `refusal` null when the write may go on, else `split_running` (a split runs there, docs/SPLITS.md §1: no bypass lifts
 * it), `protected` (no :bypass_reason) or `bypass_forbidden` (a bypass from a role not in `bypass_roles`). An
 * unprotected environment refuses nothing else and ignores a bypass. A change request's apply
 * makes its own deployment row, checked by its own rules (src/change-requests/apply.sql.ts): no value bound here lets a
 * write through.
 */
export const PROTECTION_GATE_CTE = `gate AS (
  SELECT CASE WHEN EXISTS (SELECT 1 FROM environment_splits s JOIN environments se ON se.id = s.environment_id
                           WHERE se.app_id = app.id AND se.name = (SELECT name FROM target)) THEN 'split_running'
              WHEN COALESCE(ep.protected, 0) = 0 THEN NULL
              WHEN :bypass_reason IS NULL THEN 'protected'
              WHEN app.role IN (SELECT value FROM json_each(ep.bypass_roles)) THEN NULL
              ELSE 'bypass_forbidden' END AS refusal
    FROM app LEFT JOIN environment_protections ep ON ep.project_id = app.project_id AND ep.environment = (SELECT name FROM target))`;

/** Whether `gate` (PROTECTION_GATE_CTE) lets the write go on: a condition for its insert. */
export const GATE_OPEN = `NOT EXISTS (SELECT 1 FROM gate WHERE refusal IS NOT NULL)`;

/** Why a write to a protected environment was refused, as `gate` says. */
export type ProtectionRefusal = "split_running" | "protected" | "bypass_forbidden";

/**
 * How a direct write passes a protected environment's refusal (§2): as an emergency bypass giving `bypassReason` (the
 * `Protection-Bypass` header), from a role in the environment's `bypass_roles` (its event
 * `environment.protection_bypassed` in the same batch). Else refused: it goes through a change request.
 */
export interface ProtectionPass {
  bypassReason?: string | null;
}
