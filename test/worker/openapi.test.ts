import { env } from "cloudflare:workers";
import { Validator } from "@cfworker/json-schema";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import {
  type Account,
  BASE_URL,
  CreateAppBody,
  createAccount,
  createAppVia,
  deploy,
  EnvironmentRevisionsParams,
  getRevisions,
  postApp,
  send,
  withinOneWindow,
} from "./fixtures";
import { instrumentD1 } from "./instrumented-d1";

// Real responses, made through the Worker's fetch handler, are checked against the document the Worker serves, with
// a JSON Schema (2020-12) validator that runs here in workerd.
const DOCUMENT_URI = `${BASE_URL}/openapi.json`;
const REVISIONS = "/apps/{app_id}/revisions/{environment_name}";

let document: Record<string, unknown>;
let account: Account;
let appId: string;
beforeAll(async () => {
  const response = await send("GET", "/openapi.json");
  expect(response.status).toBe(200);
  document = await response.json();
  account = await createAccount();
  appId = await createAppVia(account.key, { app_name: "documented" });
});

afterEach(() => {
  vi.restoreAllMocks();
});

/** The real D1 binding, failing every round trip with an error D1 documents as transient. */
const unavailable = () => ({
  bindings: {
    DB: instrumentD1(env.DB, {
      beforeTrip: () => {
        throw new Error("D1_ERROR: Network connection lost.");
      },
    }).db,
  },
});

const escapePointer = (segment: string) => segment.replaceAll("~", "~0").replaceAll("/", "~1");

/** The value at a JSON pointer of the document. */
function at(pointer: string): unknown {
  return pointer
    .split("/")
    .slice(1)
    .map((part) => part.replaceAll("~1", "/").replaceAll("~0", "~"))
    .reduce<unknown>((value, key) => (value as Record<string, unknown> | undefined)?.[key], document);
}

/** What the schema at `pointer` finds wrong with `instance` (nothing: it is valid). */
function schemaErrors(pointer: string, instance: unknown) {
  const schema = at(pointer);
  expect(schema, `a schema at ${pointer}`).toBeTypeOf("object");
  // The schema as the root, beside the components its `$ref`s ("#/components/schemas/...") point to.
  const root = structuredClone({ ...(schema as object), $id: DOCUMENT_URI, components: document.components });
  return new Validator(root, "2020-12", false).validate(instance).errors;
}

/** Where the document describes this status of this operation (following a `$ref` to a shared response). */
function documentedResponse(method: string, path: string, status: number): string {
  const pointer = `/paths/${escapePointer(path)}/${method}/responses/${status}`;
  const documented = at(pointer) as { $ref?: string } | undefined;
  expect(documented, `${method.toUpperCase()} ${path} documents ${status}`).toBeDefined();
  return documented?.$ref?.slice(1) ?? pointer;
}

/**
 * Checks a real response against the documented one: every required header present, every header and the body
 * valid against their schemas. With `example`, the body must also be the documented example. Returns the body.
 */
async function expectConforms(response: Response, pointer: string, { example = false } = {}): Promise<unknown> {
  const headers = (at(`${pointer}/headers`) ?? {}) as Record<string, { required?: boolean }>;
  expect(Object.keys(headers)).toContain("X-Request-Id");
  for (const [name, header] of Object.entries(headers)) {
    const value = response.headers.get(name);
    if (header.required) expect(value, `${pointer}: header ${name}`).not.toBeNull();
    if (value !== null) expect(schemaErrors(`${pointer}/headers/${name}/schema`, value), `header ${name}`).toEqual([]);
  }
  expect(response.headers.get("Content-Type")).toMatch(/^application\/json/);
  const body = await response.json();
  expect(schemaErrors(`${pointer}/content/application~1json/schema`, body), JSON.stringify(body)).toEqual([]);
  if (example) expect(body).toEqual(at(`${pointer}/content/application~1json/example`));
  return body;
}

