import type * as z from "zod/mini";
import { DEMO_USER_ID } from "../http/openapi-parts";
import { ROLE_DESCRIPTIONS } from "./roles";
import type { Workspace, WorkspaceMember } from "./workspaces.schemas";

/** Where roles apply, said once for every route that reads or changes members. */
export const PER_ORGANIZATION =
  "Members and roles are per organization: every workspace of an organization has the organization's members, each " +
  "in their one role there.";

/** Who may administer an organization's members, invitations and workspaces. */
export const ADMINS_ONLY = "Owners and workspace admins only (403 for any other role, and for a read-only key).";

// Ids the examples make up: an organization made through the API, and a workspace of it (constants of their own, as
// src/http/openapi-parts.ts's ids are).
export const EXAMPLE_ORGANIZATION_ID = "01a2012e-1c4a-7d2b-9e31-6f0a2b3c4d5e";
export const EXAMPLE_WORKSPACE_ID = "01a2012e-1c4b-7f10-8a4b-2d6e8f0a1c3e";
export const EXAMPLE_PROJECT_ID = "01a2012e-1c4b-7f10-8a4b-2d6e8f0a1c40";
export const EXAMPLE_INVITEE_ID = "01a2012e-3a77-7c02-b5d1-04e6a9c3f218";

const demoOwner = {
  user: { id: DEMO_USER_ID, email: "demo@example.com", username: "demo" },
  roles: [{ role_name: "owner", role_description: ROLE_DESCRIPTIONS.owner }],
} satisfies z.output<typeof WorkspaceMember>;

export const demoWorkspace = {
  id: EXAMPLE_WORKSPACE_ID,
  name: "Production",
  description: "",
  type: null,
  organization: EXAMPLE_ORGANIZATION_ID,
  default_project_id: EXAMPLE_PROJECT_ID,
  created_at: "2026-11-23T09:16:40.502Z",
  updated_at: "2026-11-23T09:16:40.502Z",
  members: [demoOwner],
} satisfies z.output<typeof Workspace>;
