/**
 * An environment's protection settings (docs/CHANGE-REQUESTS.md §1), kept per project and environment name in
 * `environment_protections` (migrations/0014); no row means every setting at its default.
 */

/** The environment names settings exist for. */
export const PROTECTED_ENVIRONMENT_NAMES = ["development", "staging", "production"] as const;

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
