import { describe, expect, inject, it } from "vitest";
import { send } from "./fixtures";
import before from "./fixtures/openapi-before.json";

/*
 * The document the Worker serves is the one its route declarations make (src/cli/build-assets.ts writes it to the
 * static assets), and it keeps everything the hand-written document of before the declarations had
 * (fixtures/openapi-before.json, built from that code): every operation with its parameters, body, responses,
 * examples and tag, the webhooks' payloads and the components. Allowed differences: the order of `paths`, which is now
 * the router's order (Swagger UI groups operations by tag, whose order is unchanged); and, since, what issue 25 added on
 * purpose: today's SDK's operations, their tags and components, and the commit message of the legacy commits and revision
 * reads (`commit_message`, which the document before did not have: compared without it).
 */

type Document = { paths: Record<string, Record<string, unknown>> } & Record<string, unknown>;

declare module "vitest" {
  interface ProvidedContext {
    /** The document the declarations make under BASE_PATH "" and "/api", built in Node (test/vitest.config.ts). */
    openApiDocuments: Record<string, Document>;
  }
}
/** Today's SDK's operations (docs/CURRENT-SDK-API.md), their tags and components: added by issue 25. */
const ADDED_OPERATIONS = [
  "POST /applications/revisions/retrieve",
  "POST /applications/revisions/commit",
  "POST /applications/revisions/log",
  "POST /applications/revisions/deploy",
  "POST /workflows/revisions/retrieve",
  "POST /simple/environments/query",
];
const ADDED_TAGS = ["Application revisions", "Workflow revisions", "Simple environments"];

/** The value without `commit_message` anywhere (a property, an example's key, a required name): what it was before. */
function withoutCommitMessage(value: unknown): unknown {
  if (Array.isArray(value)) return value.filter((item) => item !== "commit_message").map(withoutCommitMessage);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== "commit_message")
      .map(([key, item]) => [key, withoutCommitMessage(item)]),
  );
}

// The declarations' text is not in the Worker (wrangler.toml [define]), so their document is built in Node.
const openApiDocument = (basePath: string) => inject("openApiDocuments")[basePath];
const METHODS = ["get", "put", "post", "patch", "delete"];

/** Every operation as "METHOD /path", with its path's parameters beside its own, parameters keyed by place and name. */
function operations(document: Document) {
  return Object.fromEntries(
    Object.entries(document.paths).flatMap(([path, item]) =>
      METHODS.filter((method) => method in item).map((method) => {
        const { parameters = [], ...operation } = item[method] as {
          parameters?: { $ref?: string; in?: string; name?: string }[];
        };
        const all = [...((item.parameters ?? []) as typeof parameters), ...parameters];
        const keyed = Object.fromEntries(
          all.map((parameter) => [parameter.$ref ?? `${parameter.in} ${parameter.name}`, parameter]),
        );
        return [`${method.toUpperCase()} ${path}`, { ...operation, parameters: keyed }];
      }),
    ),
  );
}

describe("the OpenAPI document", () => {
  it.each(["", "/api"])("served under %s is what the route declarations make", async (basePath) => {
    const response = await send("GET", `${basePath}/openapi.json`, { bindings: { BASE_PATH: basePath } });
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toMatch(/^application\/json/);
    expect(await response.json()).toEqual(openApiDocument(basePath));
  });

  it("keeps every operation of the document before the declarations, each whole, and adds only today's SDK's", () => {
    const now = operations(withoutCommitMessage(openApiDocument("")) as Document);
    const then = operations(before as unknown as Document);
    expect(Object.keys(now).sort()).toEqual([...Object.keys(then), ...ADDED_OPERATIONS].sort());
    expect(Object.keys(now)).toHaveLength(58 + ADDED_OPERATIONS.length);
    for (const [operation, described] of Object.entries(then)) {
      expect(now[operation], operation).toEqual(described);
    }
    for (const operation of ADDED_OPERATIONS) {
      expect((now[operation] as unknown as { tags: string[] }).tags, operation).toEqual([expect.toBeOneOf(ADDED_TAGS)]);
    }
  });

  it("keeps the info, tags, servers, security, webhooks' payloads and every component", () => {
    type Parts = { tags: { name: string }[]; components: Record<string, Record<string, unknown>> } & Record<string, unknown>;
    const { paths: _now, tags, components, ...now } = withoutCommitMessage(openApiDocument("")) as Document & Parts;
    const { paths: _then, tags: tagsThen, components: componentsThen, ...then } = before as unknown as Document & Parts;
    expect(now).toEqual(then);
    expect(tags.filter(({ name }) => !ADDED_TAGS.includes(name))).toEqual(tagsThen);
    for (const [kind, named] of Object.entries(componentsThen)) {
      for (const [name, component] of Object.entries(named)) expect(components[kind][name], `${kind}/${name}`).toEqual(component);
    }
  });
});
