import { env } from "cloudflare:workers";
import { Validator } from "@cfworker/json-schema";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { ROUTES } from "../../src/routes";
import {
  type Account,
  BASE_URL,
  CreateAppBody,
  createAccount,
  createAppVia,
  createService,
  createTeam,
  deploy,
  type EnvironmentRevisions,
  EnvironmentRevisionsParams,
  expectJson,
  getRevisions,
  issueKey,
  postApp,
  type RequestOptions,
  send,
  withinOneWindow,
} from "./fixtures";
import { failTrips } from "./instrumented-d1";
import { databaseOf, instrumentedShards } from "./pool";

// Real responses, made through the Worker's fetch handler, are checked against the document the Worker serves, with
// a JSON Schema (2020-12) validator that runs here in workerd.
const DOCUMENT_URI = `${BASE_URL}/openapi.json`;
const REVISIONS = "/apps/{app_id}/revisions/{environment_name}";
const UNKNOWN_ID = "01900000-0000-7000-8000-000000000000";

// Every route the service serves, from its router (middleware, method ALL, left out): the document must list these
// and no other. /docs is this document as a page (docs.test.ts), and /console a client of the API (console.test.ts):
// pages, not operations of it.
const PAGES = ["/docs", "/console"];
const SERVED_ROUTES = [
  ...new Set(
    createService({ basePath: "", corsOrigins: [] })
      .routes.filter(
        ({ method, path }) => method !== "ALL" && !PAGES.some((page) => path === page || path.startsWith(`${page}/`)),
      )
      .map(({ method, path }) => `${method} ${path.replace(/:(\w+)/g, "{$1}")}`),
  ),
];

let document: Record<string, unknown>;
let account: Account;
let appId: string;
/** A viewer of the team's organization, whose app has the config "main", deployed to production. */
let viewer: Account;
let teamAppId: string;
let teamOrganizationId: string;
let mainVariantId: string;
beforeAll(async () => {
  const response = await send("GET", "/openapi.json");
  expect(response.status).toBe(200);
  document = await response.json();
  account = await createAccount();
  appId = await createAppVia(account.key, { app_name: "documented" });
  viewer = await createAccount();
  const team = await createTeam(account, [[viewer, "viewer"]]);
  teamOrganizationId = team.organizationId;
  teamAppId = await createAppVia(account.key, { app_name: "team app", organization_id: team.organizationId });
  mainVariantId = (await deploy(teamAppId, "production", "main", account)).variantId;
});

afterEach(() => {
  vi.restoreAllMocks();
});

/** The real D1 bindings, failing every round trip with an error D1 documents as transient. */
const unavailable = () => ({ bindings: instrumentedShards({ beforeTrip: failTrips("all") }) });

/** A JSON Schema without its descriptions (a property named `description` stays: its schema is an object). */
function withoutDescriptions(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutDescriptions);
  if (typeof schema !== "object" || schema === null) return schema;
  return Object.fromEntries(
    Object.entries(schema)
      .filter(([key, value]) => !(key === "description" && typeof value === "string"))
      .map(([key, value]) => [key, withoutDescriptions(value)]),
  );
}

const escapePointer = (segment: string) => segment.replaceAll("~", "~0").replaceAll("/", "~1");

/** The value at a JSON pointer of the document. */
function at(pointer: string): unknown {
  return pointer
    .split("/")
    .slice(1)
    .map((part) => part.replaceAll("~1", "/").replaceAll("~0", "~"))
    .reduce<unknown>((value, key) => (value as Record<string, unknown> | undefined)?.[key], document);
}

/** Every object of the document under `pointer` (arrays too) with its pointer, parents first; examples are not entered. */
function* objectsIn(pointer = ""): Generator<[string, Record<string, unknown>]> {
  const value = at(pointer);
  if (value === null || typeof value !== "object") return;
  yield [pointer, value as Record<string, unknown>];
  for (const key of Object.keys(value))
    if (key !== "example" && key !== "examples") yield* objectsIn(`${pointer}/${escapePointer(key)}`);
}

/** What the schema at `pointer` finds wrong with `instance` (nothing: it is valid). */
function schemaErrors(pointer: string, instance: unknown) {
  const schema = at(pointer);
  expect(schema, `a schema at ${pointer}`).toBeTypeOf("object");
  // The schema as the root, beside the components its `$ref`s ("#/components/schemas/...") point to.
  const root = structuredClone({ ...(schema as object), $id: DOCUMENT_URI, components: document.components });
  return new Validator(root, "2020-12", false).validate(instance).errors;
}

/** Where the object at `pointer` is described: the pointer, or where its `$ref` points. */
function resolved(pointer: string): string {
  const ref = (at(pointer) as { $ref?: string } | undefined)?.$ref;
  return ref ? ref.slice(1) : pointer;
}

/** Where the document describes this status of this operation (following a `$ref` to a shared response). */
function documentedResponse(method: string, path: string, status: number): string {
  const pointer = `/paths/${escapePointer(path)}/${method}/responses/${status}`;
  expect(at(pointer), `${method.toUpperCase()} ${path} documents ${status}`).toBeDefined();
  return resolved(pointer);
}

// Headers the service sets (beside Content-Type and the caching ones): a response with one must document it.
const SERVICE_HEADERS = [
  "X-Request-Id",
  "x-d1-bookmark",
  "ETag",
  "Idempotent-Replayed",
  "Retry-After",
  "WWW-Authenticate",
  "Allow",
];

/**
 * Checks the response's headers against the documented response's: every required one present, each valid, and
 * none of the service's own undocumented.
 */
function expectHeadersConform(response: Response, pointer: string) {
  const headers = Object.keys((at(`${pointer}/headers`) ?? {}) as object);
  expect(headers).toContain("X-Request-Id");
  const answered = SERVICE_HEADERS.filter((name) => response.headers.has(name));
  expect(headers, `${pointer}: documented headers`).toEqual(expect.arrayContaining(answered));
  for (const name of headers) {
    const header = resolved(`${pointer}/headers/${escapePointer(name)}`);
    const value = response.headers.get(name);
    if ((at(header) as { required?: boolean }).required) expect(value, `${pointer}: header ${name}`).not.toBeNull();
    if (value !== null) expect(schemaErrors(`${header}/schema`, value), `header ${name}`).toEqual([]);
  }
}

/** The example body of the documented response at `pointer`, or its examples' bodies. */
function documentedBodies(pointer: string): unknown[] {
  const media = at(`${pointer}/content/application~1json`) as {
    example?: unknown;
    examples?: Record<string, { value: unknown }>;
  };
  return media.examples ? Object.values(media.examples).map(({ value }) => value) : [media.example];
}

/**
 * Checks a real response against the documented one: its headers (expectHeadersConform), and the body valid
 * against its schema. With `example`, the body must also be the documented example (or one of the documented
 * examples). Returns the body.
 */
async function expectConforms(response: Response, pointer: string, { example = false } = {}): Promise<unknown> {
  expectHeadersConform(response, pointer);
  expect(response.headers.get("Content-Type")).toMatch(/^application\/json/);
  const body = await response.json();
  expect(schemaErrors(`${pointer}/content/application~1json/schema`, body), JSON.stringify(body)).toEqual([]);
  if (example) expect(documentedBodies(pointer)).toContainEqual(body);
  return body;
}

/** Checks that the response has this status and answers as the document says the operation ("METHOD /path") does then. */
async function expectDocumented(response: Response, operation: string, status: number, options?: { example?: boolean }) {
  const [method, path] = operation.split(" ");
  expect(response.status, `${operation}: ${await response.clone().text()}`).toBe(status);
  return await expectConforms(response, documentedResponse(method.toLowerCase(), path, status), options);
}

/** expectDocumented for one operation. */
const answersOf = (operation: string) => (response: Response, status: number, options?: { example?: boolean }) =>
  expectDocumented(response, operation, status, options);

const HTTP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/** Every operation of the document, as "METHOD /path". */
const documentedOperations = () =>
  Object.entries(document.paths as Record<string, object>).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((key) => HTTP_METHODS.includes(key))
      .map((method) => `${method.toUpperCase()} ${path}`),
  );

type Parameter = { name: string; in: string; required?: boolean; example?: unknown; schema?: { examples?: unknown[] } };

/** A parameter's documented sample: its example, or an optional one's first schema example. */
const sampleOf = (parameter: Parameter | undefined) => parameter?.example ?? parameter?.schema?.examples?.[0];

/** Where the document describes the operation ("METHOD /path"). */
function operationPointer(operation: string): string {
  const [method, path] = operation.split(" ");
  return `/paths/${escapePointer(path)}/${method.toLowerCase()}`;
}

/** The path with each parameter replaced by its documented example, and the query of the documented examples. */
function exampleUrl(operation: string): string {
  const path = operation.split(" ")[1];
  const item = at(`/paths/${escapePointer(path)}`) as { parameters?: Parameter[] };
  const own = (at(`${operationPointer(operation)}/parameters`) ?? []) as Parameter[];
  const filled = path.replace(/\{(\w+)\}/g, (_, name) =>
    String(sampleOf(item.parameters?.find((parameter) => parameter.name === name))),
  );
  const query = new URLSearchParams(
    Object.fromEntries(
      own.filter((parameter) => parameter.in === "query").map((parameter) => [parameter.name, String(sampleOf(parameter))]),
    ),
  );
  return query.size > 0 ? `${filled}?${query}` : filled;
}

/** The operation's documented request body examples (none: one request without a body). */
function exampleBodies(operation: string): unknown[] {
  const examples = at(`${operationPointer(operation)}/requestBody/content/application~1json/examples`);
  return examples ? Object.values(examples as Record<string, { value: unknown }>).map(({ value }) => value) : [undefined];
}

/** Whether a path template of the document (with {parameters}) matches this path. */
const templateMatches = (template: string, path: string) =>
  new RegExp(`^${template.replaceAll(".", "\\.").replace(/\{\w+\}/g, "[^/]+")}$`).test(path);

const DEPLOYMENTS = [
  "POST /variants/configs/deploy",
  "POST /environments/deploy",
  "POST /configs/deployment/{deployment_revision_id}/revert",
  "POST /applications/revisions/deploy",
];

/**
 * Whether the operation's Idempotency-Key is checked but not stored, so that a retry is answered afresh, not replayed
 * (reads, and writes whose repetition is the same write: an archive, a rename): as its declaration says.
 */
const keyValidatedOnly = (operation: string) =>
  ROUTES.some(
    ({ declaration: { method, path, idempotencyKey } }) =>
      `${method.toUpperCase()} ${path}` === operation && idempotencyKey === "validates",
  );

/** Operations a key is needed for, or (ACCEPT) may be given to. */
const keyedOperations = () => SERVED_ROUTES.filter((operation) => !["GET /health", "GET /openapi.json"].includes(operation));

