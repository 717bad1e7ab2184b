import * as z from "zod/mini";
import type { Config } from "../core/configs.sql.ts";
import { BASE_NAME } from "../core/variant-names";
import { documented, schemaName } from "../http/documentation";
import { nameField, newNameField, uuid } from "../http/fields";
import { DeploymentPreviewOutput } from "../variants/deployments.schemas";
import { parametersField } from "../variants/variants.schemas";

const baseId = /* @__PURE__ */ uuid.apply(
  /* @__PURE__ */ documented(
    globalThis.DOCUMENTATION && { description: "The app's id: every app has one implicit base, whose id is the app's" },
  ),
);

/** `get_config`: what an environment runs, or a config's latest revision (the environment wins when both are named). */
export const GetConfigQuery = /* @__PURE__ */ z
  .object({
    base_id: baseId,
    environment_name: z
      .optional(nameField("environment_name"))
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "What this environment runs (wins over config_name)" },
        ),
      ),
    config_name: z
      .optional(nameField("config_name", { nfc: true }))
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "This config's latest revision" })),
  })
  .check(
    z.refine((query) => query.environment_name !== undefined || query.config_name !== undefined, {
      message: "environment_name or config_name is required",
      path: ["environment_name"],
    }),
  );

/** `save_config`. */
export const SaveConfigBody = /* @__PURE__ */ z.object({
  base_id: baseId,
  config_name: newNameField("config_name").apply(
    /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The config's name: the rules of a new app_name" }),
  ),
  parameters: parametersField,
  overwrite: z.boolean().apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description: "When the name is taken: commit over it and deploy to production (also done when its params are still {})",
      },
    ),
  ),
});

export const DeploymentRevisionParams = /* @__PURE__ */ z.object({
  deployment_revision_id: uuid.apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && { description: "An environment revision's id (a record's revisions[].id)" },
    ),
  ),
});

/** `list_bases`. */
export const ListBasesQuery = /* @__PURE__ */ z.object({
  app_id: uuid,
  base_name: z
    .optional(z.string())
    .apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && { description: `Only the base of this name: "${BASE_NAME}" is the only one` },
      ),
    ),
});

// Response bodies.

/** A config as the older SDK reads it (the platform's GetConfigResponse). */
export const RegistryConfig = /* @__PURE__ */ z
  .object({
    config_name: z.string(),
    current_version: z.int().apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description: "GET /configs: the variant revision's number; GET /configs/deployment/{id}: the environment revision's",
        },
      ),
    ),
    parameters: z.record(z.string(), z.unknown()),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "RegistryConfig"));
export type RegistryConfig = z.infer<typeof RegistryConfig>;

export const toRegistryConfig = (config: Config, currentVersion: number): RegistryConfig => ({
  config_name: config.configName,
  current_version: currentVersion,
  parameters: config.params,
});

export const Base = /* @__PURE__ */ z
  .object({
    base_id: z.uuid().apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The app's id" })),
    base_name: z.literal(BASE_NAME),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "Base"));
export type Base = z.infer<typeof Base>;

/** POST /configs?dry_run=true: the revision a save would make, and its deploy to production; nothing was written. */
export const SaveConfigDryRun = /* @__PURE__ */ z
  .object({
    dry_run: z.literal(true),
    app_id: z.uuid(),
    config_name: z.string(),
    kind: z.literal("save"),
    revision: z
      .int()
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The config revision the save would make" })),
    deploy: z
      .nullable(
        z.object({
          environment: z.literal("production"),
          next_environment_revision: DeploymentPreviewOutput.shape.next_environment_revision,
          current: DeploymentPreviewOutput.shape.current,
          diff: DeploymentPreviewOutput.shape.diff,
        }),
      )
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && {
            description:
              "The deploy to production that follows an overwrite (from what production runs now); null for a new config",
          },
        ),
      ),
  })
  .apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description: "The answer to `?dry_run=true`: what the save would write; nothing was written",
      },
    ),
  )
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "SaveConfigDryRun"));
