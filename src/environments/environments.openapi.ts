import * as z from "zod";
import { appEnvironmentNotFound } from "../http/errors";
import { DEMO_IDS, errorResponse, jsonResponse, requestIdParameter, responseRef, schemaRef } from "../http/openapi-parts";
import { EnvironmentRevisions, EnvironmentRevisionsParams, RevisionEntry } from "./environments.schemas";

const demoRecord = {
  name: "development",
  app_id: DEMO_IDS.app,
  project_id: DEMO_IDS.project,
  deployed_app_variant_id: "01a2012d-894c-77b0-ba2e-5b0e6747124c",
  deployed_variant_name: "app.main",
  deployed_app_variant_revision_id: "01a2012d-89b1-72d5-889a-f5c51767a9f4",
  revision: 3,
  revisions: [
    {
      id: "01a2012d-8940-7219-9117-b691493353e3",
      revision: 1,
      modified_by: "demo",
      deployed_app_variant_revision: "01a2012d-8940-7219-9117-af422206e8f5",
      deployment: "01a2012d-8940-7219-9117-b1155a97b58f",
      created_at: "2026-11-22T02:54:51.253Z",
    },
  ],
  organization_id: DEMO_IDS.organization,
  workspace_id: DEMO_IDS.workspace,
} satisfies EnvironmentRevisions;

const pathParameterExamples = { app_id: DEMO_IDS.app, environment_name: "development" } satisfies z.input<
  typeof EnvironmentRevisionsParams
>;

/** The OpenAPI fragment of src/environments/environments.routes.ts: its paths, schemas and own responses; built with the
 * document, on its first request. */
export const environmentsOpenApi = () => ({
  paths: {
    "/apps/{app_id}/revisions/{environment_name}": {
      parameters: Object.entries(z.toJSONSchema(EnvironmentRevisionsParams, { io: "input" }).properties ?? {}).map(
        ([name, schema]) => ({
          name,
          in: "path",
          required: true,
          schema,
          example: pathParameterExamples[name as keyof typeof pathParameterExamples],
        }),
      ),
      get: {
        operationId: "listAppEnvironmentRevisions",
        summary: "Read an environment's deployment record and its revisions",
        description: "`revisions` lists every revision oldest first. HEAD is answered like GET, without a body.",
        parameters: [requestIdParameter],
        responses: {
          200: jsonResponse("The environment's record", schemaRef("EnvironmentRevisions"), demoRecord),
          401: responseRef("Unauthorized"),
          404: responseRef("AppEnvironmentNotFound"),
          422: responseRef("ValidationFailed"),
          429: responseRef("TooManyRequests"),
          500: responseRef("InternalServerError"),
          503: responseRef("ServiceUnavailable"),
        },
      },
    },
  },
  inputSchemas: {},
  outputSchemas: { EnvironmentRevisions, RevisionEntry },
  responses: {
    AppEnvironmentNotFound: errorResponse(
      "The app does not exist, is not visible to the caller, or has no such environment (not told apart)",
      appEnvironmentNotFound(),
    ),
  },
});
