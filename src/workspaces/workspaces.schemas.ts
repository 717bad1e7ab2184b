import * as z from "zod";
import { ROLES } from "../db/accounts";
import { emailField, uuid } from "../http/fields";
import { roleField } from "./roles";

export const WorkspaceIdParams = z.object({ workspace_id: uuid });

/** `assign_role_to_user`. */
export const AssignRoleBody = z.object({ email: emailField, organization_id: uuid, role: roleField });

/** `unassign_role_from_user`: the member's role, if it is `role`, becomes viewer. */
export const UnassignRoleQuery = z.object({ email: emailField, org_id: uuid, role: roleField });

/** `remove_user_from_workspace`: removes the member from the organization (roles are per organization). */
export const RemoveUserQuery = z.object({ org_id: uuid, email: emailField });

// Response bodies.

export const RoleListItem = z.object({
  role_name: z.enum(ROLES),
  role_description: z.string(),
  permissions: z.array(z.string()),
});

export const Member = z.object({ id: z.uuid(), email: z.string(), username: z.string(), role: z.enum(ROLES) });
