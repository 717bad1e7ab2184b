import type { ApiError } from "./errors";
import { REQUEST_ID_HEADER, REQUEST_ID_PATTERN } from "./request-log";

/** Pieces every route's OpenAPI fragment is made of; src/openapi.ts assembles the fragments into the document. */

export const schemaRef = (id: string) => ({ $ref: `#/components/schemas/${id}` });
export const responseRef = (id: string) => ({ $ref: `#/components/responses/${id}` });
export const requestIdParameter = { $ref: "#/components/parameters/RequestId" };

// Examples use the README's demo values (the local seed of `npm run dev`), so that they work as written there.
export const DEMO_IDS = {
  app: "00000000-0000-7000-8000-000000000005",
  organization: "00000000-0000-7000-8000-000000000002",
  workspace: "00000000-0000-7000-8000-000000000003",
  project: "00000000-0000-7000-8000-000000000004",
} as const;

const requestIdHeader = {
  description: `The caller's ${REQUEST_ID_HEADER} when it matches the pattern, else one the service made`,
  required: true,
  schema: { type: "string", pattern: REQUEST_ID_PATTERN.source },
};

export function jsonResponse(description: string, schema: object, example?: unknown, headers: Record<string, object> = {}) {
  return {
    description,
    headers: { [REQUEST_ID_HEADER]: requestIdHeader, ...headers },
    content: { "application/json": { schema, example } },
  };
}

/** An error of src/http/errors.ts as a response: its detail as the example, its headers as required headers. */
export const errorResponse = (description: string, error: ApiError) =>
  jsonResponse(
    description,
    schemaRef("Error"),
    { detail: error.detail },
    Object.fromEntries(
      Object.entries(error.headers).map(([name, example]) => [name, { required: true, schema: { type: "string" }, example }]),
    ),
  );
