import * as z from "zod/mini";
import { ROLES } from "../db/roles";
import { documented, schemaName } from "../http/documentation";
import { emailField, nameField, storableText, uuid } from "../http/fields";
import { roleField } from "../workspaces/roles";
import { toWorkspace, Workspace } from "../workspaces/workspaces.schemas";
import type { OrganizationDetails } from "./organizations.sql.ts";

const description = /* @__PURE__ */ storableText("description").check(z.maxLength(2000));
const type = /* @__PURE__ */ storableText("type")
  .check(z.maxLength(64))
  .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Kept and answered as given" }));
const updatedAt = /* @__PURE__ */ z
  .optional(z.unknown())
  .apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && { description: "Sent by the client; ignored (the service keeps its own)" },
    ),
  );

export const CreateOrganizationBody = /* @__PURE__ */ z.object({
  name: nameField("name"),
  owner: z
    .string()
    .check(z.trim(), z.minLength(1))
    .apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && { description: "The caller's own user id or email: the caller is the owner" },
      ),
    ),
  description: z.optional(description),
  type: z.optional(type),
});

export const UpdateOrganizationBody = /* @__PURE__ */ z
  .object({
    name: z.optional(nameField("name")),
    description: z.optional(description),
    type: z.optional(type),
    updated_at: updatedAt,
  })
  .apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && { description: "The fields to change; those left out keep their value" },
    ),
  );

export const CreateWorkspaceBody = /* @__PURE__ */ z.object({
  name: nameField("name"),
  description: z.optional(description),
  type: z.optional(type),
});

// The same fields, as its own schema (`.meta` copies it): the OpenAPI document names each body once.
export const UpdateWorkspaceBody = /* @__PURE__ */ UpdateOrganizationBody.apply(
  /* @__PURE__ */ documented(
    globalThis.DOCUMENTATION && {
      description: "The fields to change; those left out keep their value",
    },
  ),
);

export const OrganizationParams = /* @__PURE__ */ z.object({ org_id: uuid });

export const WorkspaceParams = /* @__PURE__ */ z.object({ org_id: uuid, workspace_id: uuid });

/** `invite_user_to_workspace`: a JSON array of exactly one invitation, of exactly one role. */
export const InviteBody = /* @__PURE__ */ z
  .array(z.object({ email: emailField, roles: z.array(roleField).check(z.length(1, "roles must hold exactly one role")) }))
  .check(z.length(1, "the body must be an array of exactly one invitation"));

export const ResendBody = /* @__PURE__ */ z.object({ email: emailField });

export const AcceptQuery = /* @__PURE__ */ z.object({
  project_id: uuid.apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && { description: "A project of the workspace: the invitation's answer names it" },
    ),
  ),
});

export const AcceptBody = /* @__PURE__ */ z.object({ token: z.string().check(z.minLength(1), z.maxLength(256)) });

// Response bodies.

export const Organization = /* @__PURE__ */ z
  .object({
    id: z.uuid(),
    name: z.string(),
    description: z.string(),
    type: z.nullable(z.string()),
    owner: z
      .uuid()
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "The earliest owner's user id (an organization may have several owners)" },
        ),
      ),
    is_personal: z.boolean(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
    role: z
      .enum(ROLES)
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "The role the caller acts in here (viewer with a read-only key)" },
        ),
      ),
    workspaces: z.array(z.uuid()),
    members: z
      .array(z.uuid())
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Members' user ids" })),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "Organization"));

export const OrganizationDetailsBody = /* @__PURE__ */ z
  .extend(Organization, {
    workspaces: z.array(Workspace),
    invitations: z
      .array(
        z.object({
          email: z.string(),
          role: z.enum(ROLES),
          workspace_id: z.uuid(),
          created_at: z.iso.datetime(),
          expires_at: z.iso.datetime(),
        }),
      )
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "Open invitations; shown to owners and workspace admins only" },
        ),
      ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "OrganizationDetails"));

export const toOrganizationDetails = ({ organization, workspaces, members, invitations }: OrganizationDetails) => ({
  ...organization,
  workspaces: workspaces.map((workspace) => toWorkspace({ workspace, members })),
  invitations,
});

export const OwnOrganization = /* @__PURE__ */ z
  .object({ id: z.uuid(), name: z.string() })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "OwnOrganization"));

export const Invitation = /* @__PURE__ */ z
  .object({
    email: z.string(),
    role: z.enum(ROLES),
    token: z.optional(z.string()).apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description:
            "Where invitations are not mailed: the token, shown this once, for the inviter to pass on. Where they are, it " +
            "is absent: the token goes to the invited email only",
        },
      ),
    ),
    organization_id: z.uuid(),
    workspace_id: z.uuid(),
    project_id: z
      .uuid()
      .apply(
        /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "What the invitee passes as accept's project_id" }),
      ),
    expires_at: z.iso.datetime(),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "Invitation"));

export const AcceptedInvitation = /* @__PURE__ */ z
  .object({
    user_id: z.uuid(),
    email: z.string(),
    role: z.enum(ROLES),
    organization_id: z.uuid(),
    workspace_id: z.uuid(),
    project_id: z.uuid(),
    api_key: z
      .optional(z.string())
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "A new user's first key, shown this once (absent for an existing user)" },
        ),
      ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "AcceptedInvitation"));
