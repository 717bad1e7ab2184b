import * as z from "zod";
import { documented, schemaName } from "../http/documentation";
import { nameField, uuid } from "../http/fields";
import { applicationRef, environmentRef, ONCE_FIELDS_ARE_VALID, requireResolvableRefs, variantRef } from "./configs.schemas";

/** `configs_deploy`: the variant revision the variant ref names (else the latest) to the environment ref's environment. */
export const DeployConfigBody = z
  .object({
    variant_ref: variantRef.refine((value) => value !== null, "variant_ref needs a slug or an id"),
    environment_ref: environmentRef
      .refine((value) => value !== null, "environment_ref needs a slug (or an environment revision's id)")
      .apply(documented(globalThis.DOCUMENTATION && { description: "The environment to deploy to, by name" })),
    application_ref: applicationRef,
  })
  .superRefine(requireResolvableRefs({ readsEnvironmentRef: true }), ONCE_FIELDS_ARE_VALID);

/** `deploy_to_environment`: the variant's latest revision. */
export const DeployToEnvironmentBody = z.object({
  environment_name: nameField("environment_name"),
  variant_id: uuid,
});

export const RevertParams = z.object({
  deployment_revision_id: uuid.apply(
    documented(globalThis.DOCUMENTATION && { description: "An environment revision's id (a record's revisions[].id)" }),
  ),
});

// Response bodies.

export const REVERTED = "Environment was reverted to deployment revision successful";
export const RevertOutput = z
  .literal(REVERTED)
  .apply(documented(globalThis.DOCUMENTATION && { description: "The platform's answer, as its client expects it" }))
  .apply(schemaName(globalThis.DOCUMENTATION && "RevertOutput"));
