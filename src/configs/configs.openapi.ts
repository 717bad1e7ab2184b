import type * as z from "zod";
import { configExists, configNotFound, payloadTooLarge, staleConfig } from "../http/errors";
import {
  DEMO_CONFIG_PARAMS,
  DEMO_IDS,
  EXAMPLE_IDS,
  errorResponse,
  jsonRequestBody,
  jsonResponse,
  operationResponses,
  type RequestExamples,
  requestHeaders,
  responseRef,
  schemaRef,
  tagged,
  withKeyErrors,
} from "../http/openapi-parts";
import { MAX_CONFIG_BODY_BYTES } from "../http/validation";
import { AddConfigBody, CommitConfigBody, ConfigOutput, FetchConfigBody } from "./configs.schemas";

// The flat commit body: CommitConfigBody unwraps `{"config": {...}}` before validating with it.
const CommitConfig = CommitConfigBody.out;

const demoApp = { slug: "demo-app" };
const lifecycle = {
  created_at: "2026-11-22T02:54:51.236Z",
  updated_at: "2026-11-22T02:54:51.236Z",
  updated_by: "demo@example.com",
  updated_by_id: DEMO_IDS.user,
};

const demoConfig = {
  params: DEMO_CONFIG_PARAMS,
  url: "",
  application_ref: { slug: "demo-app", version: null, id: DEMO_IDS.app },
  service_ref: null,
  variant_ref: { slug: "main", version: 2, id: EXAMPLE_IDS.variantRevision },
  environment_ref: null,
  variant_lifecycle: lifecycle,
  environment_lifecycle: null,
} satisfies ConfigOutput;

/** The demo config at another revision, holding these params. */
const demoConfigAt = (version: number, params: Record<string, unknown>): ConfigOutput => ({
  ...demoConfig,
  params,
  variant_ref: { ...demoConfig.variant_ref, version },
});

/** The demo config as an environment serves it, at that environment's revision. */
export const demoConfigIn = (environment: string, revision: number): ConfigOutput => ({
  ...demoConfig,
  environment_ref: { slug: environment, version: revision, id: EXAMPLE_IDS.environmentRevision },
  environment_lifecycle: lifecycle,
});

const configResponse = (description: string, example: ConfigOutput) =>
  jsonResponse(description, schemaRef("ConfigOutput"), { example });

const fetchExamples = {
  latestOfVariant: {
    summary: "The latest revision of a config",
    value: { application_ref: demoApp, variant_ref: { slug: "main" } },
  },
  variantRevision: {
    summary: "A revision of a config",
    value: { application_ref: demoApp, variant_ref: { slug: "main", version: 1 } },
  },
  deployed: {
    summary: "What an environment has deployed",
    value: { application_ref: demoApp, environment_ref: { slug: "production" } },
  },
  production: { summary: "What the app's production environment has deployed", value: { application_ref: demoApp } },
} satisfies RequestExamples<z.input<typeof FetchConfigBody>>;

const commit = {
  params: { ...DEMO_CONFIG_PARAMS, temperature: 0.7 },
  application_ref: demoApp,
  variant_ref: { slug: "main", version: 2 },
} satisfies z.input<typeof CommitConfig>;

/** The OpenAPI fragment of src/configs/configs.routes.ts: its paths, schemas and own responses; built with the
 * document, on its first request. */
