import type * as z from "zod";
import { demoConfigIn } from "../configs/configs.openapi";
import {
  appEnvironmentNotFound,
  configNotFound,
  deploymentRevisionNotFound,
  variantNotFound,
  variantRemoved,
} from "../http/errors";
import {
  EXAMPLE_IDS,
  errorResponse,
  headerRef,
  jsonRequestBody,
  jsonResponse,
  operationResponses,
  parametersOf,
  type RequestExamples,
  requestHeaders,
  responseRef,
  schemaRef,
  tagged,
  withKeyErrors,
} from "../http/openapi-parts";
import { DeployConfigBody, DeployToEnvironmentBody, REVERTED, RevertOutput, RevertParams } from "./deployments.schemas";

const CONDITIONS =
  "With If-Match, only if the environment is still in that state (else 412, nothing written); answers the " +
  "environment's new ETag.";

/** The 409 of a deployment of a revision whose variant was removed, beside that of an Idempotency-Key in flight. */
const removedVariantConflict = () =>
  withKeyErrors(
    409,
    "The revision belongs to a variant that was removed (DELETE /variants/{variant_id}): its revisions stay in " +
      "environment histories but are never deployed again; nothing was written. Deploy another config",
    { variantRemoved: variantRemoved() },
  );

/**
 * A deployment's responses: its 200 (this body, with the environment's new ETag), its 404, a 412, the key's; and,
 * where the revision deployed may be one of a removed variant (`removable`), that 409.
 */
const deploymentResponses = (
  ok: { description: string; schema: object; example: unknown },
  notFound: string,
  { jsonBody, removable = false }: { jsonBody?: "PayloadTooLarge"; removable?: boolean } = {},
) => {
  const errors: Record<number, object> = { 404: responseRef(notFound), 412: responseRef("EnvironmentMovedOn") };
  if (removable) errors[409] = removedVariantConflict();
  return operationResponses(
    jsonResponse(ok.description, ok.schema, { example: ok.example }, { ETag: headerRef("ETag") }),
    errors,
    { write: true, idempotencyKey: "replays", jsonBody },
  );
};

/** The OpenAPI fragment of src/deployments/deployments.routes.ts: its paths, schemas and own responses; built with
 * the document, on its first request. */
export const deploymentsOpenApi = () => ({
  paths: {
    "/variants/configs/deploy": {
      post: {
        operationId: "deployConfig",
        tags: tagged("Deployments"),
        summary: "Deploy a config revision to an app's environment",
        description:
          "Deploys the revision `variant_ref` names (its `version` or revision `id`, else the latest) to the " +
          "environment `environment_ref.slug` names, any of the app's, as a new environment revision. " +
          CONDITIONS,
        parameters: requestHeaders("IdempotencyKey", "IfMatch"),
        requestBody: jsonRequestBody(schemaRef("DeployConfig"), {
          latestToStaging: {
            summary: "The latest revision of a config, to staging",
            value: { application_ref: { slug: "demo-app" }, variant_ref: { slug: "main" }, environment_ref: { slug: "staging" } },
          },
          revisionToProduction: {
            summary: "A revision of a config, to production",
            value: {
              application_ref: { slug: "demo-app" },
              variant_ref: { slug: "main", version: 1 },
              environment_ref: { slug: "production" },
            },
          },
        } satisfies RequestExamples<z.input<typeof DeployConfigBody>>),
        responses: deploymentResponses(
          {
            description: "The config as the environment now serves it",
            schema: schemaRef("ConfigOutput"),
            example: demoConfigIn("staging", 2),
          },
          "DeployTargetNotFound",
          { jsonBody: "PayloadTooLarge", removable: true },
        ),
      },
    },
    "/environments/deploy": {
      post: {
        operationId: "deployToEnvironment",
        tags: tagged("Deployments"),
        summary: "Deploy a variant's latest revision to an app's environment",
        description: `Deploys the variant's latest revision to its app's environment \`environment_name\`, as a new environment revision. ${CONDITIONS}`,
        parameters: requestHeaders("IdempotencyKey", "IfMatch"),
        requestBody: jsonRequestBody(schemaRef("DeployToEnvironment"), {
          toStaging: { summary: "To staging", value: { environment_name: "staging", variant_id: EXAMPLE_IDS.variant } },
        } satisfies RequestExamples<z.input<typeof DeployToEnvironmentBody>>),
        responses: deploymentResponses(
          { description: "Deployed", schema: { type: "null" }, example: null },
          "DeployVariantNotFound",
          {
            jsonBody: "PayloadTooLarge",
          },
        ),
      },
    },
    "/configs/deployment/{deployment_revision_id}/revert": {
      parameters: parametersOf("path", RevertParams, { deployment_revision_id: EXAMPLE_IDS.environmentRevision }),
      post: {
        operationId: "revertDeploymentRevision",
        tags: tagged("Deployments"),
        summary: "Deploy again what an environment revision deployed",
        description:
          "A new revision of that revision's environment, deploying the same variant revision; the history keeps " +
          `both. No body. ${CONDITIONS}`,
        parameters: requestHeaders("IdempotencyKey", "IfMatch"),
        responses: deploymentResponses(
          { description: "Reverted", schema: schemaRef("RevertOutput"), example: REVERTED },
          "DeploymentRevisionNotFound",
          { removable: true },
        ),
      },
    },
  },
  inputSchemas: { DeployConfig: DeployConfigBody, DeployToEnvironment: DeployToEnvironmentBody },
  outputSchemas: { RevertOutput },
  responses: {
    DeployTargetNotFound: errorResponse(
      "No such app or config visible to the caller, or no revision of that version; or the app has no such environment",
      { configNotFound: configNotFound(), environmentNotFound: appEnvironmentNotFound() },
    ),
    DeployVariantNotFound: errorResponse(
      "The variant does not exist, was removed, or is not visible to the caller; or its app has no such environment",
      { variantNotFound: variantNotFound(), environmentNotFound: appEnvironmentNotFound() },
    ),
    DeploymentRevisionNotFound: errorResponse(
      "No environment revision of that id visible to the caller (not told apart)",
      deploymentRevisionNotFound(),
    ),
  },
});
