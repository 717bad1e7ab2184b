import * as z from "zod/mini";
import { environmentMovedOn } from "./http/core-errors";
import { BOOKMARK_HEADER } from "./http/d1-session";
import { type Documentation, SCHEMA_NAMES } from "./http/documentation";
import { LIVE_EVERYWHERE_BY } from "./http/edge-cache";
import {
  forbidden,
  idempotencyKeyReused,
  payloadTooLarge,
  tooManyRequests,
  unauthorized,
  unsupportedMediaType,
  type ValidationErrorBody,
} from "./http/errors";
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_PATTERN, REPLAYED_HEADER } from "./http/idempotency";
import {
  bodilessResponse,
  EXAMPLE_ENVIRONMENT_ID,
  errorResponse,
  headerRef,
  IDEMPOTENCY_KEY_ERRORS,
  jsonRequestBody,
  jsonResponse,
  operationResponses,
  parametersOf,
  requestHeaders,
  schemaRef,
  TAGS,
  tagged,
} from "./http/openapi-parts";
import { PROTECTION_BYPASS_HEADER, PROTECTION_BYPASS_PATTERN } from "./http/protection-bypass";
import { REQUEST_ID_HEADER, REQUEST_ID_PATTERN } from "./http/request-log";
import type { Ok, Route, RouteDeclaration, SharedResponses } from "./http/route";
import { CONFIG_SPLIT_HEADER, TARGETING_KEY_HEADER } from "./http/targeting-key";
import { MAX_BODY_BYTES, MAX_CONFIG_BODY_BYTES } from "./http/validation";
import { ROUTES, SHARED_RESPONSES } from "./routes";
import { webhookPayloadsOpenApi } from "./webhooks/webhooks.routes";

/** Named parts of several sources, merged; a name two of them both define is a mistake, not an override. */
function merge(parts: Record<string, unknown>[], what: string) {
  const merged: Record<string, unknown> = {};
  for (const part of parts) {
    for (const [name, value] of Object.entries(part)) {
      if (name in merged && merged[name] !== value) throw new Error(`OpenAPI: ${what} ${name} is defined twice`);
      merged[name] = value;
    }
  }
  return merged;
}

/** A declaration's documentation text, which only declarations loaded with DOCUMENTATION set have. */
function textOf<Text>(text: Documentation<Text>): Text {
  if (text === false || text === undefined) {
    throw new Error("OpenAPI: the route declarations were loaded without globalThis.DOCUMENTATION set");
  }
  return text;
}

const PAYLOAD_TOO_LARGE = { [MAX_BODY_BYTES]: "PayloadTooLarge", [MAX_CONFIG_BODY_BYTES]: "ConfigPayloadTooLarge" } as const;

/** The JSON Schema of each answer, by its zod schema: see answerSchemas. */
type AnswerSchemas = Map<z.ZodMiniType, object>;

/** A route's 200: its answer's schema as the document shows it, with the description, example(s) and headers. */
function okResponse(declaration: RouteDeclaration, answers: AnswerSchemas) {
  const { description, headers, documentedAs, schema, ...examples } = textOf(declaration.doc).ok as Ok<z.ZodMiniType>;
  const shown = documentedAs ?? answers.get(schema);
  if (!shown) throw new Error(`OpenAPI: ${declaration.method} ${declaration.path} declares no answer schema`);
  return jsonResponse(description, shown, examples, headers);
}

