import * as z from "zod/mini";
import type { Config } from "../core/configs.sql.ts";
import { BASE_NAME, variantName } from "../core/variant-names";
import { documented, schemaName } from "../http/documentation";
import { commitMessage, integerParam, jsonObject, MAX_JSON_DEPTH, nameField, newNameField, uuid } from "../http/fields";
import type { Variant, VariantRevision } from "./variants.sql.ts";

export const VariantParams = /* @__PURE__ */ z.object({ variant_id: uuid });

export const VariantRevisionParams = /* @__PURE__ */ z.object({
  variant_id: uuid,
  revision_number: integerParam.apply(
    /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "A revision number, 1 or more" }),
  ),
});

export const VariantByEnvironmentQuery = /* @__PURE__ */ z.object({
  app_id: uuid,
  environment: nameField("environment").apply(
    /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Environment name, matched exactly" }),
  ),
});

/** Params as the older SDK's calls send them. */
export const parametersField = /* @__PURE__ */ jsonObject("parameters").apply(
  /* @__PURE__ */ documented(
    globalThis.DOCUMENTATION && {
      description: `Any JSON object of at most ${MAX_JSON_DEPTH} levels; numbers kept digit for digit`,
    },
  ),
);

/** `add_variant_from_base_and_config`. */
export const AddVariantFromBaseBody = /* @__PURE__ */ z.object({
  base_id: uuid.apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && { description: "The app's id: every app has one implicit base, whose id is the app's" },
    ),
  ),
  new_variant_name: z
    .optional(z.string())
    .apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && { description: "Accepted and ignored: a variant's name is always `app.<new_config_name>`" },
      ),
    ),
  new_config_name: newNameField("new_config_name").apply(
    /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The new config's name: the rules of a new app_name" }),
  ),
  parameters: parametersField.apply(
    /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Revision 1's params" }),
  ),
});

/** `update_variant_parameters`. */
export const UpdateVariantParametersBody = /* @__PURE__ */ z.object({
  parameters: parametersField.apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && { description: "The next revision's params: they replace the latest's (no merge)" },
    ),
  ),
  commit_message: z
    .nullish(commitMessage("commit_message"))
    .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Stored with the new revision" })),
});

// Response bodies: the typed shapes of what the routes answer, and the source of the OpenAPI document.

const params = /* @__PURE__ */ z
  .record(z.string(), z.unknown())
  .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The config's parameters: any JSON object" }));

/** A variant with its latest revision (the platform's AppVariantResponse). */
export const AppVariant = /* @__PURE__ */ z
  .object({
    app_id: z.uuid(),
    app_name: z.string(),
    variant_id: z.uuid(),
    variant_name: z
      .string()
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "`app.<config_name>`" })),
    project_id: z.uuid(),
    base_name: z.literal(BASE_NAME),
    base_id: z
      .uuid()
      .apply(
        /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The app's id: every app has one implicit base" }),
      ),
    config_name: z.string(),
    revision: z
      .int()
      .check(z.gte(1))
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The latest revision" })),
    parameters: params.apply(
      /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The latest revision's params" }),
    ),
    uri: z.null(),
    created_at: z.iso
      .datetime()
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "When the variant was created" })),
    updated_at: z.iso
      .datetime()
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "When its latest revision was committed" })),
    modified_by_id: z
      .uuid()
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Who committed the latest revision" })),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "AppVariant"));
export type AppVariant = z.infer<typeof AppVariant>;

/** One revision of a variant (the platform's AppVariantRevision). */
export const AppVariantRevision = /* @__PURE__ */ z
  .object({
    id: z.uuid(),
    revision: z.int().check(z.gte(1)),
    modified_by: z
      .string()
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Username of who committed the revision" })),
    config: z.object({ config_name: z.string(), parameters: params }),
    created_at: z.iso.datetime(),
    commit_message: z.nullable(z.string()).apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description: "The message it was committed with (`variant_ref.commit_message`, or the current API's `message`)",
        },
      ),
    ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "AppVariantRevision"));
export type AppVariantRevision = z.infer<typeof AppVariantRevision>;

export const toAppVariant = (variant: Variant): AppVariant => ({
  app_id: variant.appId,
  app_name: variant.appName,
  variant_id: variant.id,
  variant_name: variantName(variant.configName),
  project_id: variant.projectId,
  base_name: BASE_NAME,
  base_id: variant.appId,
  config_name: variant.configName,
  revision: variant.revision,
  parameters: variant.params,
  uri: null,
  created_at: variant.createdAt,
  updated_at: variant.updatedAt,
  modified_by_id: variant.modifiedById,
});

export const toAppVariantRevision = (revision: VariantRevision): AppVariantRevision => ({
  id: revision.id,
  revision: revision.revision,
  modified_by: revision.modifiedBy,
  config: { config_name: revision.configName, parameters: revision.params },
  created_at: revision.createdAt,
  commit_message: revision.commitMessage,
});

/** The AppVariant of a config a write made: its variant, at that revision. */
export const configAsAppVariant = (config: Config): AppVariant =>
  toAppVariant({
    id: config.variantId,
    appId: config.appId,
    appName: config.appName,
    projectId: config.projectId,
    configName: config.configName,
    createdAt: config.variantCreatedAt,
    revision: config.revision,
    params: config.params,
    updatedAt: config.revisionCreatedAt,
    modifiedById: config.revisionModifiedById,
  });

/** DELETE /variants/{variant_id}?dry_run=true: what the removal would remove; nothing was written. */
export const RemoveVariantDryRun = /* @__PURE__ */ z
  .object({
    dry_run: z.literal(true),
    variant_id: z.uuid(),
    app_id: z.uuid(),
    config_name: z.string(),
    kind: z.literal("delete"),
    revisions: z
      .int()
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "Its revisions, which stay readable by their ids" },
        ),
      ),
  })
  .apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description: "The answer to `?dry_run=true`: what the removal would remove; nothing was written",
      },
    ),
  )
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "RemoveVariantDryRun"));
