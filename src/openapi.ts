import * as z from "zod";
import {
  CreateAppBody,
  CreateAppOutput,
  EnvironmentRevisions,
  EnvironmentRevisionsParams,
  RevisionEntry,
} from "./apps/apps.schemas";
import {
  type ApiError,
  appEnvironmentNotFound,
  appNameTaken,
  ErrorBody,
  forbidden,
  payloadTooLarge,
  tooManyRequests,
  unauthorized,
  unsupportedMediaType,
  ValidationErrorBody,
  ValidationIssue,
} from "./http/errors";
import { REQUEST_ID_HEADER, REQUEST_ID_PATTERN } from "./http/request-log";
import { MAX_BODY_BYTES } from "./http/validation";

type IdRegistry = z.core.$ZodRegistry<{ id: string }>;

/** The registry's schemas by id, with `$ref`s into the document's components and no per-schema `$schema`/`$id`. */
function componentSchemas(registry: IdRegistry, io: "input" | "output") {
  const { schemas } = z.toJSONSchema(registry, { io, uri: (id) => `#/components/schemas/${id}` });
  return Object.fromEntries(Object.entries(schemas).map(([id, { $schema, $id, ...schema }]) => [id, schema]));
}

const schemaRef = (id: string) => ({ $ref: `#/components/schemas/${id}` });
const responseRef = (id: string) => ({ $ref: `#/components/responses/${id}` });

// Examples use the README's demo values (the local seed of `npm run dev`), so that they work as written there.
const DEMO_APP_ID = "00000000-0000-7000-8000-000000000005";
const DEMO_ORGANIZATION_ID = "00000000-0000-7000-8000-000000000002";

const demoRecord = {
  name: "development",
  app_id: DEMO_APP_ID,
  project_id: "00000000-0000-7000-8000-000000000004",
  deployed_app_variant_id: "01a2012d-894c-77b0-ba2e-5b0e6747124c",
  deployed_variant_name: "main",
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
  organization_id: DEMO_ORGANIZATION_ID,
  workspace_id: "00000000-0000-7000-8000-000000000003",
} satisfies EnvironmentRevisions;

const requestIdHeader = {
  description: `The caller's ${REQUEST_ID_HEADER} when it matches the pattern, else one the service made`,
  required: true,
  schema: { type: "string", pattern: REQUEST_ID_PATTERN.source },
};

function jsonResponse(description: string, schema: object, example?: unknown, headers: Record<string, object> = {}) {
  return {
    description,
    headers: { [REQUEST_ID_HEADER]: requestIdHeader, ...headers },
    content: { "application/json": { schema, example } },
  };
}

/** An error of src/http/errors.ts as a response: its detail as the example, its headers as required headers. */
const errorResponse = (description: string, error: ApiError) =>
  jsonResponse(
    description,
    schemaRef("Error"),
    { detail: error.detail },
    Object.fromEntries(
      Object.entries(error.headers).map(([name, example]) => [name, { required: true, schema: { type: "string" }, example }]),
    ),
  );

/**
 * The OpenAPI 3.1 document of the service. Bodies and path parameters are the zod schemas the routes validate
 * with and answer in, converted by zod itself (requests as clients send them, responses as the service answers).
 */