describe("GET /openapi.json", () => {
  it("serves an OpenAPI 3.1 document without a key, with both endpoints and /health", async () => {
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

  it("takes request bodies and path parameters from the validators' own zod schemas", () => {
    const { $schema, ...createApp } = z.toJSONSchema(CreateAppBody, { io: "input" });
    expect(at("/components/schemas/CreateApp")).toEqual(createApp);
    const parameters = at(`/paths/${escapePointer(REVISIONS)}/parameters`) as { name: string; schema: unknown }[];
    const params = z.toJSONSchema(EnvironmentRevisionsParams, { io: "input" }).properties ?? {};
    expect(Object.fromEntries(parameters.map(({ name, schema }) => [name, schema]))).toEqual(params);
  });

  it("documents the API key in the Authorization header, required everywhere but /health and /openapi.json", () => {
    expect(at("/components/securitySchemes/ApiKey")).toMatchObject({ type: "apiKey", in: "header", name: "Authorization" });
    expect(String(at("/components/securitySchemes/ApiKey/description"))).toMatch(/ApiKey <key>.*Bearer <key>.*bare key/);
    expect(document.security).toEqual([{ ApiKey: [] }]);
    expect(at("/paths/~1apps/post/security")).toBeUndefined();
    expect(at(`/paths/${escapePointer(REVISIONS)}/get/security`)).toBeUndefined();
    expect(at("/paths/~1health/get/security")).toEqual([]);
    expect(at("/paths/~1openapi.json/get/security")).toEqual([]);
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
    const visit = (value: unknown, pointer: string) => {
      if (value === null || typeof value !== "object") return;
      const node = value as Record<string, unknown>;
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
      for (const [key, child] of Object.entries(node))
        if (key !== "example" && key !== "examples") visit(child, `${pointer}/${escapePointer(key)}`);
    };
    visit(document, "");
    expect(checked).toEqual(
      expect.arrayContaining([
        "/paths/~1apps/post/requestBody/content/application~1json/examples/inKeyProject",
        "/paths/~1apps/post/requestBody/content/application~1json/examples/inOrganization",
        "/paths/~1apps/post/responses/200/content/application~1json/example",
        `/paths/${escapePointer(REVISIONS)}/parameters/0/example`,
        `/paths/${escapePointer(REVISIONS)}/parameters/1/example`,
        `/paths/${escapePointer(REVISIONS)}/get/responses/200/content/application~1json/example`,
        "/components/responses/Unauthorized/headers/WWW-Authenticate/example",
        "/components/responses/ValidationFailed/content/application~1json/example",
      ]),
    );
  });
});

describe("POST /apps answers as documented", () => {
  const documented = (status: number) => documentedResponse("post", "/apps", status);

  it("200 with the created app", async () => {
    const body = await expectConforms(await postApp(account.key, { app_name: "per the document" }), documented(200));
    expect(body).toMatchObject({ app_name: "per the document" });
  });

  it("401 with WWW-Authenticate", async () => {
    await expectConforms(await send("POST", "/apps", { body: { app_name: "x" } }), documented(401), { example: true });
  });

  it("403", async () => {
    const response = await postApp(account.key, { app_name: "x", organization_id: "01900000-0000-7000-8000-000000000000" });
    await expectConforms(response, documented(403), { example: true });
  });

  it("409", async () => {
    await expectConforms(await postApp(account.key, { app_name: "documented" }), documented(409), { example: true });
  });

  it("413 and 415", async () => {
    const tooLarge = await send("POST", "/apps", {
      key: account.key,
      rawBody: JSON.stringify({ app_name: "a".repeat(20_000) }),
      headers: { "Content-Type": "application/json" },
    });
    await expectConforms(tooLarge, documented(413), { example: true });
    const notJson = await send("POST", "/apps", {
      key: account.key,
      rawBody: "my-app",
      headers: { "Content-Type": "text/plain" },
    });
    await expectConforms(notJson, documented(415), { example: true });
  });

  it("422 for a missing field, a wrong type, and malformed JSON", async () => {
    await expectConforms(await postApp(account.key, {}), documented(422), { example: true });
    await expectConforms(await postApp(account.key, { app_name: 42, project_id: "nope" }), documented(422));
    const malformed = await send("POST", "/apps", {
      key: account.key,
      rawBody: '{"app_name":',
      headers: { "Content-Type": "application/json" },
    });
    await expectConforms(malformed, documented(422));
  });

  it("500", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    await env.DB.exec(
      "CREATE TRIGGER fail_documented BEFORE INSERT ON environments WHEN NEW.name = 'staging' BEGIN SELECT RAISE(ABORT, 'injected fault'); END",
    );
    try {
      await expectConforms(await postApp(account.key, { app_name: "fails" }), documented(500), { example: true });
    } finally {
      await env.DB.exec("DROP TRIGGER fail_documented");
    }
  });

  it("503 with Retry-After", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const response = await postApp(account.key, { app_name: "unavailable" }, unavailable());
    await expectConforms(response, documented(503), { example: true });
  });
});

describe("GET /apps/{app_id}/revisions/{environment_name} answers as documented", () => {
  const documented = (status: number) => documentedResponse("get", REVISIONS, status);

  it("200 before and after deployments", async () => {
    const before = await expectConforms(await getRevisions(account.key, appId, "staging"), documented(200));
    expect(before).toMatchObject({ revision: 0, revisions: [], deployed_app_variant_id: null });
    await deploy(appId, "staging", "main", account);
    await deploy(appId, "staging", "main", account);
    const after = await expectConforms(await getRevisions(account.key, appId, "staging"), documented(200));
    expect(after).toMatchObject({ revision: 2, deployed_variant_name: "app.main" });
  });

  it("401, 404 and 422", async () => {
    await expectConforms(await send("GET", `/apps/${appId}/revisions/staging`), documented(401), { example: true });
    await expectConforms(await getRevisions(account.key, appId, "qa"), documented(404), { example: true });
    await expectConforms(await getRevisions(account.key, "not-a-uuid", "staging"), documented(422));
  });

  it("500", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    await env.DB.exec("ALTER TABLE environment_revisions RENAME TO environment_revisions_gone");
    try {
      await expectConforms(await getRevisions(account.key, appId, "staging"), documented(500), { example: true });
    } finally {
      await env.DB.exec("ALTER TABLE environment_revisions_gone RENAME TO environment_revisions");
    }
  });

  it("503 with Retry-After", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const response = await getRevisions(account.key, appId, "staging", unavailable());
    await expectConforms(response, documented(503), { example: true });
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
    await expectConforms(responses[5], documented(429), { example: true });
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
