import * as z from "zod/mini";
import { ROLES } from "../db/roles";
import { documented, schemaName } from "../http/documentation";
import { dryRunFlag } from "../http/dry-run";
import { emailField, uuid } from "../http/fields";
import { ROLE_DESCRIPTIONS, roleField } from "./roles";
import type { MemberRow, WorkspaceDetails } from "./workspaces.sql.ts";

export const WorkspaceIdParams = /* @__PURE__ */ z.object({ workspace_id: uuid });

/** `assign_role_to_user`. */
export const AssignRoleBody = /* @__PURE__ */ z.object({ email: emailField, organization_id: uuid, role: roleField });

/** `unassign_role_from_user`: the member's role, if it is `role`, becomes viewer. */
export const UnassignRoleQuery = /* @__PURE__ */ z.object({
  email: emailField,
  org_id: uuid,
  role: roleField,
  dry_run: dryRunFlag("answer the member and the role they would lose"),
});

/** `remove_user_from_workspace`: removes the member from the organization (roles are per organization). */
export const RemoveUserQuery = /* @__PURE__ */ z.object({
  org_id: uuid,
  email: emailField,
  dry_run: dryRunFlag("answer the member, the role they would lose and how many of their keys would be revoked"),
});

// Response bodies.

export const RoleListItem = /* @__PURE__ */ z
  .object({
    role_name: z.enum(ROLES),
    role_description: z.string(),
    permissions: z.array(z.string()),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "RoleListItem"));

export const Member = /* @__PURE__ */ z
  .object({ id: z.uuid(), email: z.string(), username: z.string(), role: z.enum(ROLES) })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "Member"));

/** DELETE /workspaces/{workspace_id}/roles or /users with ?dry_run=true: what the call would take; nothing was written. */
export const MemberDryRun = /* @__PURE__ */ z
  .object({
    dry_run: z.literal(true),
    kind: z.literal("delete"),
    member: Member.apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The member as they are now" })),
    roles_lost: z
      .array(z.enum(ROLES))
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "The role the call would take from them; none: it changes nothing" },
        ),
      ),
    keys_revoked: z.int().apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description: "Their live keys for the organization's projects that a removal would revoke",
        },
      ),
    ),
  })
  .apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description: "The answer to `?dry_run=true`: what the call would take from the member; nothing was written",
      },
    ),
  )
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "MemberDryRun"));

const RoleDescription = /* @__PURE__ */ z.object({
  role_name: /* @__PURE__ */ z.enum(ROLES),
  role_description: /* @__PURE__ */ z.string(),
});

export const WorkspaceMember = /* @__PURE__ */ z
  .object({
    user: z.object({ id: z.uuid(), email: z.string(), username: z.string() }),
    roles: z
      .array(RoleDescription)
      .apply(
        /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The member's one role in the organization" }),
      ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "WorkspaceMember"));

const toMember = ({ id, email, username, role }: MemberRow) => ({
  user: { id, email, username },
  roles: [{ role_name: role, role_description: ROLE_DESCRIPTIONS[role] }],
});

export const Workspace = /* @__PURE__ */ z
  .object({
    id: z.uuid(),
    name: z.string(),
    description: z.string(),
    type: z.nullable(z.string()),
    organization: z.uuid(),
    default_project_id: z
      .uuid()
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "Where keys and apps of this workspace live by default" },
        ),
      ),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
    members: z
      .array(WorkspaceMember)
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "The organization's members: roles are per organization" },
        ),
      ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "Workspace"));

export const toWorkspace = ({ workspace, members }: WorkspaceDetails) => ({ ...workspace, members: members.map(toMember) });
