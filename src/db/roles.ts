/** The six roles of docs/ACCOUNTS-API.md, most powerful first; a member has one per organization. */
export const ROLES = ["owner", "workspace_admin", "editor", "deployment_manager", "evaluator", "viewer"] as const;
export type Role = (typeof ROLES)[number];
/** Role names accepted wherever a role is named, besides ROLES: the admin CLI's `admin`. */
export const ROLE_SYNONYMS: Readonly<Record<string, Role>> = { admin: "workspace_admin" };

/** The role a name names (one of ROLES, or a synonym; own keys only: `toString` is no synonym), else null. */
export function roleNamed(name: string): Role | null {
  if ((ROLES as readonly string[]).includes(name)) return name as Role;
  return Object.hasOwn(ROLE_SYNONYMS, name) ? ROLE_SYNONYMS[name] : null;
}

// Each list also as SQL, written out so that SQL text stays made of literals.
/** Roles that may create, rename and delete apps and add, commit and fork configs. */
export const WRITER_ROLES: readonly Role[] = ["owner", "workspace_admin", "editor"];
export const WRITER_ROLES_SQL = "('owner', 'workspace_admin', 'editor')";
/** Roles that may deploy and revert: the writers and `deployment_manager`. */
export const DEPLOYER_ROLES: readonly Role[] = [...WRITER_ROLES, "deployment_manager"];
export const DEPLOYER_ROLES_SQL = "('owner', 'workspace_admin', 'editor', 'deployment_manager')";
/** Roles that may invite, assign roles, remove members and create and update workspaces. */
export const ADMIN_ROLES: readonly Role[] = ["owner", "workspace_admin"];
export const ADMIN_ROLES_SQL = "('owner', 'workspace_admin')";

/** How an owners-and-admins operation is refused: not a member there (or nothing there to find), or another role. */
export type AdminRefusal = { outcome: "not_found" | "forbidden" };

/** The refusal for the caller's role, read from a statement's first row (`role`), or null for an owner or admin. */
export function adminRefusal(result: D1Result<unknown>): AdminRefusal | null {
  const role = (result.results[0] as { role: Role | null } | undefined)?.role;
  if (!role) return { outcome: "not_found" };
  return ADMIN_ROLES.includes(role) ? null : { outcome: "forbidden" };
}
