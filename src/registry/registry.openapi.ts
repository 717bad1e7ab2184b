import type * as z from "zod";
import { configNameTaken, configNotFound } from "../http/errors";
import {
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
  Base,
  DeploymentRevisionParams,
  GetConfigQuery,
  ListBasesQuery,
  RegistryConfig,
  SaveConfigBody,
} from "./registry.schemas";

const BASE_ID = "`base_id` is the app's id: every app has one base, named `app`, whose id is its own.";

/** The demo app's config `main` as production runs it (revision 2), and as production's revision 1 deployed it. */
const demoInProduction = { config_name: "main", current_version: 2, parameters: DEMO_CONFIG_PARAMS } satisfies RegistryConfig;
const demoOfDeployment = { ...demoInProduction, current_version: 1 } satisfies RegistryConfig;

/** The OpenAPI fragment of src/registry/registry.routes.ts: its paths, schemas and own responses; built with the
 * document, on its first request. */
export const registryOpenApi = () => ({
  paths: {
    "/configs": {
      get: {
        operationId: "getConfig",
        tags: tagged("Older SDK"),
        summary: "Read the config an environment runs, or a config's latest revision",
        description:
          "What the older SDK reads each time an app starts. With `environment_name`: the config revision that " +
          "environment runs (`current_version` is that config revision's number); else, with `config_name`: that " +
          `config's latest revision. The environment wins when both are given. ${BASE_ID} Any role in the app's ` +
          "organization may read (the platform asked for the right to edit configs). A config, environment or app " +
          "that does not exist or is not visible, or an environment that runs nothing, is a 404 (the platform " +
          "answered 400 or 500).",
        parameters: [
          ...requestHeaders(),
          ...parametersOf("query", GetConfigQuery, {
            base_id: DEMO_IDS.app,
            environment_name: "production",
            config_name: "main",
          }),
        ],
        responses: operationResponses(jsonResponse("The config", schemaRef("RegistryConfig"), { example: demoInProduction }), {
          404: responseRef("RegistryConfigNotFound"),
        }),
      },
      post: {
        operationId: "saveConfig",
        tags: tagged("Older SDK"),
        summary: "Save a config's parameters under its name",
        description:
          "When the app has no config of that name: a new config, whose revision 1 holds `parameters` (not deployed). " +
          "When it has one: with `overwrite` true, or while that config's latest parameters are still `{}`, a new " +
          "revision holding `parameters`, deployed to production at once, as the platform does (both or neither); the " +
          "deployment is a normal entry of production's history (GET /apps/{app_id}/revisions/production), which may " +
          "be reverted like any other. Else 400, and nothing is " +
          `written. ${BASE_ID} Answers null.`,
        parameters: requestHeaders("IdempotencyKey"),
        requestBody: jsonRequestBody(schemaRef("SaveConfig"), {
          newConfig: {
            summary: "A new config",
            value: {
              base_id: DEMO_IDS.app,
              config_name: "support",
              parameters: { ...DEMO_CONFIG_PARAMS, prompt: "You answer customer support questions." },
              overwrite: false,
            },
          },
          overwrite: {
            summary: "New parameters for a config, deployed to production",
            value: {
              base_id: DEMO_IDS.app,
              config_name: "main",
              parameters: { ...DEMO_CONFIG_PARAMS, temperature: 0.7 },
              overwrite: true,
            },
          },
        } satisfies RequestExamples<z.input<typeof SaveConfigBody>>),
        responses: operationResponses(
          jsonResponse("Saved (and deployed to production, when it overwrote a config)", { type: "null" }, { example: null }),
          {
            400: withKeyErrors(
              400,
              "The app has a config of that name, `overwrite` is false and its latest parameters are not `{}`",
              { configNameTaken: configNameTaken() },
            ),
            404: responseRef("AppNotFound"),
          },
          { write: true, jsonBody: "ConfigPayloadTooLarge", idempotencyKey: "replays" },
        ),
      },
    },
    "/configs/deployment/{deployment_revision_id}": {
      parameters: parametersOf("path", DeploymentRevisionParams, { deployment_revision_id: EXAMPLE_IDS.environmentRevision }),
      get: {
        operationId: "getConfigDeploymentRevision",
        tags: tagged("Older SDK"),
        summary: "Read the config an environment revision deployed",
        description:
          "The id is one of `revisions[].id` of GET /apps/{app_id}/revisions/{environment_name}. `current_version` is " +
          "that environment revision's number, as on the platform; `config_name` and `parameters` are those of the " +
          "config revision it deployed, also when that variant has been removed since.",
        parameters: requestHeaders(),
        responses: operationResponses(
          jsonResponse("The config that environment revision deployed", schemaRef("RegistryConfig"), {
            example: demoOfDeployment,
          }),
          { 404: responseRef("DeployedConfigNotFound") },
        ),
      },
    },
    "/bases": {
      get: {
        operationId: "listBases",
        tags: tagged("Older SDK"),
        summary: "List an app's bases",
        description:
          "Every app has exactly one base, named `app`, whose `base_id` is the app's id: the list holds it, or nothing " +
          "when `base_name` names another.",
        parameters: [...requestHeaders(), ...parametersOf("query", ListBasesQuery, { app_id: DEMO_IDS.app, base_name: "app" })],
        responses: operationResponses(
          jsonResponse("The app's base, or none", arrayOf(schemaRef("Base")), {
            example: [{ base_id: DEMO_IDS.app, base_name: "app" }] satisfies Base[],
          }),
          { 404: responseRef("AppNotFound") },
        ),
      },
    },
  },
  inputSchemas: { SaveConfig: SaveConfigBody },
  outputSchemas: { RegistryConfig, Base },
  responses: {
    RegistryConfigNotFound: errorResponse(
      "No such app, config or environment visible to the caller, or nothing deployed to the environment (not told apart)",
      configNotFound(),
    ),
    DeployedConfigNotFound: errorResponse(
      "No environment revision of that id visible to the caller (not told apart)",
      configNotFound(),
    ),
  },
});
