import * as z from "zod/mini";
import { ROLE_SYNONYMS, ROLES, type Role, roleNamed } from "../db/roles";
import { documented } from "../http/documentation";

/**
 * What each role may do here, in the platform's permission names (its client's `Permission` list holds more: only
 * what this service enforces is listed). The routes enforce the same through the role lists of src/db/accounts.ts.
 */
const READ = ["view_application", "view_app_environment_deployment", "view_workspace"] as const;
const DEPLOY = ["deploy_application", "create_app_environment_deployment", "edit_app_environment_deployment"] as const;
const WRITE = [
  "create_application",
  "edit_application",
  "delete_application",
  "create_app_variant",
  "delete_app_variant",
  "delete_application_variant",
  "modify_variant_configurations",
] as const;
const ADMINISTER = [
  "create_workspace",
  "edit_workspace",
  "add_new_user_to_workspace",
  "add_new_user_to_organization",
  "modify_user_roles",
] as const;

export const PERMISSIONS_BY_ROLE: Readonly<Record<Role, readonly string[]>> = {
  owner: [...READ, ...WRITE, ...DEPLOY, ...ADMINISTER, "edit_organization"],
  workspace_admin: [...READ, ...WRITE, ...DEPLOY, ...ADMINISTER],
  editor: [...READ, ...WRITE, ...DEPLOY],
  deployment_manager: [...READ, ...DEPLOY],
  evaluator: [...READ],
  viewer: [...READ],
};

/** Every permission enforced here, in the order of the roles that have them. */
export const PERMISSIONS: readonly string[] = [...new Set(Object.values(PERMISSIONS_BY_ROLE).flat())];

export const ROLE_DESCRIPTIONS: Readonly<Record<Role, string>> = {
  owner: "Everything, including updating the organization and making or unmaking owners",
  workspace_admin: "Everything but the organization itself: members, roles, invitations, workspaces, apps and deployments",
  editor: "Create, change and delete apps and configs, and deploy them",
  deployment_manager: "Read everything, deploy and revert; commits nothing",
  evaluator: "Read apps, configs, environments and their history",
  viewer: "Read apps, configs, environments and their history",
};

/** A role as the client's WorkspacePermission reads it. */
export const describeRole = (role: Role) => ({
  role_name: role,
  role_description: ROLE_DESCRIPTIONS[role],
  permissions: PERMISSIONS_BY_ROLE[role],
});

export const ALL_ROLES = ROLES.map(describeRole);

/** A role as requests name it: one of ROLES, or a synonym (`admin`). */
export const roleField = /* @__PURE__ */ z
  .pipe(
    z.string().check(
      z.refine((name) => roleNamed(name) !== null, {
        message: `role must be one of ${ROLES.join(", ")} (or admin, for workspace_admin)`,
      }),
    ),
    z.transform((name) => roleNamed(name) as Role),
  )
  .apply(
    /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { type: "string", enum: [...ROLES, ...Object.keys(ROLE_SYNONYMS)] }),
  );
