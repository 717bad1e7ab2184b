import * as z from "zod/mini";
import { DocumentDiffOutput } from "../diff/diff.schemas";
import { documented, schemaName } from "../http/documentation";
import { nameField, queryFlag, uuid } from "../http/fields";
import {
  DEMO_APP_ID,
  DEMO_TEMPERATURE,
  EXAMPLE_PREVIOUS_VARIANT_REVISION_ID,
  EXAMPLE_VARIANT_REVISION_ID,
} from "../http/openapi-parts";
import { applicationRef, environmentRef, ONCE_FIELDS_ARE_VALID, requireResolvableRefs, variantRef } from "./configs.schemas";

/** `configs_deploy`: the variant revision the variant ref names (else the latest) to the environment ref's environment. */
export const DeployConfigBody = /* @__PURE__ */ z
  .object({
    variant_ref: variantRef.check(z.refine((value) => value !== null, "variant_ref needs a slug or an id")),
    environment_ref: environmentRef
      .check(z.refine((value) => value !== null, "environment_ref needs a slug (or an environment revision's id)"))
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The environment to deploy to, by name" })),
    application_ref: applicationRef,
  })
  .check(z.superRefine(requireResolvableRefs({ readsEnvironmentRef: true }), ONCE_FIELDS_ARE_VALID));

/** `deploy_to_environment`: the variant's latest revision. */
export const DeployToEnvironmentBody = /* @__PURE__ */ z.object({
  environment_name: nameField("environment_name"),
  variant_id: uuid,
});

export const RevertParams = /* @__PURE__ */ z.object({
  deployment_revision_id: uuid.apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && { description: "An environment revision's id (a record's revisions[].id)" },
    ),
  ),
});

// Response bodies.

export const REVERTED = "Environment was reverted to deployment revision successful";
export const RevertOutput = /* @__PURE__ */ z
  .literal(REVERTED)
  .apply(
    /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The platform's answer, as its client expects it" }),
  )
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "RevertOutput"));

/** `?dry_run=true` on a deploy or revert (docs/CHANGE-REQUESTS.md §6). */
export const DryRunQuery = /* @__PURE__ */ z.object({
  dry_run: queryFlag.apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description:
          "true: answer what the call would do (the same errors; on success what would change, with the environment's " +
          "current ETag, for If-Match on the real call), writing nothing and claiming no Idempotency-Key",
      },
    ),
  ),
});

/** What a deployment would change: the part of a dry-run's answer an apply's dry-run answers too. */
export const DeploymentPreviewOutput = /* @__PURE__ */ z.object({
  next_environment_revision: z.int(),
  current: z
    .object({
      environment_revision: z.int(),
      variant_revision_id: z.nullable(z.uuid()),
      config_name: z.nullable(z.string()),
      revision: z.nullable(z.int()),
    })
    .apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && { description: "What the environment runs now (revision 0 and nulls: nothing yet)" },
      ),
    ),
  proposed: z.object({ variant_revision_id: z.uuid(), config_name: z.string(), revision: z.int() }),
  diff: DocumentDiffOutput,
});

const DryRunObject = /* @__PURE__ */ z.object({
  dry_run: z.literal(true),
  app_id: z.uuid(),
  environment: z.string(),
  kind: z.enum(["deploy", "revert", "promote"]),
  ...DeploymentPreviewOutput.shape,
});
export type DryRunOutput = z.infer<typeof DryRunObject>;

/** The dry-run of a deploy of the demo config's revision 2 to staging, which runs its revision 1. */
export const DRY_RUN_EXAMPLE: DryRunOutput = {
  dry_run: true,
  app_id: DEMO_APP_ID,
  environment: "staging",
  kind: "deploy",
  next_environment_revision: 3,
  current: {
    environment_revision: 2,
    variant_revision_id: EXAMPLE_PREVIOUS_VARIANT_REVISION_ID,
    config_name: "main",
    revision: 1,
  },
  proposed: { variant_revision_id: EXAMPLE_VARIANT_REVISION_ID, config_name: "main", revision: 2 },
  diff: {
    identical: false,
    coarse: false,
    patch: [{ op: "replace", path: "/params/temperature", value: DEMO_TEMPERATURE }],
    changes: [{ path: "/params/temperature", op: "replace", from: 0.7, to: DEMO_TEMPERATURE }],
  },
};

/** A deploy's or revert's answer to `?dry_run=true`, with the environment's current ETag. */
export const DryRunOutput = /* @__PURE__ */ DryRunObject.apply(
  /* @__PURE__ */ documented(
    globalThis.DOCUMENTATION && {
      description: "The answer to `?dry_run=true`: what the call would change; nothing was written",
      examples: [DRY_RUN_EXAMPLE],
    },
  ),
).apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "DryRun"));
