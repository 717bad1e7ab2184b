import { appEnvironmentNotFound } from "../http/errors";
import {
  appPathParameters,
  arrayOf,
  bodilessResponse,
  DEMO_IDS,
  EXAMPLE_IDS,
  errorResponse,
  headerRef,
  jsonResponse,
  operationResponses,
  parametersOf,
  requestHeaders,
  responseRef,
  schemaRef,
  tagged,
} from "../http/openapi-parts";
import { EnvironmentOutput, EnvironmentRevisions, EnvironmentRevisionsParams, RevisionEntry } from "./environments.schemas";

const demoEnvironment = {
  name: "development",
  app_id: DEMO_IDS.app,
  project_id: DEMO_IDS.project,
  deployed_app_variant_id: EXAMPLE_IDS.variant,
  deployed_variant_name: "app.main",
  deployed_app_variant_revision_id: EXAMPLE_IDS.variantRevision,
  revision: 3,
  organization_id: DEMO_IDS.organization,
  workspace_id: DEMO_IDS.workspace,
} satisfies EnvironmentOutput;

const { organization_id, workspace_id, ...demoRecordHead } = demoEnvironment;
const demoRecord = {
  ...demoRecordHead,
  revisions: [
    {
      id: EXAMPLE_IDS.environmentRevision,
      revision: 1,
      modified_by: "demo",
      deployed_app_variant_revision: "01a2012d-8940-7219-9117-af422206e8f5",
      deployment: "01a2012d-8940-7219-9117-b1155a97b58f",
      created_at: "2026-11-22T02:54:51.253Z",
    },
  ],
  // Last, in SPEC 2.3's order.
  organization_id,
  workspace_id,
} satisfies EnvironmentRevisions;

/** The OpenAPI fragment of src/environments/environments.routes.ts: its paths, schemas and own responses; built with the
 * document, on its first request. */
export const environmentsOpenApi = () => ({
  paths: {
    "/apps/{app_id}/revisions/{environment_name}": {
      parameters: parametersOf("path", EnvironmentRevisionsParams, { app_id: DEMO_IDS.app, environment_name: "development" }),
      get: {
        operationId: "listAppEnvironmentRevisions",
        tags: tagged("Environments"),
        summary: "Read an environment's deployment record and its revisions",
        description:
          "`revisions` lists every revision oldest first. HEAD is answered like GET, without a body. The ETag names the " +
          "record's state: If-None-Match with it gets a 304 while the record is unchanged, If-Match with it makes a " +
          "deploy or revert conditional on it.",
        parameters: requestHeaders("IfNoneMatch"),
        responses: operationResponses(
          jsonResponse(
            "The environment's record",
            schemaRef("EnvironmentRevisions"),
            { example: demoRecord },
            { ETag: headerRef("ETag") },
          ),
          {
            304: bodilessResponse("If-None-Match names the record's current ETag: no body", { ETag: headerRef("ETag") }),
            404: responseRef("AppEnvironmentNotFound"),
          },
        ),
      },
    },
    "/apps/{app_id}/environments": {
      parameters: appPathParameters(),
      get: {
        operationId: "listEnvironments",
        tags: tagged("Environments"),
        summary: "List an app's environments",
        description:
          "The app's development, staging and production environments, each with what is deployed there and its current revision.",
        parameters: requestHeaders(),
        responses: operationResponses(
          jsonResponse("The app's environments", arrayOf(schemaRef("EnvironmentOutput")), { example: [demoEnvironment] }),
          { 404: responseRef("AppNotFound") },
        ),
      },
    },
  },
  inputSchemas: {},
  outputSchemas: { EnvironmentRevisions, RevisionEntry, EnvironmentOutput },
  responses: {
    AppEnvironmentNotFound: errorResponse(
      "The app does not exist, is not visible to the caller, or has no such environment (not told apart)",
      appEnvironmentNotFound(),
    ),
  },
});
