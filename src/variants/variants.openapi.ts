import type * as z from "zod";
import {
  appEnvironmentNotFound,
  configExists,
  nothingDeployed,
  variantNotFound,
  variantRevisionNotFound,
  variantStillDeployed,
} from "../http/errors";
import {
  appPathParameters,
  arrayOf,
  DEMO_CONFIG_PARAMS,
  DEMO_IDS,
  EXAMPLE_IDS,
  errorResponse,
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
import {
  AddVariantFromBaseBody,
  AppVariant,
  AppVariantRevision,
  UpdateVariantParametersBody,
  VariantByEnvironmentQuery,
  VariantParams,
  VariantRevisionParams,
} from "./variants.schemas";

const demoVariant = {
  app_id: DEMO_IDS.app,
  app_name: "demo-app",
  variant_id: EXAMPLE_IDS.variant,
  variant_name: "app.main",
  project_id: DEMO_IDS.project,
  base_name: "app",
  base_id: DEMO_IDS.app,
  config_name: "main",
  revision: 2,
  parameters: DEMO_CONFIG_PARAMS,
  uri: null,
  created_at: "2026-11-22T02:54:51.201Z",
  updated_at: "2026-11-22T02:54:51.236Z",
  modified_by_id: DEMO_IDS.user,
} satisfies AppVariant;

const demoRevision = {
  id: EXAMPLE_IDS.variantRevision,
  revision: 2,
  modified_by: "demo",
  config: { config_name: "main", parameters: DEMO_CONFIG_PARAMS },
  created_at: "2026-11-22T02:54:51.236Z",
} satisfies AppVariantRevision;

const REMOVED =
  "A removed variant (DELETE /variants/{variant_id}) answers 404 here. Its revisions stay readable by their ids: " +
  "POST /variants/configs/fetch with `variant_ref.id`, and GET /configs/deployment/{deployment_revision_id} for " +
  "what an environment deployed.";

/** The parameters of a new config, as the example of POST /variants/from-base makes it. */
const supportParams = { ...DEMO_CONFIG_PARAMS, prompt: "You answer customer support questions." };

/** The OpenAPI fragment of src/variants/variants.routes.ts: its paths, schemas and own responses; built with the
 * document, on its first request. */
export function variantsOpenApi() {
  const variantPath = parametersOf("path", VariantParams, { variant_id: EXAMPLE_IDS.variant });
  return {
    paths: {
      "/apps/{app_id}/variants": {
        parameters: appPathParameters(),
        get: {
          operationId: "listAppVariants",
          tags: tagged("Variants"),
          summary: "List an app's variants, each with its latest revision",
          description: "Oldest first; removed variants are left out.",
          parameters: requestHeaders(),
          responses: operationResponses(
            jsonResponse("The app's variants, oldest first", arrayOf(schemaRef("AppVariant")), { example: [demoVariant] }),
            { 404: responseRef("AppNotFound") },
          ),
        },
      },
      "/apps/get_variant_by_env": {
        get: {
          operationId: "getVariantByEnv",
          tags: tagged("Variants"),
          summary: "Read the variant deployed to an app's environment",
          description:
            "The variant whose revision the environment runs, as GET /variants/{variant_id} reads it: with its latest " +
            "revision, which may be newer than the one deployed.",
          parameters: [
            ...requestHeaders(),
            ...parametersOf("query", VariantByEnvironmentQuery, { app_id: DEMO_IDS.app, environment: "production" }),
          ],
          responses: operationResponses(jsonResponse("The deployed variant", schemaRef("AppVariant"), { example: demoVariant }), {
            404: responseRef("NoVariantDeployed"),
          }),
        },
      },
      "/variants/from-base": {
        post: {
          operationId: "addVariantFromBase",
          tags: tagged("Variants"),
          summary: "Add a config to an app, with its first parameters",
          description:
            "A new config named `new_config_name`, whose revision 1 holds `parameters`; answers its variant. `base_id` " +
            "is the app's id: every app has one base, named `app`, whose id is its own. `new_variant_name` is accepted " +
            "and ignored: a variant is always named `app.<config name>`.",
          parameters: requestHeaders("IdempotencyKey"),
          requestBody: jsonRequestBody(schemaRef("AddVariantFromBase"), {
            newConfig: {
              summary: "A new config of the app",
              value: {
                base_id: DEMO_IDS.app,
                new_variant_name: "app.support",
                new_config_name: "support",
                parameters: supportParams,
              },
            },
          } satisfies RequestExamples<z.input<typeof AddVariantFromBaseBody>>),
          responses: operationResponses(
            jsonResponse("The new config's variant, at revision 1", schemaRef("AppVariant"), {
              example: {
                ...demoVariant,
                variant_id: "01a2012d-9d01-7b3e-8c4f-2a6d9e1f0b37",
                variant_name: "app.support",
                config_name: "support",
                revision: 1,
                parameters: supportParams,
                created_at: "2026-11-22T03:10:04.512Z",
                updated_at: "2026-11-22T03:10:04.512Z",
              } satisfies AppVariant,
            }),
            {
              400: withKeyErrors(400, "The app already has a config of that name", { configExists: configExists() }),
              404: responseRef("AppNotFound"),
            },
            { write: true, jsonBody: "ConfigPayloadTooLarge", idempotencyKey: "replays" },
          ),
        },
      },
      "/variants/{variant_id}": {
        parameters: variantPath,
        get: {
          operationId: "getVariant",
          tags: tagged("Variants"),
          summary: "Read a variant with its latest revision",
          description: REMOVED,
          parameters: requestHeaders(),
          responses: operationResponses(jsonResponse("The variant", schemaRef("AppVariant"), { example: demoVariant }), {
            404: responseRef("VariantNotFound"),
          }),
        },
        delete: {
          operationId: "removeVariant",
          tags: tagged("Variants"),
          summary: "Remove a variant",
          description:
            "The variant leaves the app's list and every lookup by its name or id, and its config name is free again. " +
            "History is kept: environment histories point at its revisions, which stay readable by their ids (POST " +
            "/variants/configs/fetch with `variant_ref.id`, GET /configs/deployment/{deployment_revision_id}) but are " +
            "never deployed again (deploying one is a 409). While an environment runs one of its revisions, the variant is not removed " +
            "(409): deploy another variant there first. The platform removed it, history and all, without that check.",
          parameters: requestHeaders(),
          responses: operationResponses(
            jsonResponse("The variant is removed", { type: "null" }, { example: null }),
            {
              404: responseRef("VariantNotFound"),
              409: errorResponse(
                "An environment runs one of the variant's revisions (the detail names each such environment); nothing was written",
                variantStillDeployed(["production"]),
              ),
            },
            { write: true },
          ),
        },
      },
      "/variants/{variant_id}/parameters": {
        parameters: variantPath,
        put: {
          operationId: "updateVariantParameters",
          tags: tagged("Variants"),
          summary: "Commit new parameters to a variant",
          description:
            "`parameters` become the variant's next revision: they replace the latest revision's (no merge), its url " +
            "is kept, as with POST /variants/configs/commit. Each request adds a revision, a repeated one too: send an " +
            "Idempotency-Key to retry safely. Answers null.",
          parameters: requestHeaders("IdempotencyKey"),
          requestBody: jsonRequestBody(schemaRef("UpdateVariantParameters"), {
            newParameters: {
              summary: "New parameters",
              value: { parameters: { ...DEMO_CONFIG_PARAMS, temperature: 0.7 } },
            },
          } satisfies RequestExamples<z.input<typeof UpdateVariantParametersBody>>),
          responses: operationResponses(
            jsonResponse("Committed as the variant's next revision", { type: "null" }, { example: null }),
            { 404: responseRef("VariantNotFound") },
            { write: true, jsonBody: "ConfigPayloadTooLarge", idempotencyKey: "replays" },
          ),
        },
      },
      "/variants/{variant_id}/revisions": {
        parameters: variantPath,
        get: {
          operationId: "getVariantRevisions",
          tags: tagged("Variants"),
          summary: "List a variant's revisions",
          description: REMOVED,
          parameters: requestHeaders(),
          responses: operationResponses(
            jsonResponse("Every revision, by number ascending", arrayOf(schemaRef("AppVariantRevision")), {
              example: [demoRevision],
            }),
            { 404: responseRef("VariantNotFound") },
          ),
        },
      },
      "/variants/{variant_id}/revisions/{revision_number}": {
        parameters: parametersOf("path", VariantRevisionParams, { variant_id: EXAMPLE_IDS.variant, revision_number: "2" }),
        get: {
          operationId: "getVariantRevision",
          tags: tagged("Variants"),
          summary: "Read one revision of a variant",
          description: REMOVED,
          parameters: requestHeaders(),
          responses: operationResponses(
            jsonResponse("The revision", schemaRef("AppVariantRevision"), { example: demoRevision }),
            {
              404: responseRef("VariantRevisionNotFound"),
            },
          ),
        },
      },
    },
    inputSchemas: { AddVariantFromBase: AddVariantFromBaseBody, UpdateVariantParameters: UpdateVariantParametersBody },
    outputSchemas: { AppVariant, AppVariantRevision },
    responses: {
      NoVariantDeployed: errorResponse(
        "The app does not exist, is not visible to the caller, or has no such environment; or nothing is deployed there",
        { environmentNotFound: appEnvironmentNotFound(), nothingDeployed: nothingDeployed() },
      ),
      VariantNotFound: errorResponse(
        "The variant does not exist, was removed, or is not visible to the caller (not told apart)",
        variantNotFound(),
      ),
      VariantRevisionNotFound: errorResponse("The variant is not found, or it has no revision of that number", {
        variantNotFound: variantNotFound(),
        revisionNotFound: variantRevisionNotFound(),
      }),
    },
  };
}
