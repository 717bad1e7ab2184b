import type * as z from "zod";
import { appNameTaken, appNotFound } from "../http/errors";
import {
  appPathParameters,
  arrayOf,
  DEMO_IDS,
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
import { AppListItem, CreateAppBody, CreateAppOutput, ListAppsQuery, UpdateAppBody } from "./apps.schemas";

const NAME_TAKEN = "An app of that name already exists in the target project";

const newApp = { app_id: "01a2012d-9c3e-7f10-8a4b-2d6e8f0a1c3e", app_name: "my-app" } satisfies CreateAppOutput;

/** The OpenAPI fragment of src/apps/apps.routes.ts: its paths, schemas and own responses; built with the
 * document, on its first request. */
export const appsOpenApi = () => ({
  paths: {
    "/apps": {
      get: {
        operationId: "listApps",
        tags: tagged("Apps"),
        summary: "List the apps of the key's project, or of a workspace's default project",
        description: "Oldest first; `[]` when nothing matches or the caller is not a member of the project's organization.",
        parameters: [
          ...requestHeaders(),
          ...parametersOf("query", ListAppsQuery, { app_name: "demo-app", workspace_id: DEMO_IDS.workspace }),
        ],
        responses: operationResponses(
          jsonResponse("The apps, oldest first", arrayOf(schemaRef("AppListItem")), {
            example: [
              { app_id: DEMO_IDS.app, app_name: "demo-app", updated_at: "2026-11-22T02:54:51.253Z" },
            ] satisfies AppListItem[],
          }),
        ),
      },
      post: {
        operationId: "createApp",
        tags: tagged("Apps"),
        summary: "Create an app",
        description:
          "Creates the app, with the environments development, staging and production, in `project_id` if given, " +
          "else the default project of `workspace_id`, else that of `organization_id`, else the key's project. " +
          "Answers 200, not 201: existing clients expect 200.",
        parameters: requestHeaders("IdempotencyKey"),
        requestBody: jsonRequestBody(schemaRef("CreateApp"), {
          inKeyProject: { summary: "In the key's project", value: { app_name: "my-app" } },
          inOrganization: {
            summary: "In an organization's default project",
            value: { app_name: "other-app", organization_id: DEMO_IDS.organization },
          },
        } satisfies RequestExamples<z.input<typeof CreateAppBody>>),
        responses: operationResponses(
          jsonResponse("The app was created", schemaRef("CreateAppOutput"), { example: newApp }),
          { 409: withKeyErrors(409, NAME_TAKEN, { appNameTaken: appNameTaken() }) },
          { write: true, jsonBody: "PayloadTooLarge", idempotencyKey: "replays" },
        ),
      },
    },
    "/apps/{app_id}": {
      parameters: appPathParameters(),
      patch: {
        operationId: "updateApp",
        tags: tagged("Apps"),
        summary: "Rename an app",
        description: "The name follows the rules of create and must be free in the app's project.",
        parameters: requestHeaders(),
        requestBody: jsonRequestBody(schemaRef("UpdateApp"), {
          rename: { summary: "A new name", value: { app_name: "renamed-app" } },
        } satisfies RequestExamples<z.input<typeof UpdateAppBody>>),
        responses: operationResponses(
          jsonResponse("The app was renamed", schemaRef("CreateAppOutput"), {
            example: { app_id: DEMO_IDS.app, app_name: "renamed-app" } satisfies CreateAppOutput,
          }),
          { 404: responseRef("AppNotFound"), 409: responseRef("AppNameTaken") },
          { write: true, jsonBody: "PayloadTooLarge" },
        ),
      },
      delete: {
        operationId: "removeApp",
        tags: tagged("Apps"),
        summary: "Delete an app and everything under it",
        description: "Its environments and their history, its variants and their revisions are deleted with it, all at once.",
        parameters: requestHeaders(),
        responses: operationResponses(
          jsonResponse("The app is gone", { type: "null" }, { example: null }),
          { 404: responseRef("AppNotFound") },
          { write: true },
        ),
      },
    },
  },
  inputSchemas: { CreateApp: CreateAppBody, UpdateApp: UpdateAppBody },
  outputSchemas: { CreateAppOutput, AppListItem },
  responses: {
    AppNameTaken: errorResponse(NAME_TAKEN, appNameTaken()),
    AppNotFound: errorResponse("The app does not exist or is not visible to the caller (not told apart)", appNotFound()),
  },
});
