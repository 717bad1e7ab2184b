import * as z from "zod";
import { ApiError } from "./errors";
import { AppParams } from "./fields";
import { REQUEST_ID_HEADER, REQUEST_ID_PATTERN } from "./request-log";

/** Pieces every route's OpenAPI fragment is made of; src/openapi.ts assembles the fragments into the document. */

export const schemaRef = (id: string) => ({ $ref: `#/components/schemas/${id}` });
export const responseRef = (id: string) => ({ $ref: `#/components/responses/${id}` });
export const requestIdParameter = { $ref: "#/components/parameters/RequestId" };
export const arrayOf = (items: object) => ({ type: "array", items });

// Examples use the README's demo values (the local seed of `npm run dev`), so that they work as written there.
export const DEMO_IDS = {
  user: "00000000-0000-7000-8000-000000000001",
  app: "00000000-0000-7000-8000-000000000005",
  organization: "00000000-0000-7000-8000-000000000002",
  workspace: "00000000-0000-7000-8000-000000000003",
  project: "00000000-0000-7000-8000-000000000004",
} as const;

// The params of the demo app's config `main` (its latest revision).
export const DEMO_CONFIG_PARAMS = { model: "gpt-4o-mini", temperature: 0.2, prompt: "You are a helpful assistant." };

// Ids the seed makes anew on each database: examples only.
export const EXAMPLE_IDS = {
  variant: "01a2012d-894c-77b0-ba2e-5b0e6747124c",
  variantRevision: "01a2012d-89b1-72d5-889a-f5c51767a9f4",
  environmentRevision: "01a2012d-8940-7219-9117-b691493353e3",
} as const;

/** Request body examples, checked against the body schema's input type. */
export type RequestExamples<Body> = Record<string, { summary: string; value: Body }>;

const requestIdHeader = {
  description: `The caller's ${REQUEST_ID_HEADER} when it matches the pattern, else one the service made`,
  required: true,
  schema: { type: "string", pattern: REQUEST_ID_PATTERN.source },
};

/** A response's example, or its named examples. */
type Examples = { example?: unknown; examples?: Record<string, { summary: string; value: unknown }> };

export function jsonResponse(description: string, schema: object, examples: Examples = {}, headers: Record<string, object> = {}) {
  return {
    description,
    headers: { [REQUEST_ID_HEADER]: requestIdHeader, ...headers },
    content: { "application/json": { schema, ...examples } },
  };
}

/**
 * Errors of src/http/errors.ts as one response: the detail as the example (several errors, by name: each an
 * example), their headers as required headers.
 */
export function errorResponse(description: string, errors: ApiError | Record<string, ApiError>) {
  const all = errors instanceof ApiError ? [errors] : Object.values(errors);
  const headers = Object.fromEntries(
    all
      .flatMap((error) => Object.entries(error.headers))
      .map(([name, example]) => [name, { required: true, schema: { type: "string" }, example }]),
  );
  const examples: Examples =
    errors instanceof ApiError
      ? { example: { detail: errors.detail } }
      : {
          examples: Object.fromEntries(
            Object.entries(errors).map(([name, error]) => [
              name,
              { summary: String(error.detail), value: { detail: error.detail } },
            ]),
          ),
        };
  return jsonResponse(description, schemaRef("Error"), examples, headers);
}

export const jsonRequestBody = (schema: object, examples: RequestExamples<unknown>) => ({
  required: true,
  content: { "application/json": { schema, examples } },
});

/**
 * The path or query parameters of a zod object schema a route validates with, as clients send them
 * (z.toJSONSchema), each with its example.
 */
export function parametersOf<Schema extends z.ZodObject>(
  where: "path" | "query",
  schema: Schema,
  examples: Required<z.input<Schema>>,
) {
  const { properties = {}, required = [] } = z.toJSONSchema(schema, { io: "input" });
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: where,
    required: where === "path" || required.includes(name),
    ...(typeof property === "object" && property.description !== undefined && { description: property.description }),
    schema: property,
    example: examples[name as keyof typeof examples],
  }));
}

/** The path parameters of every route under /apps/{app_id}. */
export const appPathParameters = () => parametersOf("path", AppParams, { app_id: DEMO_IDS.app });

/**
 * An operation's responses: its 200 and own errors, beside those every route with a key answers (401, 422 for
 * bad input, 429, 500, 503); a `write` also answers a viewer 403, and a `jsonBody` (src/http/validation.ts's
 * guard) 413, as the response of that id, and 415.
 */
export function operationResponses(
  ok: object,
  errors: Record<number, object> = {},
  { write = false, jsonBody }: { write?: boolean; jsonBody?: "PayloadTooLarge" | "ConfigPayloadTooLarge" } = {},
) {
  return {
    200: ok,
    401: responseRef("Unauthorized"),
    ...(write && { 403: responseRef("Forbidden") }),
    ...(jsonBody && { 413: responseRef(jsonBody), 415: responseRef("UnsupportedMediaType") }),
    422: responseRef("ValidationFailed"),
    429: responseRef("TooManyRequests"),
    500: responseRef("InternalServerError"),
    503: responseRef("ServiceUnavailable"),
    ...errors,
  };
}
