import { describe, expect, inject, it } from "vitest";
import { send } from "./fixtures";
import before from "./fixtures/openapi-before.json";

/*
 * The document the Worker serves is the one its route declarations make (src/cli/build-assets.ts writes it to the
 * static assets), and it keeps everything the hand-written document of before the declarations had
 * (fixtures/openapi-before.json, built from that code): every operation with its parameters, body, responses,
 * examples and tag, the webhooks' payloads and the components. Allowed differences: none but the order of `paths`,
 * which is now the router's order (Swagger UI groups operations by tag, whose order is unchanged).
 */

type Document = { paths: Record<string, Record<string, unknown>> } & Record<string, unknown>;

declare module "vitest" {
  interface ProvidedContext {
    /** The document the declarations make under BASE_PATH "" and "/api", built in Node (test/vitest.config.ts). */
    openApiDocuments: Record<string, Document>;
  }
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

  it("keeps every operation of the document before the declarations, each whole, and nothing is added", () => {
    const now = openApiDocument("");
    const then = before as unknown as Document;
    expect(Object.keys(operations(now)).sort()).toEqual(Object.keys(operations(then)).sort());
    expect(Object.keys(operations(now))).toHaveLength(58);
    for (const [operation, described] of Object.entries(operations(then))) {
      expect(operations(now)[operation], operation).toEqual(described);
    }
  });

  it("keeps the info, tags, servers, security, webhooks' payloads and every component", () => {
    const { paths: _now, ...now } = openApiDocument("");
    const { paths: _then, ...then } = before as unknown as Document;
    expect(now).toEqual(then);
  });
});