/** The OpenAPI operation of a declared route: its text, and what its key, body, headers and validators add. */
function operationOf(declaration: RouteDeclaration, answers: AnswerSchemas) {
  const { auth, query, body, idempotencyKey, ifMatch, protectionBypass, write, cached, targeted } = declaration;
  const doc = textOf(declaration.doc);
  const answer = okResponse(declaration, answers);
  // The edge's receipt on a cached read, and on a write when what it changed is live everywhere (docs/EDGE-DELIVERY.md).
  const receipt = cached
    ? { Age: headerRef("Age"), "Cache-Status": headerRef("CacheStatus") }
    : write && { [LIVE_EVERYWHERE_BY]: headerRef("LiveEverywhereBy") };
  // A cached read answers an ETag, a config read's naming its body, and 304 to If-None-Match with it (§2 there).
  const etag = cached && { ETag: (answer.headers as Record<string, object>).ETag ?? headerRef("ConfigETag") };
  const split = targeted && { [CONFIG_SPLIT_HEADER]: headerRef("ConfigSplit") };
  const ok = { ...answer, headers: { ...answer.headers, ...etag, ...split, ...receipt } };
  const errors = { ...(etag && { 304: bodilessResponse("If-None-Match names its ETag: no body", etag) }), ...doc.errors };
  if (auth === "none") {
    return {
      operationId: doc.operationId,
      tags: tagged(doc.tag),
      summary: doc.summary,
      description: doc.description,
      security: [],
      responses: { 200: ok },
    };
  }
  const headers = [
    ...(idempotencyKey ? (["IdempotencyKey"] as const) : []),
    ...(ifMatch ? (["IfMatch"] as const) : []),
    ...(cached ? (["IfNoneMatch"] as const) : []),
    ...(targeted ? (["TargetingKey"] as const) : []),
    ...(protectionBypass ? (["ProtectionBypass"] as const) : []),
  ];
  return {
    operationId: doc.operationId,
    tags: tagged(doc.tag),
    summary: doc.summary,
    description: doc.description,
    ...(auth === "optional" && { security: [{}, { ApiKey: [] }] }),
    parameters: [...requestHeaders(...headers), ...(query ? parametersOf("query", query.schema, textOf(query.examples)) : [])],
    ...(body && { requestBody: jsonRequestBody(textOf(body.documentedAs ?? schemaRef(body.id)), textOf(body.examples)) }),
    responses: operationResponses(ok, errors as Record<number, object>, {
      write,
      jsonBody: body && PAYLOAD_TOO_LARGE[body.maxBytes ?? MAX_BODY_BYTES],
      idempotencyKey,
    }),
  };
}

/** The document's paths: each declared route's operation under its path, in the order declared. */
function pathsOf(routes: readonly Route[], answers: AnswerSchemas) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const { declaration } of routes) {
    paths[declaration.path] ??= {};
    const item = paths[declaration.path];
    if (declaration.method in item) throw new Error(`OpenAPI: ${declaration.method} ${declaration.path} is declared twice`);
    // Path parameters are the path's, shared by its operations: each declares them, with the same examples.
    const { params } = declaration;
    if (params) {
      const parameters = parametersOf("path", params.schema, textOf(params.examples));
      if (item.parameters && JSON.stringify(item.parameters) !== JSON.stringify(parameters)) {
        throw new Error(`OpenAPI: the operations of ${declaration.path} declare its path parameters differently`);
      }
      item.parameters = parameters;
    }
    item[declaration.method] = operationOf(declaration, answers);
  }
  return paths;
}

/** The schemas by id, with `$ref`s into the document's components and no per-schema `$schema`/`$id`. */
function componentSchemas(schemas: Record<string, z.ZodMiniType>, io: "input" | "output") {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(schemas)) registry.add(schema, { id });
  const converted = z.toJSONSchema(registry, { io, uri: (id) => `#/components/schemas/${id}` }).schemas;
  return Object.fromEntries(Object.entries(converted).map(([id, { $schema, $id, ...schema }]) => [id, schema]));
}

/**
 * The response schemas (output), converted together: each named one (SCHEMA_NAMES) as a component, and each route's
 * answer, found by walking the declarations, as the document shows it: a named one by reference, any other whole
 * (referring to the named ones it contains).
 */
function responseSchemas(routes: readonly Route[]) {
  const names = [...SCHEMA_NAMES.values()];
  const twice = names.find((name, index) => names.indexOf(name) !== index);
  if (twice) throw new Error(`OpenAPI: two response schemas are named ${twice}`);
  const unnamed = new Map<z.ZodMiniType, string>();
  for (const { declaration } of routes) {
    const { schema } = textOf(declaration.doc).ok;
    if (schema && !SCHEMA_NAMES.has(schema) && !unnamed.has(schema)) unnamed.set(schema, `answer ${unnamed.size}`);
  }
  const converted = componentSchemas(
    Object.fromEntries([...SCHEMA_NAMES, ...unnamed].map(([schema, name]) => [name, schema])),
    "output",
  );
  const answers: AnswerSchemas = new Map([
    ...[...SCHEMA_NAMES].map(([schema, name]): [z.ZodMiniType, object] => [schema, schemaRef(name)]),
    ...[...unnamed].map(([schema, id]): [z.ZodMiniType, object] => [schema, converted[id]]),
  ]);
  const named = Object.fromEntries(names.map((name) => [name, converted[name]]));
  return { named, answers };
}

