import * as z from "zod/mini";
import { environmentProtected } from "./core-errors";
import { BOOKMARK_HEADER } from "./d1-session";
import { ApiError, badIdempotencyKey, CodedConflict, idempotencyKeyInFlight } from "./errors";
import { REPLAYED_HEADER } from "./idempotency";
import { REQUEST_ID_HEADER } from "./request-log";

/** Pieces every route's OpenAPI fragment is made of; src/openapi.ts assembles the fragments into the document. */

export const schemaRef = (id: string) => ({ $ref: `#/components/schemas/${id}` });
export const responseRef = (id: string) => ({ $ref: `#/components/responses/${id}` });
export const headerRef = (
  id:
    | "RequestId"
    | "D1Bookmark"
    | "ETag"
    | "ConfigETag"
    | "ConfigSplit"
    | "IdempotentReplayed"
    | "Age"
    | "CacheStatus"
    | "LiveEverywhereBy",
) => ({
  $ref: `#/components/headers/${id}`,
});

/** Request headers of components/parameters an operation may accept besides X-Request-Id and x-d1-bookmark. */
type OptionalRequestHeader = "IdempotencyKey" | "IfMatch" | "IfNoneMatch" | "TargetingKey" | "ProtectionBypass";

/** An operation's request headers: X-Request-Id and x-d1-bookmark (every route with a key), then `more`. */
export const requestHeaders = (...more: OptionalRequestHeader[]) =>
  ["RequestId", "D1Bookmark", ...more].map((id) => ({ $ref: `#/components/parameters/${id}` }));
export const arrayOf = (items: object) => ({ type: "array", items });

/** The document's tags, in the order Swagger UI shows their groups; every operation has exactly one. */
export const TAGS = [
  {
    name: "Apps",
    description: "Create, list, rename and delete apps; each has the environments development, staging and production.",
  },
  { name: "Environments", description: "What each of an app's environments runs, and its deployment history." },
  { name: "Variants", description: "An app's variants and their revisions: a variant is a config, named `app.<config name>`." },
  { name: "Configs", description: "Add, commit, fetch and fork configs, named by app and config name." },
  { name: "Deployments", description: "Deploy a config or a variant to an environment, or revert to an earlier deployment." },
  { name: "Diffs", description: "What changed between two config revisions or two environment revisions, as a JSON Patch." },
  {
    name: "Protection",
    description: "Protected environments: per project and environment name, changed only through approved change requests.",
  },
  {
    name: "Older SDK",
    description: "The older SDK's calls: read or save a config by name, read what a deployment deployed, list bases.",
  },
  {
    name: "Simple applications",
    description: "Today's SDK's apps (AppManager): create, query, read, rename, archive and unarchive.",
  },
  {
    name: "Application variants",
    description: "Today's SDK's variants: add one (no revision until its first commit), query, read, archive, unarchive.",
  },
  {
    name: "Application revisions",
    description: "Today's SDK: read, commit, list and deploy config revisions, over the legacy API's history.",
  },
  { name: "Workflow revisions", description: "Today's SDK's fallback read of a config revision, in workflow names." },
  {
    name: "Simple environments",
    description: "Today's SDK: the key's project's environments, each with what it runs for every app.",
  },
  {
    name: "Splits",
    description: "An environment serving two revisions by weight, stepped up on a schedule, ended by a signed verdict.",
  },
  {
    name: "Change requests",
    description: "Propose, review and approve a change of an environment; a protected one changes only so.",
  },
  { name: "Keys", description: "The caller's API keys: list, create, delete and check them." },
  { name: "Profile", description: "The caller's own user." },
  { name: "Organizations", description: "Organizations, their workspaces, and invitations to them." },
  { name: "Workspaces", description: "Roles, permissions and members (one set per organization, for all its workspaces)." },
  { name: "Events", description: "An organization's audit log." },
  { name: "Webhooks", description: "Subscribe HTTPS endpoints to events, and follow their deliveries." },
  { name: "Service", description: "Health check and this document; no key needed." },
] as const;

/** An operation's `tags`: its one tag, which TAGS declares. */
export const tagged = (tag: (typeof TAGS)[number]["name"]) => [tag];