/** Accepting an invitation: a new email's invitee has no key yet, so the key is optional there. */
const ACCEPT = "POST /organizations/{org_id}/workspaces/{workspace_id}/invite/accept";
const VERDICTS = "POST /apps/{app_id}/environments/{environment}/split/verdicts";

/** The accounts routes (docs/ACCOUNTS-API.md) and webhooks: they take no Idempotency-Key. */
const isAccountsOperation = (operation: string) => /^\w+ \/(keys|profile|organizations|workspaces|webhooks)\b/.test(operation);

/** Whether the operation takes an Idempotency-Key: every POST and PUT but those of accounts, and a change request's edit. */
const takesIdempotencyKey = (operation: string) =>
  (operation.startsWith("POST ") || operation.startsWith("PUT ") || operation.startsWith("PATCH /change-requests/")) &&
  !isAccountsOperation(operation);

describe("GET /openapi.json", () => {
  it("serves an OpenAPI 3.1 document without a key", async () => {
    expect(document.openapi).toBe("3.1.0");
    expect(Object.keys(document.paths as object)).toEqual(expect.arrayContaining(["/apps", REVISIONS, "/health"]));
    expect(at(`/paths/~1apps/post/requestBody/content/application~1json/schema`)).toEqual({
      $ref: "#/components/schemas/CreateApp",
    });
    const parameters = at(`/paths/${escapePointer(REVISIONS)}/parameters`) as { name: string; in: string; required: boolean }[];
    expect(parameters.map(({ name, in: where, required }) => [name, where, required])).toEqual([
      ["app_id", "path", true],
      ["environment_name", "path", true],
    ]);
  });

  // The validators here are the Worker's, whose schemas carry no text (wrangler.toml [define]): the
  // document's are theirs plus descriptions.
  it("takes request bodies and path parameters from the validators' own zod schemas, adding their descriptions", () => {
    const { $schema, ...createApp } = z.toJSONSchema(CreateAppBody, { io: "input" });
    expect(withoutDescriptions(at("/components/schemas/CreateApp"))).toEqual(createApp);
    expect(at("/components/schemas/CreateApp/properties/app_name/description")).toMatch(/^Not blank, /);
    const parameters = at(`/paths/${escapePointer(REVISIONS)}/parameters`) as { name: string; schema: unknown }[];
    const params = z.toJSONSchema(EnvironmentRevisionsParams, { io: "input" }).properties ?? {};
    expect(Object.fromEntries(parameters.map(({ name, schema }) => [name, withoutDescriptions(schema)]))).toEqual(params);
  });

  it("documents the API key in the Authorization header, required everywhere but /health and /openapi.json", () => {
    expect(at("/components/securitySchemes/ApiKey")).toMatchObject({ type: "apiKey", in: "header", name: "Authorization" });
    expect(String(at("/components/securitySchemes/ApiKey/description"))).toMatch(/ApiKey <key>.*Bearer <key>.*bare key/);
    expect(document.security).toEqual([{ ApiKey: [] }]);
    expect(at("/paths/~1apps/post/security")).toBeUndefined();
    expect(at(`/paths/${escapePointer(REVISIONS)}/get/security`)).toBeUndefined();
    expect(at("/paths/~1health/get/security")).toEqual([]);
    expect(at("/paths/~1openapi.json/get/security")).toEqual([]);
    expect(at(`${operationPointer(ACCEPT)}/security`)).toEqual([{}, { ApiKey: [] }]);
  });

  it("has servers relative to BASE_PATH, and is served under it", async () => {
    expect(document.servers).toEqual([expect.objectContaining({ url: "/" })]);
    const response = await send("GET", "/api/openapi.json", { bindings: { BASE_PATH: "/api" } });
    expect(response.status).toBe(200);
    const underApi = (await response.json()) as typeof document;
    expect(underApi.servers).toEqual([expect.objectContaining({ url: "/api" })]);
    expect(underApi.paths).toEqual(document.paths);
  });

  it("gives examples that are valid against their schemas", () => {
    const checked: string[] = [];
    for (const [pointer, node] of objectsIn()) {
      if ("schema" in node && "example" in node) {
        expect(schemaErrors(`${pointer}/schema`, node.example), `${pointer}/example`).toEqual([]);
        checked.push(`${pointer}/example`);
      }
      if ("schema" in node && "examples" in node) {
        for (const [name, { value: example }] of Object.entries(node.examples as Record<string, { value: unknown }>)) {
          expect(schemaErrors(`${pointer}/schema`, example), `${pointer}/examples/${name}`).toEqual([]);
          checked.push(`${pointer}/examples/${name}`);
        }
      }
      const schemaExamples = (node.schema as { examples?: unknown } | undefined)?.examples;
      if (Array.isArray(schemaExamples)) {
        schemaExamples.forEach((example, index) => {
          expect(schemaErrors(`${pointer}/schema`, example), `${pointer}/schema/examples/${index}`).toEqual([]);
          checked.push(`${pointer}/schema/examples/${index}`);
        });
      }
    }
    expect(checked).toEqual(
      expect.arrayContaining([
        "/paths/~1apps/post/requestBody/content/application~1json/examples/inKeyProject",
        "/paths/~1apps/post/requestBody/content/application~1json/examples/inOrganization",
        "/paths/~1apps/post/responses/200/content/application~1json/example",
        `/paths/${escapePointer(REVISIONS)}/parameters/0/example`,
        `/paths/${escapePointer(REVISIONS)}/parameters/1/example`,
        `/paths/${escapePointer(REVISIONS)}/get/responses/200/content/application~1json/example`,
        "/components/responses/Unauthorized/headers/WWW-Authenticate/example",
        "/components/responses/ValidationFailed/content/application~1json/examples/idempotencyKeyReused",
        "/components/parameters/IdempotencyKey/schema/examples/0",
        "/components/parameters/IfMatch/schema/examples/0",
        "/components/headers/ETag/example",
        "/paths/~1variants~1configs~1deploy/post/requestBody/content/application~1json/examples/latestToStaging",
        "/paths/~1apps/get/parameters/2/schema/examples/0",
        "/paths/~1variants~1configs~1commit/post/requestBody/content/application~1json/examples/wrapped",
        "/components/responses/NoVariantDeployed/content/application~1json/examples/nothingDeployed",
        "/paths/~1keys/post/parameters/4/schema/examples/0",
        `${operationPointer(ACCEPT)}/responses/200/content/application~1json/examples/newUser`,
        "/components/responses/InvitationUnauthorized/content/application~1json/examples/invitationNeedsKey",
        "/paths/~1workspaces~1roles/get/responses/200/content/application~1json/example",
      ]),
    );
  });
});

type Operation = {
  tags?: string[];
  summary?: string;
  description?: string;
  requestBody?: { content: Record<string, { example?: unknown; examples?: Record<string, { summary?: string }> }> };
};

/** Every operation of the document with its "METHOD /path", and those of its webhooks ("POST webhook <name>"). */
function everyOperation(): [string, Operation][] {
  const webhooks = Object.entries(document.webhooks as Record<string, Record<string, Operation>>).flatMap(([name, item]) =>
    Object.keys(item)
      .filter((key) => HTTP_METHODS.includes(key))
      .map((method): [string, Operation] => [`${method.toUpperCase()} webhook ${name}`, item[method]]),
  );
  return [
    ...documentedOperations().map((operation): [string, Operation] => [operation, at(operationPointer(operation)) as Operation]),
    ...webhooks,
  ];
}

// The tags in the order Swagger UI shows their groups (each operation's is its declaration's).
const TAG_NAMES = [
  "Apps",
  "Environments",
  "Variants",
  "Configs",
  "Deployments",
  "Diffs",
  "Protection",
  "Older SDK",
  "Simple applications",
  "Application variants",
  "Application revisions",
  "Workflow revisions",
  "Simple environments",
  "Splits",
  "Change requests",
  "Keys",
  "Profile",
  "Organizations",
  "Workspaces",
  "Events",
  "Webhooks",
  "Service",
];
// What a reader of the page should never meet: how the service is built rather than what it does.
const INTERNAL_NAMES: [string, RegExp][] = [
  ["a source file", /\bsrc\/|\.(ts|js|sql|toml)\b/],
  ["a library or tool the service is built with", /\b(zod|hono|workerd|miniflare|wrangler|vitest|drizzle)\b/i],
  ["the database product", /\bD1\b|\bSQL(ite)?\b/],
  ["SQL", /\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|WHERE|JOIN|CTE)\b/],
  ["storage or runtime internals", /\b(transactions?|rows?|columns?|tables?|batch(es|ed)?|isolates?|bindings?)\b/i],
  ["the hosting platform", /\b(Workers?|Cloudflare)\b/],
  ["a setting's or secret's name", /\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b/],
  ["a function call", /\w\(\)/],
  ["a camelCase identifier", /\b[a-z]+[A-Z]\w*/],
  ["an operator tool", /\bCLI\b/],
];

/** Names a text may use in snake_case: the document's parameters, schema properties and string values (roles, ...). */
function apiNames(): Set<string> {
  const names = new Set<string>();
  for (const [, node] of objectsIn()) {
    if (node.properties && typeof node.properties === "object") for (const name of Object.keys(node.properties)) names.add(name);
    if (typeof node.in === "string" && typeof node.name === "string") names.add(node.name);
    for (const value of [node.const, ...(Array.isArray(node.enum) ? node.enum : [])])
      if (typeof value === "string") names.add(value);
  }
  return names;
}

