import * as z from "zod";
import { appsOpenApi } from "./apps/apps.openapi";
import { configsOpenApi } from "./configs/configs.openapi";
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
import { variantsOpenApi } from "./variants/variants.openapi";

type Fragment = ReturnType<typeof appsOpenApi | typeof environmentsOpenApi | typeof variantsOpenApi | typeof configsOpenApi>;

/** One part of every fragment, merged; a name two fragments both define is a mistake, not an override. */
function merge(fragments: Fragment[], part: "paths" | "inputSchemas" | "outputSchemas" | "responses") {
  const merged: Record<string, unknown> = {};
  for (const fragment of fragments) {
    for (const [name, value] of Object.entries(fragment[part])) {
      if (name in merged) throw new Error(`OpenAPI: ${part} ${name} is defined twice`);
      merged[name] = value;
    }
  }
  return merged;
}

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
  const resources: Fragment[] = [appsOpenApi(), environmentsOpenApi(), variantsOpenApi(), configsOpenApi()];
  return {
    openapi: "3.1.0",
    info: {
      title: "App Management Service",
      version: "0.1.0",
      description:
        "Apps (create, list, rename, delete), their environments and deployment history, their variants and " +
        "variant revisions, and the config registry (add, commit, fetch, fork). Reads need any role in the app's " +
        "organization, writes owner, admin or editor; what the caller cannot see is not found. Every response is " +
        `JSON and carries ${REQUEST_ID_HEADER}. Without a key, unknown paths answer 404 ` +
        "(components/responses/NotFound) and a known path with another method 405 " +
        "(components/responses/MethodNotAllowed), with an Allow header. Every route also answers with a trailing slash.",
    },
    servers: [{ url: basePath || "/", description: "Relative to where this document is served" }],
    security: [{ ApiKey: [] }],
    paths: {
      ...merge(resources, "paths"),
      "/health": {
        get: {
          operationId: "health",
          summary: "Liveness, without a key",
          security: [],
          responses: {
            200: jsonResponse(
              "The service is up",
              { type: "object", properties: { status: { const: "ok" } }, required: ["status"] },
              { example: { status: "ok" } },
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
        ...componentSchemas(merge(resources, "inputSchemas") as Record<string, z.ZodType>, "input"),
        ...componentSchemas(
          {
            ...(merge(resources, "outputSchemas") as Record<string, z.ZodType>),
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
          "A write by a viewer; on create, also a target project, workspace or organization that does not exist or is not visible",
          forbidden(),
        ),
        ...merge(resources, "responses"),
        PayloadTooLarge: errorResponse(`Request body over ${MAX_BODY_BYTES} bytes`, payloadTooLarge(MAX_BODY_BYTES)),
        UnsupportedMediaType: errorResponse(
          "Request body not application/json (+json types and a charset are fine)",
          unsupportedMediaType(),
        ),
        ValidationFailed: jsonResponse(
          "Body fields, path or query parameters, or an empty or malformed JSON body; `loc` names the faulty input",
          schemaRef("ValidationError"),
          {
            example: {
              detail: [{ loc: ["body", "app_name"], msg: "Field required", type: "missing" }],
            } satisfies ValidationErrorBody,
          },
        ),
        TooManyRequests: errorResponse(
          "The key spent its request budget, or the client address its budget of failed authentications",
          tooManyRequests(),
        ),
        InternalServerError: jsonResponse("Anything unexpected; the error is logged, never told", schemaRef("Error"), {
          example: { detail: "Internal Server Error" },
        }),
        ServiceUnavailable: jsonResponse(
          "The database failed in a way its operator calls transient (a read is retried once first); try again later",
          schemaRef("Error"),
          { example: { detail: "Service temporarily unavailable" } },
          { "Retry-After": { required: true, description: "Seconds to wait", schema: { type: "string" }, example: "1" } },
        ),
        NotFound: jsonResponse("No route has this path", schemaRef("Error"), { example: { detail: "Not Found" } }),
        MethodNotAllowed: jsonResponse(
          "The path exists, with other methods",
          schemaRef("Error"),
          { example: { detail: "Method Not Allowed" } },
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