// Examples use the README's demo values (the local seed of `npm run dev`), so that they work as written there. Each id
// is a constant of its own, not a property of an object: esbuild keeps an unused example that reads a property (a
// getter might run), so the Worker's bundle would carry every example that names an id.
export const DEMO_USER_ID = "00000000-0000-7000-8000-000000000001";
export const DEMO_APP_ID = "00000000-0000-7000-8000-000000000005";
export const DEMO_ORGANIZATION_ID = "00000000-0000-7000-8000-000000000002";
export const DEMO_WORKSPACE_ID = "00000000-0000-7000-8000-000000000003";
export const DEMO_PROJECT_ID = "00000000-0000-7000-8000-000000000004";

// The params of the demo app's config `main` (its latest revision), and its temperature (a constant, as the ids are).
export const DEMO_TEMPERATURE = 0.2;
export const DEMO_CONFIG_PARAMS = { model: "gpt-4o-mini", temperature: DEMO_TEMPERATURE, prompt: "You are a helpful assistant." };

// Ids the seed makes anew on each database: examples only.
export const EXAMPLE_APP_ID = "01a2012d-9c3e-7f10-8a4b-2d6e8f0a1c3e";
export const EXAMPLE_VARIANT_ID = "01a2012d-894c-77b0-ba2e-5b0e6747124c";
export const EXAMPLE_VARIANT_REVISION_ID = "01a2012d-89b1-72d5-889a-f5c51767a9f4";
export const EXAMPLE_ENVIRONMENT_REVISION_ID = "01a2012d-8940-7219-9117-b691493353e3";
export const EXAMPLE_ENVIRONMENT_ID = "01a2012d-893f-7a41-8c1e-3b5d7f9e2a60";
export const EXAMPLE_PREVIOUS_VARIANT_REVISION_ID = "01a2012d-89b1-72d5-889a-f5c51767a9f3";
export const EXAMPLE_PREVIOUS_ENVIRONMENT_REVISION_ID = "01a2012d-8940-7219-9117-b691493353e2";

/** What the 409 of a protected environment says in the document (with `environmentProtectedExample`). */
export const PROTECTED =
  "The environment is protected (GET /projects/{project_id}/environments/{environment_name}/protection): it changes " +
  "only through an approved change request (POST /change-requests), or with a Protection-Bypass from a role allowed " +
  "it; nothing was written";
export const environmentProtectedExample = () => environmentProtected(EXAMPLE_APP_ID, "production");

/** Request body examples, checked against the body schema's input type. */
export type RequestExamples<Body> = Record<string, { summary: string; value: Body }>;

/** A response's example, or its named examples. */
type Examples = { example?: unknown; examples?: Record<string, { summary: string; value: unknown }> };

/** A response without a body: X-Request-Id, x-d1-bookmark (when the database was reached) and these headers. */
export const bodilessResponse = (description: string, headers: Record<string, object> = {}) => ({
  description,
  headers: { [REQUEST_ID_HEADER]: headerRef("RequestId"), [BOOKMARK_HEADER]: headerRef("D1Bookmark"), ...headers },
});

export const jsonResponse = (
  description: string,
  schema: object,
  examples: Examples = {},
  headers: Record<string, object> = {},
) => ({
  ...bodilessResponse(description, headers),
  content: { "application/json": { schema, ...examples } },
});

/**
 * Errors of src/http/errors.ts as one response: the detail as the example (several errors, by name: each an
 * example), their headers as required headers; the body an Error, or a CodedConflictError where one of them is.
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
              { summary: typeof error.detail === "string" ? error.detail : error.message, value: { detail: error.detail } },
            ]),
          ),
        };
  const coded = all.some((error) => CodedConflict.safeParse(error.detail).success);
  const schema = coded ? { oneOf: [schemaRef("Error"), schemaRef("CodedConflictError")] } : schemaRef("Error");
  return jsonResponse(description, schema, examples, headers);
}

export const jsonRequestBody = (schema: object, examples: RequestExamples<unknown>) => ({
  required: true,
  content: { "application/json": { schema, examples } },
});

/**
 * The path or query parameters of a zod object schema a route validates with, as clients send them
 * (z.toJSONSchema), each with its example (an optional one's in its schema).
 */