describe("the document as Swagger UI shows it", () => {
  it("leaves an optional parameter's field empty (Swagger UI would fill in and send an example), its sample in its schema", () => {
    const parameters = [...objectsIn()].filter(([, node]) => typeof node.in === "string" && "schema" in node);
    expect(parameters.length).toBeGreaterThan(50);
    const prefilled = parameters
      .filter(([, node]) => !node.required)
      .filter(([, node]) => "example" in node || "examples" in node || "example" in (node.schema as object))
      .map(([pointer]) => pointer);
    expect(prefilled).toEqual([]);
    const optionalSamples = parameters.filter(([, node]) => !node.required && (node.schema as Parameter["schema"])?.examples);
    expect(optionalSamples.map(([pointer]) => pointer)).toEqual(
      expect.arrayContaining(["/components/parameters/IdempotencyKey", "/components/parameters/IfNoneMatch"]),
    );
  });

  it("groups every operation under exactly one tag, each declared with a one-line description, in reading order", () => {
    const tags = document.tags as { name: string; description: string }[];
    expect(tags.map(({ name }) => name)).toEqual(TAG_NAMES);
    for (const { name, description } of tags) expect(description, name).toMatch(/^[A-Z][^\n]{10,118}\.$/);
    const operations = everyOperation();
    expect(operations.map(([operation]) => operation)).toEqual(
      expect.arrayContaining(["GET /apps", "GET /health", "POST webhook event"]),
    );
    for (const [operation, { tags: its }] of operations) {
      expect(its, operation).toHaveLength(1);
      expect(TAG_NAMES, operation).toContain(its?.[0]);
    }
    // Every declared tag groups something: none shows as an empty group.
    expect(TAG_NAMES.filter((name) => !operations.some(([, { tags: its }]) => its?.includes(name)))).toEqual([]);
  });

  it("gives every operation a one-line summary, distinct from the others, and a description in sentences", () => {
    const operations = everyOperation();
    for (const [operation, { summary, description }] of operations) {
      expect(summary, operation).toMatch(/^[A-Z][^\n]{5,78}[^.\s]$/);
      expect(description, operation).toMatch(/^[A-Z`][\s\S]{10,}\.$/);
    }
    const summaries = operations.map(([, { summary }]) => summary);
    expect(summaries.filter((summary, index) => summaries.indexOf(summary) !== index)).toEqual([]);
  });

  it("gives every JSON request body an example, each named examples' with a summary", () => {
    const withBodies = everyOperation().filter(([, { requestBody }]) => requestBody);
    expect(withBodies.map(([operation]) => operation)).toEqual(expect.arrayContaining(["POST /apps", "POST webhook event"]));
    for (const [operation, { requestBody }] of withBodies) {
      expect(Object.keys(requestBody?.content ?? {}), operation).toEqual(["application/json"]);
      const { example, examples } = requestBody?.content["application/json"] ?? {};
      if (examples === undefined) expect(example, operation).toBeDefined();
      else {
        expect(Object.keys(examples).length, operation).toBeGreaterThan(0);
        for (const [name, { summary }] of Object.entries(examples)) expect(summary, `${operation} ${name}`).toMatch(/^[A-Z]/);
      }
    }
  });

  it("names nothing of how the service is built, in the info, tags, operations, responses, headers and schemas", () => {
    const texts: [string, string][] = [["info", (document.info as { description: string }).description]];
    for (const { name, description } of document.tags as { name: string; description: string }[])
      texts.push([`tag ${name}`, description]);
    for (const [operation, { summary, description }] of everyOperation())
      texts.push([`${operation} summary`, String(summary)], [`${operation} description`, String(description)]);
    for (const [pointer, node] of [...objectsIn("/paths"), ...objectsIn("/components"), ...objectsIn("/webhooks")])
      if (typeof node.description === "string") texts.push([pointer, node.description]);
    expect(texts.length).toBeGreaterThan(200);
    const names = apiNames();
    const found = texts.flatMap(([where, text]) => [
      ...INTERNAL_NAMES.filter(([, pattern]) => pattern.test(text)).map(([what]) => `${where}: ${what}: ${text}`),
      // snake_case is for the API's own names (fields, parameters, values such as roles), not the code's
      ...(text.match(/\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b/g) ?? [])
        .filter((word) => !names.has(word))
        .map((word) => `${where}: ${word}`),
    ]);
    expect(found).toEqual([]);
  });

  it("finds what it looks for: each pattern flags the kind of text it is meant to", () => {
    const flagged = (text: string) => INTERNAL_NAMES.filter(([, pattern]) => pattern.test(text)).map(([what]) => what);
    expect(
      [
        "Built in src/apps/apps.routes.ts.",
        "Validated with zod.",
        "Read from D1 replicas.",
        "Runs SELECT id FROM apps.",
        "Written in one transaction.",
        "Needs WEBHOOK_SECRETS_KEY.",
        "Calls listAppVariants() first.",
        "Made with the admin CLI.",
      ].map(flagged),
    ).toEqual([
      ["a source file"],
      ["a library or tool the service is built with"],
      ["the database product"],
      ["SQL"],
      ["storage or runtime internals"],
      ["a setting's or secret's name"],
      ["a function call", "a camelCase identifier"],
      ["an operator tool"],
    ]);
    expect(
      flagged("Sends x-d1-bookmark back; DELETE /variants/{variant_id} answers 409 while `deployed_app_variant_id` runs."),
    ).toEqual([]);
  });
});

describe("every route, as the document lists it", () => {
  it("lists every route the service serves, and only those", () => {
    expect(SERVED_ROUTES).toEqual(expect.arrayContaining(["GET /health", `GET ${REVISIONS}`, "POST /environments/deploy"]));
    expect(documentedOperations().sort()).toEqual([...SERVED_ROUTES].sort());
  });

  it("describes each request and response header once, in components, which operations and responses reference", () => {
    for (const [pointer, node] of objectsIn("/paths")) {
      expect(node.in, pointer).not.toBe("header");
      if (pointer.endsWith("/headers")) for (const header of Object.values(node)) expect(header, pointer).toHaveProperty("$ref");
    }
  });

  it("takes X-Request-Id and x-d1-bookmark everywhere, Idempotency-Key on every POST and PUT, If-Match where a 412 is documented", () => {
    // The shared responses of a malformed key and of one still in flight, by status.
    const keyErrors = { 400: "BadIdempotencyKey", 409: "IdempotencyKeyInFlight" };
    for (const operation of keyedOperations()) {
      const headers = ((at(`${operationPointer(operation)}/parameters`) ?? []) as { $ref?: string }[]).flatMap(
        ({ $ref }) => $ref?.replace("#/components/parameters/", "") ?? [],
      );
      expect(headers.slice(0, 2), operation).toEqual(["RequestId", "D1Bookmark"]);
      const [method, path] = operation.split(" ");
      const keyed = takesIdempotencyKey(operation);
      expect(headers.includes("IdempotencyKey"), operation).toBe(keyed);
      if (keyed) {
        for (const [status, shared] of Object.entries(keyErrors)) {
          const keyError = documentedBodies(`/components/responses/${shared}`)[0];
          const documented = documentedResponse(method.toLowerCase(), path, Number(status));
          expect(documentedBodies(documented), `${operation} ${status}`).toContainEqual(keyError);
        }
        const replays = at(`${operationPointer(operation)}/responses/200/headers/Idempotent-Replayed`) !== undefined;
        expect(replays, operation).toBe(!keyValidatedOnly(operation));
      }
      expect(headers.includes("IfMatch"), operation).toBe(at(`${operationPointer(operation)}/responses/412`) !== undefined);
    }
    const conditional = keyedOperations().filter((operation) => at(`${operationPointer(operation)}/responses/412`));
    const ofChangeRequests = (operation: string) => / \/change-requests\b/.test(operation);
    // And a split's writes (docs/SPLITS.md §1), on the environment's ETag as a deploy.
    const splitWrites = [
      "PUT /apps/{app_id}/environments/{environment}/split",
      "DELETE /apps/{app_id}/environments/{environment}/split",
    ];
    expect(conditional.filter((operation) => !ofChangeRequests(operation))).toEqual([...DEPLOYMENTS, ...splitWrites]);
    // Every write of a change request is conditional too: on the request's ETag (a create: on the environment's).
    expect(conditional.filter(ofChangeRequests)).toEqual(
      keyedOperations().filter((operation) => ofChangeRequests(operation) && !operation.startsWith("GET ")),
    );
  });

  it("points every $ref at something in the document", () => {
    const refs = JSON.stringify(document).match(/"\$ref":"#[^"]*"/g) ?? [];
    for (const ref of new Set(refs)) expect(at(JSON.parse(`{${ref}}`).$ref.slice(1)), ref).toBeDefined();
  });

  it("serves each route, and answers a documented path's other methods 405 with the documented ones in Allow", async () => {
    for (const operation of SERVED_ROUTES) {
      const url = exampleUrl(operation);
      const keyed = keyedOperations().includes(operation);
      const response = await send(operation.split(" ")[0], url, { body: exampleBodies(operation)[0] });
      // Without a key, the example invitation's token is looked up, and is not found.
      // A split's verdict, for an app of none: no split there.
      const status = !keyed ? 200 : operation === ACCEPT || operation === VERDICTS ? 404 : 401;
      await expectDocumented(response, operation, status, { example: keyed });
      // A path may match several templates (/apps/get_variant_by_env is also an /apps/{app_id}).
      const path = url.split("?")[0];
      const methods = documentedOperations()
        .filter((documented) => templateMatches(documented.split(" ")[1], path))
        .map((documented) => documented.split(" ")[0]);
      const other = methods.includes("PUT") ? "PATCH" : "PUT";
      const wrongMethod = await send(other, path);
      expect(wrongMethod.status, `${other} ${path}`).toBe(405);
      const allowed = wrongMethod.headers.get("Allow")?.split(", ") ?? [];
      expect(allowed.filter((method) => method !== "HEAD").sort(), path).toEqual([...new Set(methods)].sort());
    }
  });

  it("accepts every documented parameter and body example (a documented answer, never a 422)", async () => {
    for (const operation of keyedOperations()) {
      for (const body of exampleBodies(operation)) {
        const response = await send(operation.split(" ")[0], exampleUrl(operation), { key: account.key, body });
        if (operation === "POST /organizations") {
          // Its examples name the README's demo user as the owner, which only that user may: the one 422 allowed.
          const refused = (await expectDocumented(response, operation, 422)) as { detail: { loc: unknown[] }[] };
          expect(refused.detail.map(({ loc }) => loc)).toEqual([["body", "owner"]]);
          continue;
        }
        expect(response.status, `${operation} ${JSON.stringify(body)}`).not.toBe(422);
        await expectDocumented(response, operation, response.status);
      }
    }
  });

  it("503 with Retry-After on every route when the database is unavailable", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    for (const operation of keyedOperations()) {
      const [method] = operation.split(" ");
      const response = await send(method, exampleUrl(operation), {
        key: account.key,
        body: exampleBodies(operation)[0],
        ...unavailable(),
      });
      await expectDocumented(response, operation, 503, { example: true });
    }
  });

  it("413 one byte over the documented limit (not at it), and 415, on every route with a JSON body", async () => {
    const withBody = keyedOperations().filter((operation) => exampleBodies(operation)[0] !== undefined);
    expect(withBody).toEqual(keyedOperations().filter((operation) => at(`${operationPointer(operation)}/responses/415`)));
    for (const operation of withBody) {
      const [method, path] = operation.split(" ");
      const tooLarge = at(`${documentedResponse(method.toLowerCase(), path, 413)}/content/application~1json/example`);
      const limit = Number(/(\d+) bytes/.exec((tooLarge as { detail: string }).detail)?.[1]);
      const request = (rawBody: string, contentType = "application/json") =>
        send(method, exampleUrl(operation), { key: account.key, rawBody, headers: { "Content-Type": contentType } });
      const padded = (bytes: number) => JSON.stringify({ padding: "a".repeat(bytes - '{"padding":""}'.length) });
      expect((await request(padded(limit))).status, `${operation}: ${limit} bytes`).not.toBe(413);
      await expectDocumented(await request(padded(limit + 1)), operation, 413, { example: true });
      await expectDocumented(await request("{}", "text/plain"), operation, 415, { example: true });
    }
  });
});

describe("POST /apps answers as documented", () => {
  const answers = answersOf("POST /apps");

  it("200 with the created app", async () => {
    const body = await answers(await postApp(account.key, { app_name: "per the document" }), 200);
    expect(body).toMatchObject({ app_name: "per the document" });
  });

  it("403", async () => {
    const response = await postApp(account.key, { app_name: "x", organization_id: UNKNOWN_ID });
    await answers(response, 403, { example: true });
  });

  it("409", async () => {
    await answers(await postApp(account.key, { app_name: "documented" }), 409, { example: true });
  });

  it("422 for a missing field, a wrong type, and malformed JSON", async () => {
    await answers(await postApp(account.key, {}), 422, { example: true });
    await answers(await postApp(account.key, { app_name: 42, project_id: "nope" }), 422);
    const malformed = await send("POST", "/apps", {
      key: account.key,
      rawBody: '{"app_name":',
      headers: { "Content-Type": "application/json" },
    });
    await answers(malformed, 422);
  });

  it("500", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    await databaseOf(account.organizationId).exec(
      "CREATE TRIGGER fail_documented BEFORE INSERT ON environments WHEN NEW.name = 'staging' BEGIN SELECT RAISE(ABORT, 'injected fault'); END",
    );
    try {
      await answers(await postApp(account.key, { app_name: "fails" }), 500, { example: true });
    } finally {
      await databaseOf(account.organizationId).exec("DROP TRIGGER fail_documented");
    }
  });
});

describe("GET /apps/{app_id}/revisions/{environment_name} answers as documented", () => {
  const answers = answersOf(`GET ${REVISIONS}`);

  it("200 before and after deployments", async () => {
    const before = await answers(await getRevisions(account.key, appId, "staging"), 200);
    expect(before).toMatchObject({ revision: 0, revisions: [], deployed_app_variant_id: null });
    await deploy(appId, "staging", "main", account);
    await deploy(appId, "staging", "main", account);
    const after = await answers(await getRevisions(account.key, appId, "staging"), 200);
    expect(after).toMatchObject({ revision: 2, deployed_variant_name: "app.main" });
  });

  it("304 for If-None-Match naming its ETag; x-d1-bookmark answered, and taken back", async () => {
    const read = await getRevisions(account.key, appId, "production");
    const [etag, bookmark] = [read.headers.get("ETag") ?? "", read.headers.get("x-d1-bookmark") ?? ""];
    expect(bookmark).not.toBe("");
    await answers(await getRevisions(account.key, appId, "production", { headers: { "x-d1-bookmark": bookmark } }), 200);
    const unchanged = await getRevisions(account.key, appId, "production", { headers: { "If-None-Match": etag } });
    expect(unchanged.status).toBe(304);
    expectHeadersConform(unchanged, documentedResponse("get", REVISIONS, 304));
    expect(unchanged.headers.get("ETag")).toBe(etag);
    expect(await unchanged.text()).toBe("");
  });

  it("404 and 422", async () => {
    await answers(await getRevisions(account.key, appId, "qa"), 404, { example: true });
    await answers(await getRevisions(account.key, "not-a-uuid", "staging"), 422);
  });

  it("500", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    await databaseOf(account.organizationId).exec("ALTER TABLE environment_revisions RENAME TO environment_revisions_gone");
    try {
      await answers(await getRevisions(account.key, appId, "staging"), 500, { example: true });
    } finally {
      await databaseOf(account.organizationId).exec("ALTER TABLE environment_revisions_gone RENAME TO environment_revisions");
    }
  });

  it("429 with Retry-After", async () => {
    // The strict emulated limiter of test/vitest.config.ts allows a key 5 requests a minute.
    const responses = await withinOneWindow(env.TEST_STRICT_KEY_LIMITER, async () => {
      const { key } = await createAccount();
      const bindings = { KEY_RATE_LIMITER: env.TEST_STRICT_KEY_LIMITER };
      const responses: Response[] = [];
      for (let i = 0; i < 6; i++) responses.push(await getRevisions(key, appId, "staging", { bindings }));
      return responses;
    });
    expect(responses.map((response) => response.status)).toEqual([404, 404, 404, 404, 404, 429]);
    await answers(responses[5], 429, { example: true });
  });
});

describe("GET /apps answers as documented", () => {
  const answers = answersOf("GET /apps");
  const list = (query = "") => send("GET", `/apps${query}`, { key: account.key });

  it("200: the key's project, by name, and a workspace's default project", async () => {
    expect(await answers(await list(), 200)).toEqual(expect.arrayContaining([expect.objectContaining({ app_id: appId })]));
    expect(await answers(await list("?app_name=documented"), 200)).toEqual([expect.objectContaining({ app_name: "documented" })]);
    expect(await answers(await list(`?workspace_id=${account.workspaceId}&app_name=nothing`), 200)).toEqual([]);
  });

  it("422", async () => {
    await answers(await list("?workspace_id=nope"), 422);
  });
});

describe("PATCH /apps/{app_id} answers as documented", () => {
  const answers = answersOf("PATCH /apps/{app_id}");
  const rename = (id: string, body: unknown, key = account.key) => send("PATCH", `/apps/${id}`, { key, body });

  it("200, then 409 for a name taken in the project", async () => {
    const id = await createAppVia(account.key, { app_name: "to rename" });
    expect(await answers(await rename(id, { app_name: "renamed" }), 200)).toEqual({ app_id: id, app_name: "renamed" });
    await answers(await rename(id, { app_name: "documented" }), 409, { example: true });
  });

  it("403 for a viewer, 404, 422", async () => {
    await answers(await rename(teamAppId, { app_name: "by a viewer" }, viewer.key), 403, { example: true });
    await answers(await rename(UNKNOWN_ID, { app_name: "x" }), 404, { example: true });
    await answers(await rename(appId, {}), 422);
    await answers(await rename("not-a-uuid", { app_name: "x" }), 422);
  });
});

describe("DELETE /apps/{app_id} answers as documented", () => {
  const answers = answersOf("DELETE /apps/{app_id}");
  const remove = (id: string, key = account.key) => send("DELETE", `/apps/${id}`, { key });

  it("200 null", async () => {
    await answers(await remove(await createAppVia(account.key, { app_name: "to delete" })), 200, { example: true });
  });

  it("403 for a viewer, 404, 422", async () => {
    await answers(await remove(teamAppId, viewer.key), 403, { example: true });
    await answers(await remove(UNKNOWN_ID), 404, { example: true });
    await answers(await remove("not-a-uuid"), 422);
  });
});

describe("GET /apps/{app_id}/environments answers as documented", () => {
  const answers = answersOf("GET /apps/{app_id}/environments");
  const environments = (id: string) => send("GET", `/apps/${id}/environments`, { key: account.key });

  it("200, 404, 422", async () => {
    const listed = (await answers(await environments(teamAppId), 200)) as {
      name: string;
      deployed_variant_name: string | null;
    }[];
    expect(listed.map(({ name, deployed_variant_name }) => [name, deployed_variant_name])).toEqual(
      expect.arrayContaining([
        ["staging", null],
        ["production", "app.main"],
      ]),
    );
    await answers(await environments(UNKNOWN_ID), 404, { example: true });
    await answers(await environments("not-a-uuid"), 422);
  });
});

describe("GET /apps/{app_id}/variants answers as documented", () => {
  const answers = answersOf("GET /apps/{app_id}/variants");
  const variants = (id: string) => send("GET", `/apps/${id}/variants`, { key: account.key });

  it("200 with and without variants, 404, 422", async () => {
    expect(await answers(await variants(teamAppId), 200)).toEqual([
      expect.objectContaining({ config_name: "main", revision: 1 }),
    ]);
    expect(await answers(await variants(await createAppVia(account.key, { app_name: "no variants" })), 200)).toEqual([]);
    await answers(await variants(UNKNOWN_ID), 404, { example: true });
    await answers(await variants("not-a-uuid"), 422);
  });
});

describe("GET /apps/get_variant_by_env answers as documented", () => {
  const answers = answersOf("GET /apps/get_variant_by_env");
  const deployedTo = (query: string) => send("GET", `/apps/get_variant_by_env?${query}`, { key: account.key });

  it("200, 404 for an unknown environment and for one with nothing deployed, 422", async () => {
    expect(await answers(await deployedTo(`app_id=${teamAppId}&environment=production`), 200)).toMatchObject({
      variant_id: mainVariantId,
    });
    await answers(await deployedTo(`app_id=${teamAppId}&environment=qa`), 404, { example: true });
    await answers(await deployedTo(`app_id=${teamAppId}&environment=staging`), 404, { example: true });
    await answers(await deployedTo(`app_id=${teamAppId}`), 422);
    await answers(await deployedTo("app_id=nope&environment=production"), 422);
  });
});

describe("GET /variants/{variant_id}... answer as documented", () => {
  const read = (path: string) => send("GET", path, { key: account.key });

  it("GET /variants/{variant_id}: 200, 404, 422", async () => {
    const answers = answersOf("GET /variants/{variant_id}");
    expect(await answers(await read(`/variants/${mainVariantId}`), 200)).toMatchObject({
      app_id: teamAppId,
      variant_name: "app.main",
    });
    await answers(await read(`/variants/${UNKNOWN_ID}`), 404, { example: true });
    await answers(await read("/variants/nope"), 422);
  });

  it("GET /variants/{variant_id}/revisions: 200, 404, 422", async () => {
    const answers = answersOf("GET /variants/{variant_id}/revisions");
    expect(await answers(await read(`/variants/${mainVariantId}/revisions`), 200)).toEqual([
      expect.objectContaining({ revision: 1 }),
    ]);
    await answers(await read(`/variants/${UNKNOWN_ID}/revisions`), 404, { example: true });
    await answers(await read("/variants/nope/revisions"), 422);
  });

  it("GET /variants/{variant_id}/revisions/{revision_number}: 200, 404 for the variant and for the revision, 422", async () => {
    const answers = answersOf("GET /variants/{variant_id}/revisions/{revision_number}");
    expect(await answers(await read(`/variants/${mainVariantId}/revisions/1`), 200)).toMatchObject({ revision: 1 });
    await answers(await read(`/variants/${UNKNOWN_ID}/revisions/1`), 404, { example: true });
    await answers(await read(`/variants/${mainVariantId}/revisions/99`), 404, { example: true });
    await answers(await read(`/variants/${mainVariantId}/revisions/first`), 422);
  });
});

describe("POST /variants/configs/... answer as documented", () => {
  const configs = (action: string, body: unknown, key = account.key) =>
    send("POST", `/variants/configs/${action}`, { key, body });
  const teamApp = () => ({ id: teamAppId });

  it("add: 200, 400 when it exists, 403 for a viewer, 404, 422", async () => {
    const answers = answersOf("POST /variants/configs/add");
    const add = { application_ref: teamApp(), variant_ref: { slug: "added" } };
    expect(await answers(await configs("add", add), 200)).toMatchObject({
      params: {},
      variant_ref: { slug: "added", version: 1 },
    });
    await answers(await configs("add", add), 400, { example: true });
    await answers(await configs("add", { ...add, variant_ref: { slug: "by a viewer" } }, viewer.key), 403, { example: true });
    await answers(await configs("add", { ...add, application_ref: { id: UNKNOWN_ID } }), 404, { example: true });
    await answers(await configs("add", {}), 422);
  });

  it("commit: 200 flat and wrapped, 409 on a stale version, 403 for a viewer, 404, 422", async () => {
    const answers = answersOf("POST /variants/configs/commit");
    await configs("add", { application_ref: teamApp(), variant_ref: { slug: "committed" } });
    const commit = (version?: number) => ({
      params: { temperature: version ?? 0 },
      application_ref: teamApp(),
      variant_ref: { slug: "committed", version },
    });
    expect(await answers(await configs("commit", commit(1)), 200)).toMatchObject({ variant_ref: { version: 2 } });
    await answers(await configs("commit", commit(1)), 409, { example: true });
    expect(await answers(await configs("commit", { config: commit() }), 200)).toMatchObject({ variant_ref: { version: 3 } });
    await answers(await configs("commit", commit(), viewer.key), 403, { example: true });
    await answers(await configs("commit", { ...commit(), variant_ref: { slug: "nothing" } }), 404, { example: true });
    await answers(await configs("commit", { ...commit(), params: "not an object" }), 422);
  });

  it("fetch: 200 by variant, through an environment and by the app alone, 404, 422", async () => {
    const answers = answersOf("POST /variants/configs/fetch");
    const byVariant = await answers(await configs("fetch", { application_ref: teamApp(), variant_ref: { slug: "main" } }), 200);
    expect(byVariant).toMatchObject({ environment_ref: null, environment_lifecycle: null });
    const throughProduction = { application_ref: teamApp(), environment_ref: { slug: "production" } };
    expect(await answers(await configs("fetch", throughProduction), 200)).toMatchObject({
      environment_ref: { slug: "production" },
    });
    expect(await answers(await configs("fetch", { application_ref: teamApp() }), 200)).toMatchObject({
      variant_ref: { slug: "main" },
    });
    await answers(await configs("fetch", { application_ref: teamApp(), variant_ref: { slug: "nothing" } }), 404, {
      example: true,
    });
    await answers(await configs("fetch", {}), 422);
  });

  it("fork: 200, 403 for a viewer, 404, 422", async () => {
    const answers = answersOf("POST /variants/configs/fork");
    const main = { application_ref: teamApp(), variant_ref: { slug: "main" } };
    expect(await answers(await configs("fork", main), 200)).toMatchObject({
      variant_ref: { slug: expect.stringMatching(/^main_[0-9a-f]{8}$/) },
    });
    await answers(await configs("fork", main, viewer.key), 403, { example: true });
    await answers(await configs("fork", { ...main, variant_ref: { slug: "nothing" } }), 404, { example: true });
    await answers(await configs("fork", { variant_ref: { slug: "main" } }), 422);
  });
});

describe("the older SDK's registry answers as documented", () => {
  const configsOf = (query: string, key = account.key) => send("GET", `/configs?${query}`, { key });
  const save = (body: unknown, key = account.key) => send("POST", "/configs", { key, body });
  const saved = (config_name: string, overwrite: boolean, parameters: Record<string, unknown> = { temperature: 0.5 }) => ({
    base_id: teamAppId,
    config_name,
    parameters,
    overwrite,
  });

  it("GET /configs: 200 by environment and by name, for a viewer too; 404 for nothing deployed, an unknown name or app; 422", async () => {
    const answers = answersOf("GET /configs");
    expect(await answers(await configsOf(`base_id=${teamAppId}&environment_name=production`, viewer.key), 200)).toEqual({
      config_name: "main",
      current_version: 1,
      parameters: {},
    });
    expect(await answers(await configsOf(`base_id=${teamAppId}&config_name=main`), 200)).toMatchObject({ config_name: "main" });
    await answers(await configsOf(`base_id=${teamAppId}&environment_name=staging`), 404, { example: true });
    await answers(await configsOf(`base_id=${teamAppId}&config_name=nothing`), 404, { example: true });
    await answers(await configsOf(`base_id=${UNKNOWN_ID}&environment_name=production`), 404, { example: true });
    await answers(await configsOf(`base_id=${teamAppId}`), 422);
    await answers(await configsOf("base_id=nope&environment_name=production"), 422);
  });

  it("POST /configs: 200 null for a new name and for an overwrite (then deployed to production), 400 when taken, 403, 404, 422", async () => {
    const answers = answersOf("POST /configs");
    const appId = await createAppVia(account.key, { app_name: "saved configs", organization_id: teamOrganizationId });
    const toApp = (body: ReturnType<typeof saved>) => ({ ...body, base_id: appId });
    await answers(await save(toApp(saved("saved", false))), 200, { example: true });
    await answers(await save(toApp(saved("saved", false))), 400, { example: true });
    await answers(await save(toApp(saved("saved", true, { temperature: 0.9 }))), 200, { example: true });
    expect(await (await configsOf(`base_id=${appId}&environment_name=production`)).json()).toEqual({
      config_name: "saved",
      current_version: 2,
      parameters: { temperature: 0.9 },
    });
    await answers(await save(saved("by a viewer", false), viewer.key), 403, { example: true });
    await answers(await save({ ...saved("nowhere", false), base_id: UNKNOWN_ID }), 404, { example: true });
    await answers(await save({ ...saved("no overwrite", false), overwrite: undefined }), 422);
  });

  it("GET /configs/deployment/{deployment_revision_id}: 200, 404, 422", async () => {
    const answers = answersOf("GET /configs/deployment/{deployment_revision_id}");
    const read = (id: string) => send("GET", `/configs/deployment/${id}`, { key: account.key });
    const deployed = await deploy(teamAppId, "development", "main", account);
    expect(await answers(await read(deployed.revisionId), 200)).toEqual({
      config_name: "main",
      current_version: deployed.revision,
      parameters: {},
    });
    await answers(await read(UNKNOWN_ID), 404, { example: true });
    await answers(await read("nope"), 422);
  });

  it("GET /bases: 200 with the app's base and with none, 404, 422", async () => {
    const answers = answersOf("GET /bases");
    const bases = (query: string) => send("GET", `/bases?${query}`, { key: account.key });
    expect(await answers(await bases(`app_id=${teamAppId}`), 200)).toEqual([{ base_id: teamAppId, base_name: "app" }]);
    expect(await answers(await bases(`app_id=${teamAppId}&base_name=other`), 200)).toEqual([]);
    await answers(await bases(`app_id=${UNKNOWN_ID}`), 404, { example: true });
    await answers(await bases("app_id=nope"), 422);
  });
});

describe("the older SDK's variant writes answer as documented", () => {
  const fromBase = (body: unknown, key = account.key) => send("POST", "/variants/from-base", { key, body });
  const newConfig = (new_config_name: string) => ({
    base_id: teamAppId,
    new_variant_name: "ignored",
    new_config_name,
    parameters: { temperature: 0.3 },
  });

  it("POST /variants/from-base: 200, 400 when the name is taken, 403 for a viewer, 404, 422", async () => {
    const answers = answersOf("POST /variants/from-base");
    expect(await answers(await fromBase(newConfig("from base")), 200)).toMatchObject({
      variant_name: "app.from base",
      revision: 1,
      parameters: { temperature: 0.3 },
    });
    await answers(await fromBase(newConfig("from base")), 400, { example: true });
    await answers(await fromBase(newConfig("by a viewer"), viewer.key), 403, { example: true });
    await answers(await fromBase({ ...newConfig("nowhere"), base_id: UNKNOWN_ID }), 404, { example: true });
    await answers(await fromBase({ ...newConfig("no parameters"), parameters: undefined }), 422);
  });

  it("PUT /variants/{variant_id}/parameters: 200 null, 403 for a viewer, 404, 422", async () => {
    const answers = answersOf("PUT /variants/{variant_id}/parameters");
    const update = (id: string, body: unknown, key = account.key) => send("PUT", `/variants/${id}/parameters`, { key, body });
    const { variant_id } = (await (await fromBase(newConfig("updated"))).json()) as { variant_id: string };
    await answers(await update(variant_id, { parameters: { temperature: 0.4 } }), 200, { example: true });
    expect(await (await send("GET", `/variants/${variant_id}`, { key: account.key })).json()).toMatchObject({
      revision: 2,
      parameters: { temperature: 0.4 },
    });
    await answers(await update(variant_id, { parameters: {} }, viewer.key), 403, { example: true });
    await answers(await update(UNKNOWN_ID, { parameters: {} }), 404, { example: true });
    await answers(await update(variant_id, { parameters: "not an object" }), 422);
    await answers(await update("nope", { parameters: {} }), 422);
  });

  it("DELETE /variants/{variant_id}: 409 while deployed, then 200 null and 404 after; 403 for a viewer, 422", async () => {
    const answers = answersOf("DELETE /variants/{variant_id}");
    const remove = (id: string, key = account.key) => send("DELETE", `/variants/${id}`, { key });
    const appId = await createAppVia(account.key, { app_name: "removals", organization_id: teamOrganizationId });
    const { variantId } = await deploy(appId, "production", "removed", account);
    await answers(await remove(variantId), 409, { example: true });
    await answers(await remove(variantId, viewer.key), 403, { example: true });
    await deploy(appId, "production", "main", account);
    await answers(await remove(variantId), 200, { example: true });
    await answers(await remove(variantId), 404, { example: true });
    const reads = [
      ["GET /variants/{variant_id}", `/variants/${variantId}`],
      ["GET /variants/{variant_id}/revisions", `/variants/${variantId}/revisions`],
      ["GET /variants/{variant_id}/revisions/{revision_number}", `/variants/${variantId}/revisions/1`],
    ];
    for (const [operation, path] of reads) {
      await expectDocumented(await send("GET", path, { key: account.key }), operation, 404, { example: true });
    }
    await answers(await remove("nope"), 422);
  });
});

describe("deployments answer as documented", () => {
  /** An app of the team, whose config "main" is deployed to production once. */
  let deployedAppId: string;
  let variantId: string;
  beforeAll(async () => {
    deployedAppId = await createAppVia(account.key, { app_name: "deployed", organization_id: teamOrganizationId });
    variantId = (await deploy(deployedAppId, "production", "main", account)).variantId;
  });

  const post = (path: string, options: RequestOptions = {}) => send("POST", path, { key: account.key, ...options });
  const etagOf = async (environment: string) => (await getRevisions(account.key, deployedAppId, environment)).headers.get("ETag");
  const mainTo = (environment: string) => ({
    application_ref: { id: deployedAppId },
    variant_ref: { slug: "main" },
    environment_ref: { slug: environment },
  });

  /** Checks that a deployment answered its environment's new ETag, the one its record now has. */
  async function expectNewETag(response: Response, environment: string) {
    expect(response.headers.get("ETag")).not.toBeNull();
    expect(response.headers.get("ETag")).toBe(await etagOf(environment));
  }

  it("POST /variants/configs/deploy: 200 with the new ETag, 412 for a stale If-Match, 403 for a viewer, 404s, 422", async () => {
    const answers = answersOf("POST /variants/configs/deploy");
    const deployTo = (body: unknown, options: RequestOptions = {}) => post("/variants/configs/deploy", { body, ...options });
    const stale = { headers: { "If-Match": (await etagOf("staging")) ?? "" } };
    const deployed = await deployTo(mainTo("staging"), stale);
    expect(await answers(deployed, 200)).toMatchObject({ environment_ref: { slug: "staging", version: 1 } });
    await expectNewETag(deployed, "staging");
    await answers(await deployTo(mainTo("staging"), stale), 412, { example: true });
    await answers(await deployTo(mainTo("staging"), { headers: { "If-Match": "*" } }), 200);
    await answers(await deployTo(mainTo("staging"), { key: viewer.key }), 403, { example: true });
    await answers(await deployTo({ ...mainTo("staging"), variant_ref: { slug: "nothing" } }), 404, { example: true });
    await answers(await deployTo(mainTo("qa")), 404, { example: true });
    await answers(await deployTo({ ...mainTo("staging"), environment_ref: null }), 422);
  });

  it("POST /environments/deploy: 200 null with the new ETag, 412, 403 for a viewer, 404s, 422", async () => {
    const answers = answersOf("POST /environments/deploy");
    const deployTo = (environment_name: string, options: RequestOptions = {}, variant_id = variantId) =>
      post("/environments/deploy", { body: { environment_name, variant_id }, ...options });
    const stale = { headers: { "If-Match": (await etagOf("development")) ?? "" } };
    const deployed = await deployTo("development", stale);
    await answers(deployed, 200, { example: true });
    await expectNewETag(deployed, "development");
    await answers(await deployTo("development", stale), 412, { example: true });
    await answers(await deployTo("development", { key: viewer.key }), 403, { example: true });
    await answers(await deployTo("development", {}, UNKNOWN_ID), 404, { example: true });
    await answers(await deployTo("qa"), 404, { example: true });
    await answers(await deployTo("development", {}, "nope"), 422);
  });

  it("POST /configs/deployment/{deployment_revision_id}/revert: 200 with the new ETag, 412, 403 for a viewer, 404, 422", async () => {
    const answers = answersOf("POST /configs/deployment/{deployment_revision_id}/revert");
    const record = (await (await getRevisions(account.key, deployedAppId, "production")).json()) as EnvironmentRevisions;
    const revert = (id: string, options: RequestOptions = {}) => post(`/configs/deployment/${id}/revert`, options);
    const stale = { headers: { "If-Match": (await etagOf("production")) ?? "" } };
    const reverted = await revert(record.revisions[0].id, stale);
    await answers(reverted, 200, { example: true });
    await expectNewETag(reverted, "production");
    await answers(await revert(record.revisions[0].id, stale), 412, { example: true });
    await answers(await revert(record.revisions[0].id, { key: viewer.key }), 403, { example: true });
    await answers(await revert(UNKNOWN_ID), 404, { example: true });
    await answers(await revert("nope"), 422);
  });

  it("409 for a revision of a removed variant (deploy, revert); 404 for the removed variant itself", async () => {
    const appId = await createAppVia(account.key, { app_name: "deploys a removed variant", organization_id: teamOrganizationId });
    const removed = await deploy(appId, "staging", "removed", account);
    await deploy(appId, "staging", "main", account);
    expect((await send("DELETE", `/variants/${removed.variantId}`, { key: account.key })).status).toBe(200);
    const fetched = await post("/variants/configs/fetch", { body: { environment_ref: { id: removed.revisionId } } });
    const { variant_ref } = (await answersOf("POST /variants/configs/fetch")(fetched, 200)) as { variant_ref: { id: string } };
    const readable = await post("/variants/configs/fetch", { body: { variant_ref: { id: variant_ref.id } } });
    expect(await answersOf("POST /variants/configs/fetch")(readable, 200)).toMatchObject({ variant_ref: { slug: "removed" } });
    const byRevision = {
      application_ref: { id: appId },
      variant_ref: { id: variant_ref.id },
      environment_ref: { slug: "staging" },
    };
    await answersOf("POST /variants/configs/deploy")(await post("/variants/configs/deploy", { body: byRevision }), 409, {
      example: true,
    });
    await answersOf("POST /configs/deployment/{deployment_revision_id}/revert")(
      await post(`/configs/deployment/${removed.revisionId}/revert`),
      409,
      { example: true },
    );
    const toEnvironment = { environment_name: "staging", variant_id: removed.variantId };
    await answersOf("POST /environments/deploy")(await post("/environments/deploy", { body: toEnvironment }), 404, {
      example: true,
    });
  });

  it("Idempotency-Key: a retry replays the 200 with Idempotent-Replayed, the key on another request is a 422", async () => {
    const answers = answersOf("POST /variants/configs/deploy");
    const keyed = { body: mainTo("staging"), headers: { "Idempotency-Key": `deploy-${crypto.randomUUID()}` } };
    const first = await post("/variants/configs/deploy", keyed);
    const deployed = await answers(first, 200);
    expect(first.headers.get("Idempotent-Replayed")).toBeNull();
    const retry = await post("/variants/configs/deploy", keyed);
    expect(await answers(retry, 200)).toEqual(deployed);
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
    expect(retry.headers.get("ETag")).toBe(first.headers.get("ETag"));
    await answers(await post("/variants/configs/deploy", { ...keyed, body: mainTo("development") }), 422, { example: true });
  });

  it("Idempotency-Key: 409 for a retry while the first is still being answered", async () => {
    const keyed = { body: mainTo("staging"), headers: { "Idempotency-Key": `deploy-${crypto.randomUUID()}` } };
    const responses = await Promise.all([post("/variants/configs/deploy", keyed), post("/variants/configs/deploy", keyed)]);
    const inFlight = responses.find((response) => response.status === 409);
    expect(responses.map((response) => response.status).sort()).toEqual([200, 409]);
    await expectDocumented(inFlight ?? responses[0], "POST /variants/configs/deploy", 409, { example: true });
  });

  it("Idempotency-Key: 400 for a malformed key on every POST and PUT; the documented pattern accepts exactly the keys the service does", async () => {
    for (const operation of keyedOperations().filter(takesIdempotencyKey)) {
      const headers = { "Idempotency-Key": "a".repeat(256) };
      const response = await send(operation.split(" ")[0], exampleUrl(operation), {
        key: account.key,
        body: exampleBodies(operation)[0],
        headers,
      });
      await expectDocumented(response, operation, 400, { example: true });
    }
    const [long, tooLong] = ["a".repeat(255), "a".repeat(256)];
    const bare = ["k", long, tooLong, 'a"b', "a\\b", "a\tb", ""];
    const quoted = ['"quoted"', `"${long}"`, `"${tooLong}"`, '"with \\" inside"', '"a\tb"', '"  "'];
    for (const key of [...bare, ...quoted]) {
      const fetched = await post("/variants/configs/fetch", {
        body: { application_ref: { id: UNKNOWN_ID } },
        headers: { "Idempotency-Key": key },
      });
      const documentedValid = schemaErrors("/components/parameters/IdempotencyKey/schema", key).length === 0;
      expect(fetched.status, JSON.stringify(key)).toBe(documentedValid ? 404 : 400);
    }
  });
});

describe("today's SDK's apps and variants answer as documented", () => {
  const apps = "/simple/applications";
  const variants = "/applications/variants";
  const post = (path: string, body?: unknown, key = account.key) => send("POST", path, { key, body });
  const createApp = (slug: string, key = account.key) => post(`${apps}/`, { application: { slug, name: slug } }, key);
  const addVariant = (applicationId: string, slug: string, key = account.key) =>
    post(`${variants}/`, { application_variant: { application_id: applicationId, slug } }, key);

  it("POST /simple/applications: 200, 409 (as documented, live and archived), 403, 422", async () => {
    const answers = answersOf("POST /simple/applications");
    const { application } = (await answers(await createApp("documented-current"), 200)) as { application: { id: string } };
    await answers(await createApp("documented"), 409);
    await answers(await post(`${apps}/${application.id}/archive`), 200);
    await answers(await createApp("documented-current"), 409);
    await answers(
      await post(
        `${apps}/`,
        { application: { slug: "viewed" } },
        await issueKey(viewer.userId, viewer.projectId, { readOnly: true }),
      ),
      403,
      { example: true },
    );
    await answers(await post(`${apps}/`, { app: { slug: "x" } }), 422);
  });

  it("query, GET, PUT, archive and unarchive of an app: 200s (found and not), 403, 404, 409, 422", async () => {
    const { application } = (await answersOf("POST /simple/applications")(await createApp("documented-edit"), 200)) as {
      application: { id: string };
    };
    const query = answersOf("POST /simple/applications/query");
    await query(await post(`${apps}/query`, {}), 200);
    await query(await post(`${apps}/query`, { include_archived: "no" }), 422);
    const read = answersOf("GET /simple/applications/{application_id}");
    await read(await send("GET", `${apps}/${application.id}`, { key: account.key }), 200);
    await read(await send("GET", `${apps}/${UNKNOWN_ID}`, { key: account.key }), 200, { example: true });
    await read(await send("GET", `${apps}/not-a-uuid`, { key: account.key }), 422);
    const edit = answersOf("PUT /simple/applications/{application_id}");
    const put = (id: string, name: string, key = account.key) =>
      send("PUT", `${apps}/${id}`, { key, body: { application: { slug: name, name } } });
    await edit(await put(application.id, "documented-edited"), 200);
    await edit(await put(application.id, "documented"), 409);
    await edit(await put(UNKNOWN_ID, "x"), 404, { example: true });
    await edit(await put(teamAppId, "by a viewer", viewer.key), 403, { example: true });
    await edit(await put(application.id, ""), 422);
    for (const action of ["archive", "unarchive"]) {
      const answers = answersOf(`POST /simple/applications/{application_id}/${action}`);
      await answers(await post(`${apps}/${application.id}/${action}`), 200);
      await answers(await post(`${apps}/${UNKNOWN_ID}/${action}`), 404, { example: true });
      await answers(await post(`${apps}/${teamAppId}/${action}`, undefined, viewer.key), 403, { example: true });
      await answers(await post(`${apps}/not-a-uuid/${action}`), 422);
    }
  });

  it("the variant calls: 200s (found and not), 403, 404, 409, 422", async () => {
    const add = answersOf("POST /applications/variants");
    const { application_variant: variant } = (await add(await addVariant(appId, "documented"), 200)) as {
      application_variant: { id: string };
    };
    await add(await addVariant(appId, "documented"), 409);
    await add(await addVariant(UNKNOWN_ID, "x"), 404, { example: true });
    await add(await addVariant(teamAppId, "x", viewer.key), 403, { example: true });
    await add(await addVariant(appId, "not a slug"), 422);
    const query = answersOf("POST /applications/variants/query");
    await query(await post(`${variants}/query`, { application_refs: [{ id: appId }] }), 200);
    await query(await post(`${variants}/query`, { application_refs: [{}] }), 422);
    const read = answersOf("GET /applications/variants/{variant_id}");
    await read(await send("GET", `${variants}/${variant.id}`, { key: account.key }), 200);
    await read(await send("GET", `${variants}/${UNKNOWN_ID}`, { key: account.key }), 200, { example: true });
    await read(await send("GET", `${variants}/x`, { key: account.key }), 422);
    for (const action of ["archive", "unarchive"]) {
      const answers = answersOf(`POST /applications/variants/{variant_id}/${action}`);
      await answers(await post(`${variants}/${variant.id}/${action}`), 200);
      await answers(await post(`${variants}/${UNKNOWN_ID}/${action}`), 404, { example: true });
      await answers(await post(`${variants}/${mainVariantId}/${action}`, undefined, viewer.key), 403, { example: true });
      await answers(await post(`${variants}/x/${action}`), 422);
    }
  });
});

describe("accounts answer as documented", () => {
  /** The owner of an organization made through the API, and of a workspace made in it. */
  let owner: Account;
  let organizationId: string;
  let workspaceId: string;
  /** The workspace's default project, which its invitations name. */
  let projectId: string;
  /** A new user who joined that organization as an editor by invitation, with the first key accepting gave them. */
  let editor: Joined;

  interface Invitation {
    email: string;
    token: string;
    project_id: string;
  }
  interface Joined {
    email: string;
    userId: string;
    key: string;
  }

  let emails = 0;
  const newEmail = () => `invitee${++emails}-${crypto.randomUUID().slice(0, 8)}@example.com`;
  const emailOf = (account: Account) => `${account.username}@example.com`;
  const asKey = (key: string) => (key === "" ? "" : `ApiKey ${key}`);

  const inviteTo = (email: string, role: string, key = owner.key) =>
    send("POST", `/organizations/${organizationId}/workspaces/${workspaceId}/invite`, { key, body: [{ email, roles: [role] }] });
  const resend = (email: string, key = owner.key) =>
    send("POST", `/organizations/${organizationId}/workspaces/${workspaceId}/invite/resend`, { key, body: { email } });
  /** Accepting, with `key` ("": an empty Authorization header, as the client sends without one). */
  const accept = (invitation: Invitation, key = "", token = invitation.token, project = invitation.project_id) =>
    send("POST", `/organizations/${organizationId}/workspaces/${workspaceId}/invite/accept?project_id=${project}`, {
      authorization: asKey(key),
      body: { token },
    });

  /** A new email invited in `role` and accepted with the token alone. */
  async function join(role: string): Promise<Joined> {
    const email = newEmail();
    const invitation = await expectJson<Invitation>(await inviteTo(email, role));
    const joined = await expectJson<{ user_id: string; api_key: string }>(await accept(invitation));
    return { email, userId: joined.user_id, key: joined.api_key };
  }

  beforeAll(async () => {
    owner = await createAccount();
    const body = { name: `documented ${crypto.randomUUID().slice(0, 8)}`, owner: owner.userId };
    organizationId = (await expectJson<{ id: string }>(await send("POST", "/organizations", { key: owner.key, body }))).id;
    const workspace = await expectJson<{ id: string; default_project_id: string }>(
      await send("POST", `/organizations/${organizationId}/workspaces`, { key: owner.key, body: { name: "Production" } }),
    );
    [workspaceId, projectId] = [workspace.id, workspace.default_project_id];
    editor = await join("editor");
  });

  it("POST /organizations: 200 (owner by id or email), 403 for a read-only key, 422 for another owner", async () => {
    const answers = answersOf("POST /organizations");
    const create = (body: unknown, key = owner.key) => send("POST", "/organizations", { key, body });
    expect(
      await answers(await create({ name: "by email", owner: emailOf(owner), description: "d", type: "team" }), 200),
    ).toMatchObject({
      name: "by email",
      description: "d",
      type: "team",
      owner: owner.userId,
      is_personal: false,
      role: "owner",
      members: [owner.userId],
    });
    const readOnly = await issueKey(owner.userId, owner.projectId, { readOnly: true });
    await answers(await create({ name: "read only", owner: owner.userId }, readOnly), 403, { example: true });
    await answers(await create({ name: "for another", owner: editor.userId }), 422);
    await answers(await create({ owner: owner.userId }), 422);
  });

  it("GET /organizations, /organizations/own and /organizations/{org_id}: 200 for the owner and an editor; 404, 422", async () => {
    const read = (path: string, key = owner.key) => send("GET", path, { key });
    const list = answersOf("GET /organizations");
    expect(await list(await read("/organizations"), 200)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: owner.organizationId, is_personal: true, role: "owner" }),
        expect.objectContaining({ id: organizationId, role: "owner", members: [owner.userId, editor.userId] }),
      ]),
    );
    expect(await list(await read("/organizations", editor.key), 200)).toEqual([
      expect.objectContaining({ id: organizationId, role: "editor", owner: owner.userId }),
    ]);
    const own = answersOf("GET /organizations/own");
    expect(await own(await read("/organizations/own"), 200)).toEqual({ id: owner.organizationId, name: owner.username });
    // Joined by invitation, with no personal organization: the key's.
    expect(await own(await read("/organizations/own", editor.key), 200)).toMatchObject({ id: organizationId });
    const details = answersOf("GET /organizations/{org_id}");
    await inviteTo(newEmail(), "viewer");
    const asOwner = (await details(await read(`/organizations/${organizationId}`), 200)) as {
      workspaces: { id: string; members: unknown[] }[];
      invitations: unknown[];
    };
    expect(asOwner.workspaces.map(({ id }) => id)).toContain(workspaceId);
    expect(asOwner.workspaces[0].members).toHaveLength(2);
    expect(asOwner.invitations).toEqual(
      expect.arrayContaining([expect.objectContaining({ role: "viewer", workspace_id: workspaceId })]),
    );
    expect(await details(await read(`/organizations/${organizationId}`, editor.key), 200)).toMatchObject({
      role: "editor",
      invitations: [],
    });
    await details(await read(`/organizations/${UNKNOWN_ID}`), 404, { example: true });
    await details(await read(`/organizations/${owner.organizationId}`, editor.key), 404, { example: true });
    await details(await read("/organizations/nope"), 422);
  });

  it("PUT /organizations/{org_id}: 200 for an owner, 403 for an editor, 404, 422", async () => {
    const answers = answersOf("PUT /organizations/{org_id}");
    const update = (id: string, body: unknown, key = owner.key) => send("PUT", `/organizations/${id}`, { key, body });
    const updated = await answers(await update(organizationId, { description: "documented", updated_at: "ignored" }), 200);
    expect(updated).toMatchObject({ id: organizationId, description: "documented", role: "owner" });
    await answers(await update(organizationId, { name: "by an editor" }, editor.key), 403, { example: true });
    await answers(await update(UNKNOWN_ID, { name: "nowhere" }), 404, { example: true });
    await answers(await update(organizationId, { name: "" }), 422);
  });

  it("POST /organizations/{org_id}/workspaces and PUT .../{workspace_id}: 200, 403 for an editor, 404, 422", async () => {
    const create = answersOf("POST /organizations/{org_id}/workspaces");
    const post = (id: string, body: unknown, key = owner.key) => send("POST", `/organizations/${id}/workspaces`, { key, body });
    const made = (await create(await post(organizationId, { name: "Staging", description: "tries" }), 200)) as {
      id: string;
      members: { user: { id: string }; roles: { role_name: string }[] }[];
    };
    expect(made).toMatchObject({ name: "Staging", description: "tries", organization: organizationId });
    expect(made.members.map(({ user, roles }) => [user.id, roles[0].role_name])).toEqual([
      [owner.userId, "owner"],
      [editor.userId, "editor"],
    ]);
    await create(await post(organizationId, { name: "by an editor" }, editor.key), 403, { example: true });
    await create(await post(UNKNOWN_ID, { name: "nowhere" }), 404, { example: true });
    await create(await post(organizationId, {}), 422);

    const update = answersOf("PUT /organizations/{org_id}/workspaces/{workspace_id}");
    const put = (id: string, body: unknown, key = owner.key, org = organizationId) =>
      send("PUT", `/organizations/${org}/workspaces/${id}`, { key, body });
    expect(await update(await put(made.id, { name: "Staging 2" }), 200)).toMatchObject({ id: made.id, name: "Staging 2" });
    await update(await put(made.id, { name: "by an editor" }, editor.key), 403, { example: true });
    // A workspace of another organization than the one named.
    await update(await put(owner.workspaceId, { name: "elsewhere" }), 404, { example: true });
    await update(await put("nope", { name: "x" }), 422);
  });

  it("invite, resend and accept a new email with no key: 200 each, the key answered once; 404, 409, 410 after", async () => {
    const invited = answersOf("POST /organizations/{org_id}/workspaces/{workspace_id}/invite");
    const resent = answersOf("POST /organizations/{org_id}/workspaces/{workspace_id}/invite/resend");
    const accepted = answersOf(ACCEPT);
    const email = newEmail();
    const first = (await invited(await inviteTo(email, "deployment_manager"), 200)) as Invitation;
    expect(first).toMatchObject({ email, role: "deployment_manager", workspace_id: workspaceId, project_id: projectId });
    const second = (await resent(await resend(email), 200)) as Invitation;
    expect(second).toMatchObject({ email, role: "deployment_manager", project_id: projectId });
    expect(second.token).not.toBe(first.token);
    await accepted(await accept(first), 410, { example: true });
    await accepted(await accept(second, "", "not the token"), 404, { example: true });
    await accepted(await accept(second, "", second.token, owner.projectId), 404, { example: true });
    const joined = (await accepted(await accept(second), 200)) as { user_id: string; api_key: string };
    expect(joined).toMatchObject({ email, role: "deployment_manager", project_id: projectId });
    expect(await (await send("GET", "/profile", { key: joined.api_key })).json()).toMatchObject({ id: joined.user_id, email });
    await accepted(await accept(second), 409, { example: true });
    await invited(await inviteTo(email, "viewer"), 409, { example: true });
    await resent(await resend(newEmail()), 404, { example: true });
    await invited(await inviteTo(newEmail(), "viewer", editor.key), 403, { example: true });
    await resent(await resend(email, editor.key), 403, { example: true });
    await invited(
      await send("POST", `/organizations/${UNKNOWN_ID}/workspaces/${workspaceId}/invite`, {
        key: owner.key,
        body: [{ email: newEmail(), roles: ["viewer"] }],
      }),
      404,
      { example: true },
    );
    await invited(
      await send("POST", `/organizations/${organizationId}/workspaces/${workspaceId}/invite`, {
        key: owner.key,
        body: { email: newEmail(), roles: ["viewer"] },
      }),
      422,
    );
    await resent(await resend("not an email"), 422);
  });

  it("accept for an email that has a user: 401 without a key, 403 with another's, 200 with theirs; 410 once expired, 422", async () => {
    const accepted = answersOf(ACCEPT);
    const existing = await createAccount();
    const invitation = await expectJson<Invitation>(await inviteTo(emailOf(existing), "viewer"));
    await accepted(await accept(invitation), 401, { example: true });
    await accepted(await accept(invitation, editor.key), 403, { example: true });
    const joined = await accepted(await accept(invitation, existing.key), 200);
    expect(joined).toEqual({
      user_id: existing.userId,
      email: emailOf(existing),
      role: "viewer",
      organization_id: organizationId,
      workspace_id: workspaceId,
      project_id: projectId,
    });
    const expiring = await expectJson<Invitation>(await inviteTo(newEmail(), "viewer"));
    await databaseOf(organizationId)
      .prepare("UPDATE invitations SET expires_at = '2020-01-01T00:00:00.000Z' WHERE email = ?")
      .bind(expiring.email)
      .run();
    await accepted(await accept(expiring), 410, { example: true });
    await accepted(await accept(expiring, "", ""), 422);
    await accepted(await accept(expiring, "", expiring.token, "nope"), 422);
  });

  it("GET, POST, DELETE /keys and GET /keys/{key_prefix}/validate: 200s, a key deleted fails at once; 403, 404, 422", async () => {
    const holder = await createAccount();
    const keys = (key = holder.key) => send("GET", "/keys", { key });
    const create = (query: string, key = holder.key) => send("POST", `/keys?${query}`, { key });
    const validate = (prefix: string, key = holder.key) => send("GET", `/keys/${prefix}/validate`, { key });
    const remove = (prefix: string, key = holder.key) => send("DELETE", `/keys/${prefix}`, { key });
    const [list, post, valid, removed] = [
      answersOf("GET /keys"),
      answersOf("POST /keys"),
      answersOf("GET /keys/{key_prefix}/validate"),
      answersOf("DELETE /keys/{key_prefix}"),
    ];
    expect(await list(await keys(), 200)).toEqual([
      expect.objectContaining({
        prefix: holder.key.slice(0, 8),
        last_used_at: null,
        expiration_date: null,
        read_only: false,
        project_id: holder.projectId,
        workspace_id: holder.workspaceId,
        organization_id: holder.organizationId,
      }),
    ]);
    const made = (await post(await create(`workspace_id=${holder.workspaceId}`), 200)) as string;
    expect(made).toMatch(/^[A-Za-z0-9]{8}\.[0-9a-f]{64}$/);
    const expires = new Date(Date.now() + 86_400_000).toISOString();
    const query = `workspace_id=${holder.workspaceId}&read_only=true&expiration_date=${encodeURIComponent(expires)}`;
    const readOnly = (await post(await create(query), 200)) as string;
    expect(await list(await keys(made), 200)).toEqual([
      expect.objectContaining({ prefix: holder.key.slice(0, 8) }),
      expect.objectContaining({ prefix: made.slice(0, 8), read_only: false, expiration_date: null }),
      expect.objectContaining({ prefix: readOnly.slice(0, 8), read_only: true, expiration_date: expires }),
    ]);
    await post(await create(`workspace_id=${holder.workspaceId}`, readOnly), 403, { example: true });
    await post(await create(`workspace_id=${workspaceId}`), 404, { example: true });
    await post(await create(`workspace_id=${holder.workspaceId}&expiration_date=2020-01-01T00:00:00Z`), 422);

    await valid(await validate(made.slice(0, 8)), 200, { example: true });
    expect(await (await validate(made.slice(0, 8))).json()).toBe(true);
    await removed(await remove(made.slice(0, 8), readOnly), 403, { example: true });
    expect(await removed(await remove(made.slice(0, 8)), 200)).toEqual({
      prefix: made.slice(0, 8),
      revoked_at: expect.any(String),
    });
    expect(await valid(await validate(made.slice(0, 8)), 200, { example: true })).toBe(false);
    await list(await keys(made), 401, { example: true });
    await removed(await remove(made.slice(0, 8)), 404, { example: true });
    await removed(await remove(owner.key.slice(0, 8)), 404, { example: true });
    await valid(await validate("a".repeat(65)), 422);
  });

  it("GET /profile: 200, also with the caller's own user_id; 404 for another's, 422", async () => {
    const answers = answersOf("GET /profile");
    const profile = (query = "") => send("GET", `/profile${query}`, { key: editor.key });
    const me = await answers(await profile(), 200);
    expect(me).toMatchObject({ id: editor.userId, email: editor.email });
    expect(await answers(await profile(`?user_id=${editor.userId}`), 200)).toEqual(me);
    await answers(await profile(`?user_id=${owner.userId}`), 404, { example: true });
    await answers(await profile("?user_id=nope"), 422);
  });

  it("GET /workspaces/roles and /workspaces/permissions: 200, exactly as documented, for any role", async () => {
    const roles = await answersOf("GET /workspaces/roles")(await send("GET", "/workspaces/roles", { key: editor.key }), 200, {
      example: true,
    });
    expect((roles as { role_name: string }[]).map(({ role_name }) => role_name)).toEqual([
      "owner",
      "workspace_admin",
      "editor",
      "deployment_manager",
      "evaluator",
      "viewer",
    ]);
    await answersOf("GET /workspaces/permissions")(await send("GET", "/workspaces/permissions", { key: editor.key }), 200, {
      example: true,
    });
  });

  it("POST and DELETE /workspaces/{workspace_id}/roles, DELETE .../users: 200; 403 for an editor, 404, 409 for the last owner, 422", async () => {
    const member = await join("viewer");
    const assign = answersOf("POST /workspaces/{workspace_id}/roles");
    const unassign = answersOf("DELETE /workspaces/{workspace_id}/roles");
    const removal = answersOf("DELETE /workspaces/{workspace_id}/users");
    const post = (email: string, role: string, key = owner.key, org = organizationId) =>
      send("POST", `/workspaces/${workspaceId}/roles`, { key, body: { email, organization_id: org, role } });
    const unpost = (email: string, role: string, key = owner.key) =>
      send(
        "DELETE",
        `/workspaces/${workspaceId}/roles?email=${encodeURIComponent(email)}&org_id=${organizationId}&role=${role}`,
        {
          key,
        },
      );
    const remove = (email: string, key = owner.key, org = organizationId) =>
      send("DELETE", `/workspaces/${workspaceId}/users?email=${encodeURIComponent(email)}&org_id=${org}`, { key });

    await assign(await post(member.email, "deployment_manager"), 200, { example: true });
    expect(await unassign(await unpost(member.email, "deployment_manager"), 200)).toEqual({
      id: member.userId,
      email: member.email,
      username: expect.any(String),
      role: "viewer",
    });
    // Another role than theirs: nothing changes, still a 200.
    expect(await unassign(await unpost(member.email, "editor"), 200)).toMatchObject({ role: "viewer" });
    await assign(await post(member.email, "admin"), 200, { example: true });

    await assign(await post(member.email, "viewer", editor.key), 403, { example: true });
    await unassign(await unpost(member.email, "workspace_admin", editor.key), 403, { example: true });
    await removal(await remove(member.email, editor.key), 403, { example: true });
    await assign(await post(newEmail(), "viewer"), 404, { example: true });
    await assign(await post(member.email, "viewer", owner.key, owner.organizationId), 404, { example: true });
    await unassign(await unpost(newEmail(), "viewer"), 404, { example: true });
    await removal(await remove(member.email, owner.key, UNKNOWN_ID), 404, { example: true });
    await assign(await post(emailOf(owner), "viewer"), 409, { example: true });
    await unassign(await unpost(emailOf(owner), "owner"), 409, { example: true });
    await removal(await remove(emailOf(owner)), 409, { example: true });
    await assign(await post(member.email, "superuser"), 422);
    await unassign(await unpost("not an email", "viewer"), 422);
    await removal(await send("DELETE", `/workspaces/${workspaceId}/users?org_id=${organizationId}`, { key: owner.key }), 422);

    const left = (await removal(await remove(member.email), 200)) as { id: string; members: { user: { id: string } }[] };
    expect(left.id).toBe(workspaceId);
    expect(left.members.map(({ user }) => user.id)).toEqual(expect.arrayContaining([owner.userId, editor.userId]));
    expect(left.members.map(({ user }) => user.id)).not.toContain(member.userId);
    // Removed, and their keys for the organization's projects revoked in the same transaction.
    await answersOf("GET /keys")(await send("GET", "/keys", { key: member.key }), 401, { example: true });
  });
});

describe("other responses answer as documented", () => {
  it("/health", async () => {
    await expectConforms(await send("GET", "/health"), documentedResponse("get", "/health", 200), { example: true });
  });

  it("404 for an unknown path and 405 for another method, as the shared responses", async () => {
    await expectConforms(await send("GET", "/nowhere"), "/components/responses/NotFound", { example: true });
    const wrongMethod = await send("PUT", "/apps", { key: account.key });
    expect(wrongMethod.status).toBe(405);
    await expectConforms(wrongMethod, "/components/responses/MethodNotAllowed", { example: true });
  });
});
