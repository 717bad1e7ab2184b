import { describe, expect, inject, it } from "vitest";
import { send } from "./fixtures";
import before from "./fixtures/openapi-before.json";

/*
 * The document the Worker serves is the one its route declarations make (src/cli/build-assets.ts writes it to the
 * static assets), and it keeps everything the hand-written document of before the declarations had
 * (fixtures/openapi-before.json, built from that code): every operation with its parameters, body, responses,
 * examples and tag, the webhooks' payloads and the components. Allowed differences: the order of `paths`, which is now
 * the router's order, and of `components/schemas`; additions (the operations declared since, and what later issues added
 * to those of before); and the changes CHANGED lists, each with its reason. Nothing else of before may be lost or changed.
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

  it("keeps every operation of the document before the declarations, each whole but for additions", () => {
    const now = operations(openApiDocument(""));
    const then = operations(before as unknown as Document);
    expect(Object.keys(now)).toEqual(expect.arrayContaining(Object.keys(then)));
    expect(Object.keys(then)).toHaveLength(58);
    for (const [operation, described] of Object.entries(then)) {
      expect(lost(now[operation], described, operation), operation).toEqual([]);
    }
  });

  it("keeps the info, tags, servers, security, webhooks' payloads and every component, but for additions", () => {
    const { paths: _now, ...now } = openApiDocument("");
    const { paths: _then, ...then } = before as unknown as Document;
    expect(lost(now, then, "")).toEqual([]);
  });
});

/** What was changed on purpose since the document of before, where (as `lost` names it), and why. */
const ARCHIVED_NOT_DEPLOYED = "issue 25: an archived variant is not deployed again (409), on every deploy";
const DRY_RUN = "issue 34: the answer, or with ?dry_run=true a DryRun (one of the two)";
const LINE_BREAKS = "issue 38: U+2028 and U+2029 refused in names as line breaks";
const PROTECTED_409 = "issue 34: also a protected environment's 409, whose detail is an object (Error or CodedConflictError)";
const RENAME_PROTECTED =
  "issue 38: a rename changes what a protected environment answers: also its 409 (was AppNameTaken's alone)";
const STREAMED = "issue 38: the description says a long history is read in pages, one round trip each";
const CHANGED: Record<string, string> = {
  "GET /apps/{app_id}/revisions/{environment_name}/description": STREAMED,
  "GET /variants/{variant_id}/revisions/description": STREAMED,
  "POST /variants/configs/deploy/responses/409/description": ARCHIVED_NOT_DEPLOYED,
  "POST /configs/deployment/{deployment_revision_id}/revert/responses/409/description": ARCHIVED_NOT_DEPLOYED,
  "POST /environments/deploy/responses/409": `${ARCHIVED_NOT_DEPLOYED} (before: the Idempotency-Key's 409 alone)`,
  "POST /configs/responses/409":
    "issue 25: a save to an archived config's name is a 409 (before: the Idempotency-Key's 409 alone)",
  "/components/schemas/CreateWebhook/properties/events/maxItems": "issue 25: more event types, each subscribed once",
  "/components/schemas/UpdateWebhook/properties/events/maxItems": "issue 25: more event types, each subscribed once",
  "/components/parameters/D1Bookmark/description":
    "issue 26: a bookmark per database of the pool (`SHARD_0:<bookmark>`, comma-separated)",
  "/components/headers/D1Bookmark/description":
    "issue 26: a bookmark per database of the pool (`SHARD_0:<bookmark>`, comma-separated)",
  "/components/responses/ServiceUnavailable/description":
    "issue 26: also a write to an organization being moved between databases (Retry-After: 30)",
  "/components/responses/InvitationUnauthorized/content/application/json/examples/invitationNeedsInviteeKey":
    "issue 32: mail needs PUBLIC_BASE_URL too (the accept link's origin), which the message names",
  "/components/responses/TooManyRequests/description": "issue 32: also keyless invitation accepts, limited per client address",
  "POST /variants/configs/deploy/responses/200/content/application/json/schema": DRY_RUN,
  "POST /environments/deploy/responses/200/content/application/json/schema": DRY_RUN,
  "POST /configs/deployment/{deployment_revision_id}/revert/responses/200/content/application/json/schema": DRY_RUN,
  "POST /variants/configs/deploy/responses/409/content/application/json/schema": PROTECTED_409,
  "POST /configs/deployment/{deployment_revision_id}/revert/responses/409/content/application/json/schema": PROTECTED_409,
  "PATCH /apps/{app_id}/responses/409": RENAME_PROTECTED,
  "DELETE /apps/{app_id}/responses/200": "issue 38: null, or with ?dry_run=true a DeleteAppDryRun (one of the two)",
  "POST /configs/responses/200": "issue 38: null, or with ?dry_run=true a SaveConfigDryRun (one of the two)",
  "DELETE /variants/{variant_id}/responses/200": "issue 38: null, or with ?dry_run=true a RemoveVariantDryRun (one of the two)",
  "DELETE /webhooks/{webhook_id}/responses/200": "issue 38: null, or with ?dry_run=true a DeleteWebhookDryRun (one of the two)",
  "DELETE /keys/{key_prefix}/responses/200":
    "issue 38: the key revoked, or with ?dry_run=true a DeleteApiKeyDryRun (one of the two)",
  "DELETE /workspaces/{workspace_id}/roles/responses/200":
    "issue 38: the member, or with ?dry_run=true a MemberDryRun (one of the two)",
  "DELETE /workspaces/{workspace_id}/users/responses/200":
    "issue 38: the workspace, or with ?dry_run=true a MemberDryRun (one of the two)",
  "/components/schemas/CreateApp/properties/app_name/description": LINE_BREAKS,
  "/components/schemas/UpdateApp/properties/app_name/description": LINE_BREAKS,
  "GET /apps/{app_id}/revisions/{environment_name}/parameters/path environment_name/description": LINE_BREAKS,
  "GET /apps/{app_id}/revisions/{environment_name}/parameters/path environment_name/schema/description": LINE_BREAKS,
  "/components/headers/ETag/description": "issue 41: the environment's ETag names the split running there too",
  "/components/parameters/IfNoneMatch/description": "issue 41: the config reads answer an ETag and 304 too",
};

/**
 * What `now` lost or changed of `then`, as the places where (`at` and below), CHANGED's aside: an object must keep
 * every key of before, each kept in turn; a list every item (a value as it was, an object kept by some item); anything
 * else be as it was.
 */
function lost(now: unknown, then: unknown, at: string): string[] {
  if (at in CHANGED) return [];
  if (Array.isArray(then)) {
    if (!Array.isArray(now)) return [at];
    return then.flatMap((item, i) =>
      now.some((candidate) => lost(candidate, item, `${at}/${i}`).length === 0) ? [] : [`${at}/${i}`],
    );
  }
  if (typeof then === "object" && then !== null) {
    if (typeof now !== "object" || now === null || Array.isArray(now)) return [at];
    return Object.entries(then).flatMap(([key, value]) =>
      key in now ? lost((now as Record<string, unknown>)[key], value, `${at}/${key}`) : [`${at}/${key}`],
    );
  }
  return Object.is(now, then) ? [] : [at];
}
