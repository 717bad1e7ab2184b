import * as z from "zod/mini";
import { generateApiKey, hashApiKey } from "../auth/api-keys";
import { CALLER_KEY } from "../db/buckets";
import { mergedOldestFirst, readAs, readOnEveryShard, writeAs } from "../http/d1-session";
import { dryRunQueryOf } from "../http/dry-run";
import { forbidden } from "../http/errors";
import { DEMO_ORGANIZATION_ID, DEMO_PROJECT_ID, DEMO_USER_ID, DEMO_WORKSPACE_ID, errorResponse } from "../http/openapi-parts";
import { requestBucket } from "../http/request-bucket";
import { route } from "../http/route";
import { workspaceNotFound } from "../workspaces/errors";
import { apiKeyNotFound, userNotFound } from "./errors";
import {
  ApiKeyListItem,
  CreateKeyQuery,
  DeleteApiKeyDryRun,
  DeletedApiKey,
  KeyPrefixParams,
  NewApiKey,
  Profile,
  ProfileQuery,
} from "./keys.schemas";
import { createApiKeyAsCaller, deleteApiKeyAsCaller, isLiveKeyOfCaller, listApiKeys, previewApiKeyDeletion } from "./keys.sql.ts";
import { fetchProfile } from "./profile.sql.ts";

const EVERY_ROLE = "Any role may: a member of any organization manages their own keys, and no one else's.";

/** The README's demo key, as its owner lists it. */
const demoKey = {
  prefix: "localdev",
  created_at: "2026-11-22T02:54:50.912Z",
  last_used_at: "2026-11-22T03:12:07.441Z",
  expiration_date: null,
  read_only: false,
  project_id: DEMO_PROJECT_ID,
  workspace_id: DEMO_WORKSPACE_ID,
  organization_id: DEMO_ORGANIZATION_ID,
} satisfies z.output<typeof ApiKeyListItem>;

const newKey = "k7Qm2PzX.5b1e0c9d8a7f6e5d4c3b2a190817263544536271809a8b7c6d5e4f3a2b1c0d9e";

/** Why the caller's key with a prefix was not deleted, as its error. */
const keyRefusal = (outcome: "not_found" | "forbidden") => (outcome === "forbidden" ? forbidden() : apiKeyNotFound());

/** The path parameter of the /keys/{key_prefix} routes below, with its documented example. */
const keyPrefixPath = { schema: KeyPrefixParams, examples: globalThis.DOCUMENTATION && { key_prefix: "localdev" } };

