import { appEnvironmentNotFound, nothingDeployed, variantNotFound, variantRevisionNotFound } from "../http/errors";
import {
  appPathParameters,
  arrayOf,
  DEMO_CONFIG_PARAMS,
  DEMO_IDS,
  EXAMPLE_IDS,
  errorResponse,
  jsonResponse,
  operationResponses,
  parametersOf,
  requestHeaders,
  responseRef,
  schemaRef,
} from "../http/openapi-parts";
import {
  AppVariant,
  AppVariantRevision,
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
          summary: "List an app's variants, each with its latest revision",
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
          summary: "Read the variant deployed to an app's environment",
          parameters: [
            ...requestHeaders(),
            ...parametersOf("query", VariantByEnvironmentQuery, { app_id: DEMO_IDS.app, environment: "production" }),
          ],
          responses: operationResponses(jsonResponse("The deployed variant", schemaRef("AppVariant"), { example: demoVariant }), {
            404: responseRef("NoVariantDeployed"),
          }),
        },
      },
      "/variants/{variant_id}": {
        parameters: variantPath,
        get: {
          operationId: "getVariant",
          summary: "Read a variant with its latest revision",
          parameters: requestHeaders(),
          responses: operationResponses(jsonResponse("The variant", schemaRef("AppVariant"), { example: demoVariant }), {
            404: responseRef("VariantNotFound"),
          }),
        },
      },
      "/variants/{variant_id}/revisions": {
        parameters: variantPath,
        get: {
          operationId: "getVariantRevisions",
          summary: "List a variant's revisions",
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
          summary: "Read one revision of a variant",
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
    inputSchemas: {},
    outputSchemas: { AppVariant, AppVariantRevision },
    responses: {
      NoVariantDeployed: errorResponse(
        "The app does not exist, is not visible to the caller, or has no such environment; or nothing is deployed there",
        { environmentNotFound: appEnvironmentNotFound(), nothingDeployed: nothingDeployed() },
      ),
      VariantNotFound: errorResponse(
        "The variant does not exist or is not visible to the caller (not told apart)",
        variantNotFound(),
      ),
      VariantRevisionNotFound: errorResponse("The variant is not found, or it has no revision of that number", {
        variantNotFound: variantNotFound(),
        revisionNotFound: variantRevisionNotFound(),
      }),
    },
  };
}