export function parametersOf<Schema extends z.ZodMiniObject>(
  where: "path" | "query",
  schema: Schema,
  examples: Required<z.input<Schema>>,
) {
  const { properties = {}, required = [] } = z.toJSONSchema(schema, { io: "input" });
  return Object.entries(properties).map(([name, property]) => {
    const example = examples[name as keyof typeof examples];
    const isRequired = where === "path" || required.includes(name);
    return {
      name,
      in: where,
      required: isRequired,
      ...(typeof property === "object" && property.description !== undefined && { description: property.description }),
      // Swagger UI (/docs) fills an `example` into the parameter's field and sends it: an optional one's sample goes
      // in its schema's `examples`, which it only shows.
      ...(isRequired ? { schema: property, example } : { schema: { ...(property as object), examples: [example] } }),
    };
  });
}

/** The errors an Idempotency-Key adds to a POST, by status (422, a key used for another request, is ValidationFailed). */
export const IDEMPOTENCY_KEY_ERRORS = {
  400: {
    description: "The Idempotency-Key header is not 1 to 255 printable ASCII characters, bare or quoted",
    errors: { badIdempotencyKey: /* @__PURE__ */ badIdempotencyKey() },
  },
  409: {
    description: "A request with this Idempotency-Key is still being answered (by the same server instance): retry once it is",
    errors: { idempotencyKeyInFlight: /* @__PURE__ */ idempotencyKeyInFlight() },
  },
} as const;

/** An operation's own errors at a status where its Idempotency-Key may answer too (400, 409): one response of both. */
export function withKeyErrors(
  status: keyof typeof IDEMPOTENCY_KEY_ERRORS,
  description: string,
  errors: Record<string, ApiError>,
) {
  const key = IDEMPOTENCY_KEY_ERRORS[status];
  return errorResponse(`${description}. Or: ${key.description}`, { ...errors, ...key.errors });
}

/**
 * A 409 of coded refusals (`{"detail": {"code", "message", …}}`, src/http/errors.ts's CodedConflict), one example each,
 * beside that of an Idempotency-Key still being answered (`keyed`: the operation takes one).
 */
export function codedConflictResponse(description: string, errors: Record<string, ApiError>, { keyed = true } = {}) {
  const all = keyed ? { ...errors, ...IDEMPOTENCY_KEY_ERRORS[409].errors } : errors;
  return jsonResponse(
    keyed ? `${description}. Or: ${IDEMPOTENCY_KEY_ERRORS[409].description}` : description,
    keyed ? { oneOf: [schemaRef("CodedConflictError"), schemaRef("Error")] } : schemaRef("CodedConflictError"),
    {
      examples: Object.fromEntries(
        Object.entries(all).map(([name, error]) => [name, { summary: error.message, value: { detail: error.detail } }]),
      ),
    },
  );
}

const KEY_ERROR_RESPONSES = {
  400: /* @__PURE__ */ responseRef("BadIdempotencyKey"),
  409: /* @__PURE__ */ responseRef("IdempotencyKeyInFlight"),
};

/**
 * An operation's responses: its 200 and own errors, beside those every route with a key answers (401, 422 for
 * bad input, 429, 500, 503); a `write` also answers a viewer 403, and a `jsonBody` (src/http/validation.ts's
 * guard) 413, as the response of that id, and 415. An `idempotencyKey` (every POST) adds 400 and 409 where the
 * operation has none of its own (else it gives them `withKeyErrors`); one that "replays" marks a replayed 200.
 */
export function operationResponses(
  ok: ReturnType<typeof jsonResponse>,
  errors: Record<number, object> = {},
  {
    write = false,
    jsonBody,
    idempotencyKey,
  }: {
    write?: boolean;
    jsonBody?: "PayloadTooLarge" | "ConfigPayloadTooLarge";
    idempotencyKey?: "replays" | "validates";
  } = {},
) {
  const replays = idempotencyKey === "replays" && { [REPLAYED_HEADER]: headerRef("IdempotentReplayed") };
  return {
    200: { ...ok, headers: { ...ok.headers, ...replays } },
    ...(idempotencyKey && KEY_ERROR_RESPONSES),
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
