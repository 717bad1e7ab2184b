import type * as z from "zod/mini";
import { forbidden } from "../http/errors";
import { errorResponse } from "../http/openapi-parts";
import { EXAMPLE_ORGANIZATION_ID, EXAMPLE_PROJECT_ID, EXAMPLE_WORKSPACE_ID } from "../workspaces/documentation";
import { type Invitation, WorkspaceParams } from "./organizations.schemas";

/* The parts of the route declarations under /organizations that its routes and its invitations' routes share. */

export const TOKEN = "9f2c4e6a8b0d1f3e5a7c9b1d3f5e7a9c0b2d4f6e8a1c3e5b7d9f0a2c4e6b8d0f";

export const demoInvitation = {
  email: "new.person@example.com",
  role: "editor",
  token: TOKEN,
  organization_id: EXAMPLE_ORGANIZATION_ID,
  workspace_id: EXAMPLE_WORKSPACE_ID,
  project_id: EXAMPLE_PROJECT_ID,
  expires_at: "2026-11-30T09:20:11.730Z",
} satisfies z.output<typeof Invitation>;

export const forbiddenUnlessAdmin = (what: string) =>
  errorResponse(
    `The caller's role in the organization is not owner or workspace_admin${what}, or the key is read-only`,
    forbidden(),
  );

/** The path parameters of every route under /organizations/{org_id}/workspaces/{workspace_id}. */
const workspaceExamples = { org_id: EXAMPLE_ORGANIZATION_ID, workspace_id: EXAMPLE_WORKSPACE_ID };

/** The path parameters of the /organizations/{org_id}/workspaces/{workspace_id} routes below, with their documented example. */
export const workspacePath = { schema: WorkspaceParams, examples: globalThis.DOCUMENTATION && workspaceExamples };
