import * as z from "zod";
import { appsOpenApi } from "./apps/apps.openapi";
import { environmentsOpenApi } from "./environments/environments.openapi";
import {
  ErrorBody,
  forbidden,
  payloadTooLarge,
  tooManyRequests,
  unauthorized,
  unsupportedMediaType,
  ValidationErrorBody,
  ValidationIssue,
} from "./http/errors";
import { errorResponse, jsonResponse, schemaRef } from "./http/openapi-parts";
import { REQUEST_ID_HEADER, REQUEST_ID_PATTERN } from "./http/request-log";
import { MAX_BODY_BYTES } from "./http/validation";

/** The schemas by id, with `$ref`s into the document's components and no per-schema `$schema`/`$id`. */
function componentSchemas(schemas: Record<string, z.ZodType>, io: "input" | "output") {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(schemas)) registry.add(schema, { id });
  const converted = z.toJSONSchema(registry, { io, uri: (id) => `#/components/schemas/${id}` }).schemas;
  return Object.fromEntries(Object.entries(converted).map(([id, { $schema, $id, ...schema }]) => [id, schema]));
}

/**
 * The OpenAPI 3.1 document of the service, assembled from each resource's fragment (`*.openapi.ts` beside its
 * routes). Bodies and path parameters are the zod schemas the routes validate with and answer in, converted by
 * zod itself (requests as clients send them, responses as the service answers).
 */
export function openApiDocument(basePath: string) {
  const resources = [appsOpenApi(), environmentsOpenApi()];
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
      ...Object.assign({}, ...resources.map((resource) => resource.paths)),
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
        ...componentSchemas(Object.assign({}, ...resources.map((resource) => resource.inputSchemas)), "input"),
        ...componentSchemas(
          {
            ...Object.assign({}, ...resources.map((resource) => resource.outputSchemas)),
            Error: ErrorBody,
            ValidationError: ValidationErrorBody,
            ValidationIssue,
          },
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
        ...Object.assign({}, ...resources.map((resource) => resource.responses)),
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