export function openApiDocument(basePath: string) {
  const pathParameters = z.toJSONSchema(EnvironmentRevisionsParams, { io: "input" }).properties ?? {};
  const pathParameterExamples = { app_id: DEMO_APP_ID, environment_name: "development" } satisfies z.input<
    typeof EnvironmentRevisionsParams
  >;

  return {
    openapi: "3.1.0",
    info: {
      title: "App Management Service",
      version: "0.1.0",
      description:
        "Create apps and read the deployment history of their environments. Every response is JSON and carries " +
        `${REQUEST_ID_HEADER}. Without a key, unknown paths answer 404 (components/responses/NotFound) and a known ` +
        "path with another method 405 (components/responses/MethodNotAllowed), with an Allow header. Both routes " +
        "also answer with a trailing slash.",
    },
    servers: [{ url: basePath || "/", description: "Relative to where this document is served" }],
    security: [{ ApiKey: [] }],
    paths: {
      "/apps": {
        post: {
          operationId: "createApp",
          summary: "Create an app",
          description:
            "Creates the app, with the environments development, staging and production, in `project_id` if given, " +
            "else the default project of `workspace_id`, else that of `organization_id`, else the key's project. " +
            "Answers 200, not 201: existing clients expect 200.",
          parameters: [{ $ref: "#/components/parameters/RequestId" }],
          requestBody: {
            required: true,
            content: {
              "application/json": {
                schema: schemaRef("CreateApp"),
                examples: {
                  inKeyProject: { summary: "In the key's project", value: { app_name: "my-app" } },
                  inOrganization: {
                    summary: "In an organization's default project",
                    value: { app_name: "other-app", organization_id: DEMO_ORGANIZATION_ID },
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
      "/apps/{app_id}/revisions/{environment_name}": {
        parameters: Object.entries(pathParameters).map(([name, schema]) => ({
          name,
          in: "path",
          required: true,
          schema,
          example: pathParameterExamples[name as keyof typeof pathParameterExamples],
        })),
        get: {
          operationId: "listAppEnvironmentRevisions",
          summary: "Read an environment's deployment record and its revisions",
          description: "`revisions` lists every revision oldest first. HEAD is answered like GET, without a body.",
          parameters: [{ $ref: "#/components/parameters/RequestId" }],
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
      "/health": {
        get: {
          operationId: "health",
          summary: "Liveness, without a key",
          security: [],
          responses: {
            200: jsonResponse(
              "The service is up",
              { type: "object", properties: { status: { const: "ok" } }, required: ["status"] },
              { status: "ok" },
            ),
          },
        },
      },
      "/openapi.json": {
        get: {
          operationId: "openApiDocument",
          summary: "This document, without a key",
          security: [],
          responses: { 200: jsonResponse("The OpenAPI 3.1 document", { type: "object" }) },
        },
      },
    },
    components: {
      schemas: {
        ...componentSchemas(z.registry<{ id: string }>().add(CreateAppBody, { id: "CreateApp" }), "input"),
        ...componentSchemas(
          z
            .registry<{ id: string }>()
            .add(CreateAppOutput, { id: "CreateAppOutput" })
            .add(EnvironmentRevisions, { id: "EnvironmentRevisions" })
            .add(RevisionEntry, { id: "RevisionEntry" })
            .add(ErrorBody, { id: "Error" })
            .add(ValidationErrorBody, { id: "ValidationError" })
            .add(ValidationIssue, { id: "ValidationIssue" }),
          "output",
        ),
      },
      parameters: {
        RequestId: {
          name: REQUEST_ID_HEADER,
          in: "header",
          required: false,
          description: "Echoed back and logged; an id that does not match the pattern is replaced by a new one",
          schema: { type: "string", pattern: REQUEST_ID_PATTERN.source },
        },
      },
      responses: {
        Unauthorized: errorResponse(
          "Authorization missing or malformed, or the key unknown, wrong, expired or revoked; checked before anything else",
          unauthorized(),
        ),
        Forbidden: errorResponse(
          "The target project, workspace or organization does not exist, is not visible, or the caller may only view it",
          forbidden(),
        ),
        AppEnvironmentNotFound: errorResponse(
          "The app does not exist, is not visible to the caller, or has no such environment (not told apart)",
          appEnvironmentNotFound(),
        ),
        AppNameTaken: errorResponse("An app of that name already exists in the target project", appNameTaken()),
        PayloadTooLarge: errorResponse(`Request body over ${MAX_BODY_BYTES} bytes`, payloadTooLarge(MAX_BODY_BYTES)),
        UnsupportedMediaType: errorResponse(
          "Request body not application/json (+json types and a charset are fine)",
          unsupportedMediaType(),
        ),
        ValidationFailed: jsonResponse(
          "Body fields, path parameters, or an empty or malformed JSON body; `loc` names the faulty input",
          schemaRef("ValidationError"),
          { detail: [{ loc: ["body", "app_name"], msg: "Field required", type: "missing" }] } satisfies ValidationErrorBody,
        ),
        TooManyRequests: errorResponse(
          "The key spent its request budget, or the client address its budget of failed authentications",
          tooManyRequests(),
        ),
        InternalServerError: jsonResponse("Anything unexpected; the error is logged, never told", schemaRef("Error"), {
          detail: "Internal Server Error",
        }),
        ServiceUnavailable: jsonResponse(
          "The database failed in a way its operator calls transient (a read is retried once first); try again later",
          schemaRef("Error"),
          { detail: "Service temporarily unavailable" },
          { "Retry-After": { required: true, description: "Seconds to wait", schema: { type: "string" }, example: "1" } },
        ),
        NotFound: jsonResponse("No route has this path", schemaRef("Error"), { detail: "Not Found" }),
        MethodNotAllowed: jsonResponse(
          "The path exists, with other methods",
          schemaRef("Error"),
          { detail: "Method Not Allowed" },
          {
            Allow: { required: true, description: "The path's methods", schema: { type: "string" }, example: "POST" },
          },
        ),
      },
      securitySchemes: {
        ApiKey: {
          type: "apiKey",
          in: "header",
          name: "Authorization",
          description:
            "An API key (`<8 letters/digits>.<64 hex digits>`), sent as `ApiKey <key>`, `Bearer <key>` or the bare key.",
        },
      },
    },
  };
}
