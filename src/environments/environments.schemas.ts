import * as z from "zod";
import type { Environment, EnvironmentRevision } from "../db/environments";
import { nameField, uuid } from "../http/fields";

export const EnvironmentRevisionsParams = z.object({
  app_id: uuid,
  environment_name: nameField("environment_name").meta({
    description: "Matched exactly (case-sensitive); no control characters",
  }),
});

// Response bodies (SPEC 2.3 and 2.4): the typed shapes of what the routes answer, and the source of the OpenAPI
// document, whose test checks real responses against them; nothing parses them at run time.

export const RevisionEntry = z.object({
  id: z.uuid(),
  revision: z.int().min(1),
  modified_by: z.string().meta({ description: "Username of who recorded the deployment" }),
  deployed_app_variant_revision: z.uuid().nullable(),
  deployment: z.uuid().nullable(),
  created_at: z.iso.datetime().meta({ description: "RFC 3339 UTC with milliseconds" }),
});
export type RevisionEntry = z.infer<typeof RevisionEntry>;

export const EnvironmentRevisions = z.object({
  name: z.string().meta({ description: "Environment name" }),
  app_id: z.uuid(),
  project_id: z.uuid(),
  deployed_app_variant_id: z.uuid().nullable(),
  deployed_variant_name: z.string().nullable(),
  deployed_app_variant_revision_id: z.uuid().nullable(),
  revision: z.int().min(0).nullable().meta({ description: "Current revision; 0 before the first deployment" }),
  revisions: z.array(RevisionEntry).meta({ description: "Every revision, oldest first" }),
  organization_id: z.uuid().nullable(),
  workspace_id: z.uuid().nullable(),
});
export type EnvironmentRevisions = z.infer<typeof EnvironmentRevisions>;

export const toEnvironmentRevisions = (environment: Environment, revisions: EnvironmentRevision[]): EnvironmentRevisions => ({
  name: environment.name,
  app_id: environment.appId,
  project_id: environment.projectId,
  deployed_app_variant_id: environment.deployedVariantId,
  deployed_variant_name: environment.deployedVariantName,
  deployed_app_variant_revision_id: environment.deployedVariantRevisionId,
  revision: environment.revision,
  revisions: revisions.map((revision) => ({
    id: revision.id,
    revision: revision.revision,
    modified_by: revision.modifiedBy,
    deployed_app_variant_revision: revision.variantRevisionId,
    deployment: revision.deploymentId,
    created_at: revision.createdAt,
  })),
  organization_id: environment.organizationId,
  workspace_id: environment.workspaceId,
});