/**
 * The OpenAPI 3.1 document of the service: an operation for each declared route (src/routes.ts), with the components
 * its resources name. Bodies and parameters are the zod schemas the routes validate with and answer in, converted by
 * zod itself (requests as clients send them, responses as the service answers).
 */
export function openApiDocument(
  basePath: string,
  routes: readonly Route[] = ROUTES,
  sharedResponses: SharedResponses[] = SHARED_RESPONSES.map((of) => of()),
) {
  const responses = responseSchemas(routes);
  const inputSchemas = Object.fromEntries(
    routes.flatMap(({ declaration: { body } }) => (body ? [[body.id, body.component ?? body.schema] as const] : [])),
  );
  return {
    openapi: "3.1.0",
    info: {
      title: "App Management Service",
      version: "0.1.0",
      description:
        "Apps (create, list, rename, delete), their environments and deployment history, their variants and " +
        "variant revisions, the config registry (add, commit, fetch, fork), deployments and reverts; and the calls of " +
        "the platform's older SDK (GET and POST /configs, GET /configs/deployment/{id}, GET /bases, POST " +
        "/variants/from-base, PUT /variants/{id}/parameters, DELETE /variants/{id}). Reads need any " +
        "role in the app's organization, writes owner, workspace_admin or editor (deploys and reverts also " +
        "deployment_manager); a read-only key reads only; what the caller cannot see is not found. " +
        "Accounts, as the platform's client calls them: the caller's API keys and profile (/keys, /profile), " +
        "organizations, their workspaces and invitations (/organizations), roles, permissions and members " +
        "(/workspaces); each operation says which role it needs. Members and roles are per organization, one set for " +
        "all its workspaces. API keys and invitation tokens are shown once, when made: only their hashes are kept. The " +
        "invitation's token is mailed to the invitee where mail is set up; elsewhere an inviter passes it on. Accepting a " +
        "mailed invitation needs no key for an email that has no user yet (an empty Authorization header counts as " +
        "none), and the invitee's own key otherwise. GET /health and " +
        "GET /openapi.json need no key. " +
        `Every response but a 304 is JSON; each carries ${REQUEST_ID_HEADER}, and ${BOOKMARK_HEADER} once the ` +
        `database was reached. Every POST but those of accounts, and PUT /variants/{id}/parameters, takes an ${IDEMPOTENCY_KEY_HEADER}. Without a key, unknown paths answer 404 ` +
        "(components/responses/NotFound) and a known path with another method 405 " +
        "(components/responses/MethodNotAllowed), with an Allow header. Every route also answers with a trailing slash.",
    },
    servers: [{ url: basePath || "/", description: "Relative to where this document is served" }],
    security: [{ ApiKey: [] }],
    tags: TAGS,
    paths: {
      ...pathsOf(routes, responses.answers),
    },
    webhooks: webhookPayloadsOpenApi(),
    components: {
      schemas: {
        ...componentSchemas(inputSchemas, "input"),
        ...responses.named,
      },
      // An optional parameter's sample is in its schema's `examples`: Swagger UI (/docs) would fill an `example` into
      // the field and send it with every try.
      parameters: {
        RequestId: {
          name: REQUEST_ID_HEADER,
          in: "header",
          required: false,
          description: "Echoed back and logged; an id that does not match the pattern is replaced by a new one",
          schema: { type: "string", pattern: REQUEST_ID_PATTERN.source },
        },
        D1Bookmark: {
          name: BOOKMARK_HEADER,
          in: "header",
          required: false,
          description: `The ${BOOKMARK_HEADER} of an earlier answer, sent back whole: this request reads at least what that one wrote, whichever database replica answers it. It holds one entry per database (\`<database>:<bookmark>\`, comma-separated); an entry not in that format, or naming no database of the service, is dropped; a bare bookmark (the format of before) counts as the first database's.`,
          schema: { type: "string" },
        },
        IdempotencyKey: {
          name: IDEMPOTENCY_KEY_HEADER,
          in: "header",
          required: false,
          description:
            "Makes a POST (or PUT) safe to retry (IETF httpapi draft): 1 to 255 printable ASCII characters, not blank, bare or as a " +
            "quoted string, kept 24 hours per API key. A retry with the same method, path and body replays the first 200 " +
            `(with ${REPLAYED_HEADER}) and writes nothing; the same key on another request is a 422, and a retry while ` +
            "the first is still being answered a 409. A failed request is not kept: its retry runs again. " +
            "configs/fetch checks the key but has nothing to replay.",
          schema: { type: "string", pattern: IDEMPOTENCY_KEY_PATTERN.source, examples: ["deploy-staging-2026-11-22"] },
        },
        IfMatch: {
          name: "If-Match",
          in: "header",
          required: false,
          description:
            "The ETag of GET /apps/{app_id}/revisions/{environment_name} for the environment written to (or a deploy's " +
            "answer), or `*` (any state): the deployment is written only if the environment is still in that state, else 412.",
          schema: { type: "string", examples: [`"${EXAMPLE_ENVIRONMENT_ID}.2"`] },
        },
        ProtectionBypass: {
          name: PROTECTION_BYPASS_HEADER,
          in: "header",
          required: false,
          description:
            "An emergency bypass of a protected environment's 409, with its reason: 1 to 500 printable characters of " +
            "UTF-8 text (bytes that are not UTF-8, and U+FFFD, are refused), else 422. From a role the environment's " +
            "protection settings let bypass it, the write goes on and the audit log records the bypass with the reason " +
            "(its event in the same write); from another role, 403. Ignored where the environment is not protected.",
          schema: { type: "string", pattern: PROTECTION_BYPASS_PATTERN.source, examples: ["Hotfix for incident 4711"] },
        },
        TargetingKey: {
          name: TARGETING_KEY_HEADER,
          in: "header",
          required: false,
          description:
            "The key a running split's arm is chosen by (OpenFeature's targeting key: a user's or a session's id): the " +
            "candidate when MurmurHash3 (32-bit, x86) of `<salt>:<key>` modulo 10000 is below the split's weight, else the " +
            "base; the same key, the same arm while the weight does not fall below its bucket. Without it, the base. 1 " +
            "to 256 characters, none a control character, else 422. Ignored where no split runs (docs/SPLITS.md §2).",
          schema: { type: "string", minLength: 1, maxLength: 256, examples: ["user-42"] },
        },
        IfNoneMatch: {
          name: "If-None-Match",
          in: "header",
          required: false,
          description:
            "The ETag of this read's answer, as last read: a 304 without a body while the answer is unchanged (a POST " +
            "that reads a config too: it is a read)",
          schema: { type: "string", examples: [`"${EXAMPLE_ENVIRONMENT_ID}.2"`] },
        },
      },
      headers: {
        RequestId: {
          description: `The caller's ${REQUEST_ID_HEADER} when it matches the pattern, else one the service made`,
          required: true,
          schema: { type: "string", pattern: REQUEST_ID_PATTERN.source },
        },
        D1Bookmark: {
          description: `Bookmarks of the databases' states, on answers that reached a database: one entry per database (\`<database>:<bookmark>\`, comma-separated): those this request reached, and, unchanged, the ones it was sent for the others. Send it back whole as ${BOOKMARK_HEADER} to read your own writes`,
          required: false,
          schema: { type: "string" },
        },
        ETag: {
          description:
            'The environment record\'s state (`"<environment id>.<revision>"`, and the split running there, if any; ' +
            "opaque to clients): it changes exactly when the record does, and with each start, change, step and end of " +
            "a split. Send it as If-Match (deploy, revert, a split's writes, a change request) or If-None-Match (the " +
            "record).",
          required: true,
          schema: { type: "string" },
          example: `"${EXAMPLE_ENVIRONMENT_ID}.2"`,
        },
        ConfigETag: {
          description:
            "What the body is (the SHA-256 of its bytes; opaque to clients): the same answer always has the same ETag, " +
            "so a split's two arms have two, and one arm keeps its own while the split's weight changes. Send it as " +
            "If-None-Match: a 304 while the answer is unchanged.",
          required: true,
          schema: { type: "string" },
          example: '"8c6f0c4ea9c4f5a1f8e2b0b5a0d8c0e1d6b1a6f2a3c9f0e4b7d2c5a8e1f4b7c0"',
        },
        ConfigSplit: {
          description:
            "On a read of an environment a split runs in: the arm served, the key's bucket (with a Targeting-Key), the " +
            "split's weight in basis points, and why: by the key's bucket, or the base as no key came (the examples show both)",
          required: false,
          schema: {
            type: "string",
            pattern: "^(base|candidate)(; bucket=[0-9]+)?; weight=[0-9]+; reason=(split|no_key)$",
            examples: ["candidate; bucket=918; weight=1000; reason=split", "base; weight=1000; reason=no_key"],
          },
        },
        Age: {
          description:
            "Whole seconds since the service's database confirmed this answer (RFC 9111 §5.1): 0 on a miss, never above " +
            "the service's freshness bound (5 s unless its operator sets another), or the bound and its stale-if-error " +
            "allowance together when served stale",
          required: true,
          schema: { type: "string", pattern: "^[0-9]+$" },
        },
        CacheStatus: {
          description:
            "How this answer was served (RFC 9211), e.g. `app-management; hit; ttl=3`, `app-management; fwd=miss; stored`, " +
            "`app-management; fwd=request` (asked fresh), `app-management; fwd=stale; detail=shard-unavailable`, " +
            "`app-management; fwd=bypass` (the cache off, or the answer too large)",
          required: true,
          schema: { type: "string" },
        },
        LiveEverywhereBy: {
          description:
            "On a write that changed something: the instant (RFC 3339, milliseconds) after which no location serves what " +
            "was there before: its commit, plus the freshness bound and the stale-if-error allowance",
          required: false,
          schema: { type: "string", format: "date-time" },
        },
        IdempotentReplayed: {
          description: `This answer replays that of the first request with this ${IDEMPOTENCY_KEY_HEADER}; nothing was written`,
          required: false,
          schema: { const: "true" },
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
        ...merge(sharedResponses, "response"),
        BadIdempotencyKey: errorResponse(IDEMPOTENCY_KEY_ERRORS[400].description, IDEMPOTENCY_KEY_ERRORS[400].errors),
        IdempotencyKeyInFlight: errorResponse(IDEMPOTENCY_KEY_ERRORS[409].description, IDEMPOTENCY_KEY_ERRORS[409].errors),
        EnvironmentMovedOn: errorResponse(
          "If-Match no longer names the environment's state (another deployment came first), or names none of it: nothing " +
            "was written; read the record again, then retry",
          environmentMovedOn(),
        ),
        PayloadTooLarge: errorResponse(`Request body over ${MAX_BODY_BYTES} bytes`, payloadTooLarge(MAX_BODY_BYTES)),
        UnsupportedMediaType: errorResponse(
          "Request body not application/json (+json types and a charset are fine)",
          unsupportedMediaType(),
        ),
        ValidationFailed: jsonResponse(
          "Body fields, path or query parameters, or an empty or malformed JSON body; on a POST or PUT that writes, also an " +
            `${IDEMPOTENCY_KEY_HEADER} already used for another request. \`loc\` names the faulty input`,
          schemaRef("ValidationError"),
          {
            examples: {
              missingField: {
                summary: "A required body field is missing",
                value: {
                  detail: [{ loc: ["body", "app_name"], msg: "Field required", type: "missing" }],
                } satisfies ValidationErrorBody,
              },
              idempotencyKeyReused: {
                summary: `The ${IDEMPOTENCY_KEY_HEADER} was used for another method, path or body`,
                value: { detail: idempotencyKeyReused().detail },
              },
            },
          },
        ),
        TooManyRequests: errorResponse(
          "The key spent its request budget, or the client address its budget of failed authentications or of " +
            "requests without a key (invitation accepts)",
          tooManyRequests(),
        ),
        InternalServerError: jsonResponse("Anything unexpected; the error is logged, never told", schemaRef("Error"), {
          example: { detail: "Internal Server Error" },
        }),
        ServiceUnavailable: jsonResponse(
          "The database failed in a way its operator calls transient (a read is retried once first; `Retry-After: 1`), or " +
            "the write's organization is being moved to another database (writes refused, nothing written; reads go on; " +
            "`Retry-After: 30`); try again later",
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