export const configsOpenApi = () => ({
  paths: {
    "/variants/configs/add": {
      post: {
        operationId: "addConfig",
        tags: tagged("Configs"),
        summary: "Add a config (a variant) to an app",
        description:
          'Its revision 1 holds params `{}` and url `""`. `application_ref` is required: an app named by `slug` is looked ' +
          "up in the key's project, by `id` among the apps the caller can see.",
        parameters: requestHeaders("IdempotencyKey"),
        requestBody: jsonRequestBody(schemaRef("AddConfig"), {
          byAppName: {
            summary: "To an app of the key's project",
            value: { application_ref: demoApp, variant_ref: { slug: "experiment" } },
          },
        } satisfies RequestExamples<z.input<typeof AddConfigBody>>),
        responses: operationResponses(
          configResponse("The new config, at revision 1", demoConfigAt(1, {})),
          {
            400: withKeyErrors(400, "The app already has a config of that name", { configExists: configExists() }),
            404: responseRef("ConfigNotFound"),
          },
          { write: true, jsonBody: "PayloadTooLarge", idempotencyKey: "replays" },
        ),
      },
    },
    "/variants/configs/commit": {
      post: {
        operationId: "commitConfig",
        tags: tagged("Configs"),
        summary: "Commit a new revision of a config",
        description:
          "`params` replace the latest revision's (no merge); `url` too when given. `variant_ref` is required; when it " +
          "names a `version` (or a revision `id`), that must be the latest revision, else 409. The body may also come " +
          'wrapped, as `{"config": {...}}`.',
        parameters: requestHeaders("IdempotencyKey"),
        requestBody: jsonRequestBody(
          {
            oneOf: [
              schemaRef("CommitConfig"),
              {
                type: "object",
                description: "The same, wrapped (as later clients send it); a body with `params` is read flat",
                properties: { config: schemaRef("CommitConfig") },
                required: ["config"],
                not: { required: ["params"] },
              },
            ],
          },
          {
            flat: { summary: "On top of revision 2", value: commit },
            wrapped: { summary: "The same, wrapped", value: { config: commit } },
          } satisfies RequestExamples<z.input<typeof CommitConfig> | { config: z.input<typeof CommitConfig> }>,
        ),
        responses: operationResponses(
          configResponse("The config at its new revision", demoConfigAt(3, commit.params)),
          {
            404: responseRef("ConfigNotFound"),
            409: withKeyErrors(
              409,
              "The version committed on is not the latest revision (the detail names the latest): fetch it and commit on top of it",
              { configChanged: staleConfig(2) },
            ),
          },
          { write: true, jsonBody: "ConfigPayloadTooLarge", idempotencyKey: "replays" },
        ),
      },
    },
    "/variants/configs/fetch": {
      post: {
        operationId: "fetchConfig",
        tags: tagged("Configs"),
        summary: "Read a config",
        description:
          "A `variant_ref` wins (its `version`, else the latest; or its revision `id`); else an `environment_ref` (its " +
          "`version`, else the current revision; or its revision `id`); neither, with an `application_ref`: the app's " +
          "production environment. Reached through an environment, `environment_ref` and `environment_lifecycle` are set.",
        parameters: requestHeaders("IdempotencyKey"),
        requestBody: jsonRequestBody(schemaRef("FetchConfig"), fetchExamples),
        responses: operationResponses(
          configResponse("The config", demoConfigIn("production", 1)),
          { 404: responseRef("ConfigNotFound") },
          { jsonBody: "PayloadTooLarge", idempotencyKey: "validates" },
        ),
      },
    },
    "/variants/configs/fork": {
      post: {
        operationId: "forkConfig",
        tags: tagged("Configs"),
        summary: "Fork a config into a new one of the same app",
        description:
          "The config is found as by fetch; the new one, `<config_name>_<8 hex digits>`, has a revision 1 holding its params and url.",
        parameters: requestHeaders("IdempotencyKey"),
        requestBody: jsonRequestBody(schemaRef("FetchConfig"), fetchExamples),
        responses: operationResponses(
          configResponse("The new config, at revision 1", {
            ...demoConfig,
            variant_ref: { slug: "main_3f9a0c12", version: 1, id: "01a2012d-9d02-7c4e-9a51-0b7f3e2d6c18" },
          }),
          { 404: responseRef("ConfigNotFound") },
          { write: true, jsonBody: "PayloadTooLarge", idempotencyKey: "replays" },
        ),
      },
    },
  },
  inputSchemas: { AddConfig: AddConfigBody, CommitConfig, FetchConfig: FetchConfigBody },
  outputSchemas: { ConfigOutput },
  responses: {
    ConfigNotFound: errorResponse(
      "No such app, config, revision or environment visible to the caller, or the refs disagree (not told apart)",
      configNotFound(),
    ),
    ConfigPayloadTooLarge: errorResponse(
      `Request body over ${MAX_CONFIG_BODY_BYTES} bytes`,
      payloadTooLarge(MAX_CONFIG_BODY_BYTES),
    ),
  },
});