/** Routes under /keys: the caller's own API keys. */
export const keysRoutes = [
  route(
    {
      method: "get",
      path: "/keys",
      roundTrips: globalThis.ROUTE_FACTS && { everyShard: true, cases: [{ name: "GET /keys", path: "/keys", trips: 3 }] },
      auth: "key",
      doc: globalThis.DOCUMENTATION && {
        operationId: "listApiKeys",
        tag: "Keys",
        summary: "List the caller's API keys",
        description:
          "The caller's keys that are not deleted, expired ones included (so that they can be seen and " +
          "deleted), oldest first; never a key's secret, which is shown once, at creation, nor its hash. " +
          `\`last_used_at\` is recorded after the answer, at most once an hour. ${EVERY_ROLE} A read-only key may list.`,
        ok: { schema: z.array(ApiKeyListItem), description: "The caller's keys, oldest first", example: [demoKey] },
      },
    },
    async (c) => {
      // The caller's keys on every shard (a key lives with its project's organization), oldest first.
      const keys = mergedOldestFirst(await readOnEveryShard(c, listApiKeys), (key) => key.prefix);
      return c.json(keys, 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/keys",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "POST /keys", path: "/keys?workspace_id={org.workspaceId}", trips: 1 }],
      },
      auth: "key",
      query: {
        schema: CreateKeyQuery,
        examples: globalThis.DOCUMENTATION && {
          workspace_id: DEMO_WORKSPACE_ID,
          read_only: "true",
          expiration_date: "2099-01-01T00:00:00Z",
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "createApiKey",
        tag: "Keys",
        summary: "Create an API key for a workspace's default project",
        description:
          "A new key of the caller's, for the default project of `workspace_id`, a workspace of an organization the " +
          "caller is a member of (else 404; the platform ignored `workspace_id`). The answer is the key itself, a JSON " +
          "string, shown this once: only its SHA-256 is kept, and it cannot be shown again. `read_only` and " +
          "`expiration_date` are optional, and new: the platform's client sends neither. A read-only key is refused " +
          `every write, and an expiring key stops working then. ${EVERY_ROLE} ` +
          "A read-only key makes no keys (403). No body; no Idempotency-Key: a retry makes another key.",
        ok: { schema: NewApiKey, description: "The new key, shown this once", example: newKey },
        errors: {
          403: errorResponse("The request's key is read-only: it makes no keys", forbidden()),
          404: errorResponse(
            "No such workspace in an organization the caller is a member of (not told apart)",
            workspaceNotFound(),
          ),
        },
      },
    },
    async (c) => {
      const { workspace_id, read_only, expiration_date } = c.req.valid("query");
      // The key's project is the workspace's default one: the prefix carries the workspace's bucket.
      const bucket = requestBucket(c, [workspace_id]);
      const { key, prefix } = generateApiKey(bucket);
      const request = { workspaceId: workspace_id, readOnly: read_only, expiresAt: expiration_date ?? null };
      const keyHash = await hashApiKey(key);
      const outcome = await writeAs(c, [{ bucket }], (db) => createApiKeyAsCaller(db, { ...request, prefix, keyHash }));
      if (outcome === "forbidden") throw forbidden();
      if (outcome === "not_found") throw workspaceNotFound();
      return c.json(key, 200);
    },
  ),
  route(
    {
      method: "delete",
      path: "/keys/{key_prefix}",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "DELETE /keys/{prefix}?dry_run=true", path: "/keys/{spareKeyPrefix}?dry_run=true", trips: 1 },
          { name: "DELETE /keys/{prefix}", path: "/keys/{spareKeyPrefix}", trips: 1 },
          { name: "DELETE /keys/{prefix}, unknown", path: "/keys/{unknownPrefix}", status: 404, trips: 1 },
        ],
      },
      auth: "key",
      params: keyPrefixPath,
      query: dryRunQueryOf("answer the key the delete would revoke"),
      doc: globalThis.DOCUMENTATION && {
        operationId: "deleteApiKey",
        tag: "Keys",
        summary: "Delete one of the caller's API keys",
        description:
          "Revokes the caller's live key with this prefix (the key sending the request too): it fails from the very " +
          `next request on. ${EVERY_ROLE} A read-only key deletes none (403).`,
        ok: {
          schema: z.union([DeletedApiKey, DeleteApiKeyDryRun]),
          description: "The key is revoked; with `?dry_run=true`, the key the delete would revoke",
          examples: {
            deleted: {
              summary: "Revoked",
              value: { prefix: "localdev", revoked_at: "2026-11-22T04:00:12.318Z" } satisfies z.output<typeof DeletedApiKey>,
            },
            dryRun: { summary: "?dry_run=true", value: { dry_run: true, kind: "delete", key: demoKey } },
          },
        },
        errors: {
          403: errorResponse("The request's key is read-only: it deletes no keys", forbidden()),
          404: errorResponse(
            "No live key of the caller's has this prefix: another user's, a deleted one, or none (not told apart)",
            apiKeyNotFound(),
          ),
        },
      },
    },
    async (c) => {
      const { key_prefix } = c.req.valid("param");
      if (c.req.valid("query").dry_run) {
        const preview = await writeAs(c, [{ prefix: key_prefix }], (db) => previewApiKeyDeletion(db, key_prefix));
        if (preview.outcome !== "preview") throw keyRefusal(preview.outcome);
        return c.json({ dry_run: true, kind: "delete", key: preview.key } as const, 200);
      }
      const deleted = await writeAs(c, [{ prefix: key_prefix }], (db) => deleteApiKeyAsCaller(db, key_prefix));
      if (deleted.outcome !== "done") throw keyRefusal(deleted.outcome);
      return c.json({ prefix: deleted.prefix, revoked_at: deleted.revokedAt }, 200);
    },
  ),
  route(
    {
      method: "get",
      path: "/keys/{key_prefix}/validate",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "GET /keys/{prefix}/validate", path: "/keys/{unknownPrefix}/validate", trips: 1 }],
      },
      auth: "key",
      params: keyPrefixPath,
      doc: globalThis.DOCUMENTATION && {
        operationId: "validateApiKey",
        tag: "Keys",
        summary: "Check whether a key prefix is one of the caller's live keys",
        description:
          "`true` only for a key of the caller's that is neither deleted nor expired; `false` for anything else, " +
          `another user's key included (the platform answered \`true\` whatever the prefix). ${EVERY_ROLE}`,
        ok: {
          schema: z.boolean(),
          description: "Whether the key is live",
          examples: {
            live: { summary: "A live key of the caller's", value: true },
            notLive: { summary: "Deleted, expired, another user's, or none", value: false },
          },
        },
      },
    },
    async (c) => {
      const live = await readAs(c, [{ prefix: c.req.valid("param").key_prefix }], (db) =>
        isLiveKeyOfCaller(db, c.req.valid("param").key_prefix),
      );
      return c.json(live, 200);
    },
  ),
];

/** GET /profile: the caller's own user, and nobody else's. */
export const profileRoutes = [
  route(
    {
      method: "get",
      path: "/profile",
      roundTrips: globalThis.ROUTE_FACTS && { cases: [{ name: "GET /profile", path: "/profile", trips: 1 }] },
      auth: "key",
      query: { schema: ProfileQuery, examples: globalThis.DOCUMENTATION && { user_id: DEMO_USER_ID } },
      doc: globalThis.DOCUMENTATION && {
        operationId: "fetchUserProfile",
        tag: "Profile",
        summary: "Read the caller's profile",
        description:
          "The key's user. `user_id` may name only that user: any other id is a 404 (the platform answered any " +
          "user's profile). Any role may.",
        ok: {
          schema: Profile,
          description: "The caller's user",
          example: {
            id: DEMO_USER_ID,
            username: "demo",
            email: "demo@example.com",
            created_at: "2026-11-22T02:54:50.912Z",
          } satisfies z.output<typeof Profile>,
        },
        errors: { 404: errorResponse("`user_id` is not the caller's own id", userNotFound()) },
      },
    },
    async (c) => {
      const profile = await readAs(c, [CALLER_KEY], (db) => fetchProfile(db));
      const asked = c.req.valid("query").user_id;
      if (asked !== undefined && asked !== profile.id) throw userNotFound();
      return c.json(profile, 200);
    },
  ),
];
