import type * as z from "zod/mini";
import { DEMO_IDS } from "../http/openapi-parts";
import { ROLE_DESCRIPTIONS } from "./roles";
import type { Workspace, WorkspaceMember } from "./workspaces.schemas";

/** Where roles apply, said once for every route that reads or changes members. */
export const PER_ORGANIZATION =
  "Members and roles are per organization: every workspace of an organization has the organization's members, each " +
  "in their one role there.";

/** Who may administer an organization's members, invitations and workspaces. */
export const ADMINS_ONLY = "Owners and workspace admins only (403 for any other role, and for a read-only key).";

// Ids the examples make up: an organization made through the API, and a workspace of it.
export const EXAMPLE_ACCOUNT_IDS = {
  organization: "01a2012e-1c4a-7d2b-9e31-6f0a2b3c4d5e",
  workspace: "01a2012e-1c4b-7f10-8a4b-2d6e8f0a1c3e",
  project: "01a2012e-1c4b-7f10-8a4b-2d6e8f0a1c40",
  invitee: "01a2012e-3a77-7c02-b5d1-04e6a9c3f218",
} as const;

const demoOwner = {
  user: { id: DEMO_IDS.user, email: "demo@example.com", username: "demo" },
  roles: [{ role_name: "owner", role_description: ROLE_DESCRIPTIONS.owner }],
} satisfies z.output<typeof WorkspaceMember>;

export const demoWorkspace = {
  id: EXAMPLE_ACCOUNT_IDS.workspace,
  name: "Production",
  description: "",
  type: null,
  organization: EXAMPLE_ACCOUNT_IDS.organization,
  default_project_id: EXAMPLE_ACCOUNT_IDS.project,
  created_at: "2026-11-23T09:16:40.502Z",
  updated_at: "2026-11-23T09:16:40.502Z",
  members: [demoOwner],
} satisfies z.output<typeof Workspace>;
