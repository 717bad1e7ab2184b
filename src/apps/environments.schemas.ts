import * as z from "zod/mini";
import { variantName } from "../core/variant-names";
import { documented, schemaName } from "../http/documentation";
import { nameField, uuid } from "../http/fields";
import type { Environment, EnvironmentRevision } from "./environments.sql.ts";

export const EnvironmentRevisionsParams = /* @__PURE__ */ z.object({
  app_id: uuid,
  environment_name: nameField("environment_name").apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description: "Matched exactly (case-sensitive); no control characters or line breaks",
      },
    ),
  ),
});

// Response bodies (SPEC 2.3 and 2.4): the typed shapes of what the routes answer, and the source of the OpenAPI
// document, whose test checks real responses against them; nothing parses them at run time.

export const RevisionEntry = /* @__PURE__ */ z
  .object({
    id: z.uuid(),
    revision: z.int().check(z.gte(1)),
    modified_by: z
      .string()
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Username of who recorded the deployment" })),
    deployed_app_variant_revision: z.nullable(z.uuid()),
    deployment: z.nullable(z.uuid()),
    created_at: z.iso
      .datetime()
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "RFC 3339 UTC with milliseconds" })),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "RevisionEntry"));
export type RevisionEntry = z.infer<typeof RevisionEntry>;

/** An environment as `GET /apps/{app_id}/environments` lists it (the platform's EnvironmentOutput). */
export const EnvironmentOutput = /* @__PURE__ */ z
  .object({
    name: z.string().apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Environment name" })),
    app_id: z.uuid(),
    project_id: z.uuid(),
    deployed_app_variant_id: z.nullable(z.uuid()),
    deployed_variant_name: z
      .nullable(z.string())
      .apply(
        /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "`app.<config_name>` of the deployed variant" }),
      ),
    deployed_app_variant_revision_id: z.nullable(z.uuid()),
    deployed_variant_archived: z.boolean().apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description:
            "Whether the deployed variant is archived: the environment keeps running it until its next deploy, but it is " +
            "not deployed again until unarchived; false when nothing is deployed",
        },
      ),
    ),
    revision: z
      .nullable(z.int().check(z.gte(0)))
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "Current revision; 0 before the first deployment" },
        ),
      ),
    organization_id: z.nullable(z.uuid()),
    workspace_id: z.nullable(z.uuid()),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "EnvironmentOutput"));
export type EnvironmentOutput = z.infer<typeof EnvironmentOutput>;

/** An environment with its whole history (SPEC 2.3). */
export const EnvironmentRevisions = /* @__PURE__ */ z
  .extend(EnvironmentOutput, {
    revisions: z
      .array(RevisionEntry)
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Every revision, oldest first" })),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "EnvironmentRevisions"));
export type EnvironmentRevisions = z.infer<typeof EnvironmentRevisions>;

export const toEnvironmentOutput = (environment: Environment): EnvironmentOutput => ({
  name: environment.name,
  app_id: environment.appId,
  project_id: environment.projectId,
  deployed_app_variant_id: environment.deployedVariantId,
  deployed_variant_name: environment.deployedConfigName === null ? null : variantName(environment.deployedConfigName),
  deployed_app_variant_revision_id: environment.deployedVariantRevisionId,
  deployed_variant_archived: environment.deployedVariantArchived === 1,
  revision: environment.revision,
  organization_id: environment.organizationId,
  workspace_id: environment.workspaceId,
});

/** One revision of an environment's history, as the record lists it. */
export const toRevisionEntry = (revision: EnvironmentRevision): RevisionEntry => ({
  id: revision.id,
  revision: revision.revision,
  modified_by: revision.modifiedBy,
  deployed_app_variant_revision: revision.variantRevisionId,
  deployment: revision.deploymentId,
  created_at: revision.createdAt,
});

/** The record of an environment with its history's entries (`toRevisionEntry`). */
export const toEnvironmentRevisions = (environment: Environment, revisions: RevisionEntry[]): EnvironmentRevisions => {
  const { organization_id, workspace_id, ...output } = toEnvironmentOutput(environment);
  // In SPEC 2.3's order, which existing clients have seen on the wire.
  return { ...output, revisions, organization_id, workspace_id };
};
