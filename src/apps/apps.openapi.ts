import type * as z from "zod";
import { appNameTaken } from "../http/errors";
import { DEMO_IDS, errorResponse, jsonResponse, requestIdParameter, responseRef, schemaRef } from "../http/openapi-parts";
import { CreateAppBody, CreateAppOutput } from "./apps.schemas";

/** The OpenAPI fragment of src/apps/apps.routes.ts: its paths, schemas and own responses; built with the
 * document, on its first request. */
export const appsOpenApi = () => ({
  paths: {
    "/apps": {
      post: {
        operationId: "createApp",
        summary: "Create an app",
        description:
          "Creates the app, with the environments development, staging and production, in `project_id` if given, " +
          "else the default project of `workspace_id`, else that of `organization_id`, else the key's project. " +
          "Answers 200, not 201: existing clients expect 200.",
        parameters: [requestIdParameter],
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: schemaRef("CreateApp"),
              examples: {
                inKeyProject: { summary: "In the key's project", value: { app_name: "my-app" } },
                inOrganization: {
                  summary: "In an organization's default project",
                  value: { app_name: "other-app", organization_id: DEMO_IDS.organization },
                },
              } satisfies Record<string, { summary: string; value: z.input<typeof CreateAppBody> }>,
            },
          },
        },
        responses: {
          200: jsonResponse("The app was created", schemaRef("CreateAppOutput"), {
            app_id: "01a2012d-9c3e-7f10-8a4b-2d6e8f0a1c3e",
            app_name: "my-app",
          } satisfies CreateAppOutput),
          401: responseRef("Unauthorized"),
          403: responseRef("Forbidden"),
          409: responseRef("AppNameTaken"),
          413: responseRef("PayloadTooLarge"),
          415: responseRef("UnsupportedMediaType"),
          422: responseRef("ValidationFailed"),
          429: responseRef("TooManyRequests"),
          500: responseRef("InternalServerError"),
          503: responseRef("ServiceUnavailable"),
        },
      },
    },
  },
  inputSchemas: { CreateApp: CreateAppBody },
  outputSchemas: { CreateAppOutput },
  responses: {
    AppNameTaken: errorResponse("An app of that name already exists in the target project", appNameTaken()),
  },
});
