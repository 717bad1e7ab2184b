import { Hono } from "hono";
import { generateApiKey, hashApiKey } from "../auth/api-keys";
import { requireApiKey } from "../auth/require-api-key";
import { createApiKeyAsCaller, deleteApiKeyAsCaller, isLiveKeyOfCaller, listApiKeys } from "../db/keys";
import { fetchProfile } from "../db/profile";
import { readAs, writeAs } from "../http/d1-session";
import { apiKeyNotFound, forbidden, userNotFound, workspaceNotFound } from "../http/errors";
import { validate } from "../http/validation";
import type { AppEnv } from "../types";
import { CreateKeyQuery, KeyPrefixParams, ProfileQuery } from "./keys.schemas";

/** Routes under /keys: the caller's own API keys. */
export const keysRoutes = new Hono<AppEnv>()
  .get("/", requireApiKey, async (c) => {
    const keys = await readAs(c, (db) => listApiKeys(db));
    return c.json(keys, 200);
  })
  .post("/", requireApiKey, validate("query", CreateKeyQuery), async (c) => {
    const { workspace_id, read_only, expiration_date } = c.req.valid("query");
    const { key, prefix } = generateApiKey();
    const request = { workspaceId: workspace_id, readOnly: read_only, expiresAt: expiration_date ?? null };
    const keyHash = await hashApiKey(key);
    const outcome = await writeAs(c, (db) => createApiKeyAsCaller(db, { ...request, prefix, keyHash }));
    if (outcome === "forbidden") throw forbidden();
    if (outcome === "not_found") throw workspaceNotFound();
    return c.json(key, 200);
  })
  .delete("/:key_prefix", requireApiKey, validate("param", KeyPrefixParams), async (c) => {
    const deleted = await writeAs(c, (db) => deleteApiKeyAsCaller(db, c.req.valid("param").key_prefix));
    if (deleted.outcome !== "done") throw deleted.outcome === "forbidden" ? forbidden() : apiKeyNotFound();
    return c.json({ prefix: deleted.prefix, revoked_at: deleted.revokedAt }, 200);
  })
  .get("/:key_prefix/validate", requireApiKey, validate("param", KeyPrefixParams), async (c) => {
    const live = await readAs(c, (db) => isLiveKeyOfCaller(db, c.req.valid("param").key_prefix));
    return c.json(live, 200);
  });

/** GET /profile: the caller's own user, and nobody else's. */
export const profileRoutes = new Hono<AppEnv>().get("/", requireApiKey, validate("query", ProfileQuery), async (c) => {
  const profile = await readAs(c, (db) => fetchProfile(db));
  const asked = c.req.valid("query").user_id;
  if (asked !== undefined && asked !== profile.id) throw userNotFound();
  return c.json(profile, 200);
});
