import { newId } from "../db/buckets";
import { CALLER_CTE } from "../db/caller";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import { COPIED_BUCKETS } from "../db/fences";
import type { CallerDb, CallerWriteDb } from "../db/handles";
import { sql } from "../db/sql";

/** Where key `k` works, for an event about it: its project `p` and workspace `w`; and what the event says of it. */
const KEY_PLACE = "JOIN projects p ON p.id = k.project_id JOIN workspaces w ON w.id = p.workspace_id";
const KEY_DATA = "json_object('prefix', k.prefix, 'user_id', k.user_id, 'project_id', k.project_id)";

/** A key as its owner lists it: never its secret, nor its hash. */
export interface ApiKeySummary {
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  expiration_date: string | null;
  read_only: boolean;
  project_id: string;
  workspace_id: string;
  organization_id: string;
}

type KeyRow = Omit<ApiKeySummary, "read_only"> & { read_only: number };
const toSummary = (key: KeyRow): ApiKeySummary => ({ ...key, read_only: key.read_only === 1 });

/** The caller's keys that are not deleted, or with :prefix (else null) that one alone. */
const KEYS = sql<KeyRow>(
  `WITH ${CALLER_CTE}
   SELECT k.prefix, k.created_at, k.last_used_at, k.expires_at AS expiration_date, k.read_only,
          k.project_id, p.workspace_id, w.organization_id
     FROM api_keys k JOIN projects p ON p.id = k.project_id JOIN workspaces w ON w.id = p.workspace_id
     JOIN organizations o ON o.id = w.organization_id
    WHERE k.user_id = (SELECT user_id FROM caller) AND k.revoked_at IS NULL AND o.bucket NOT IN ${COPIED_BUCKETS}
      AND (:prefix IS NULL OR k.prefix = :prefix)
    ORDER BY k.created_at, k.id`,
);

/** The caller's keys that are not deleted (expired ones included, so that they can be seen and deleted), oldest first. */
export async function listApiKeys(db: CallerDb): Promise<ApiKeySummary[]> {
  const { keys } = await db.batch({ keys: db.statement(KEYS, { prefix: null }) });
  return keys.results.map(toSummary);
}

export interface NewKeyRequest {
  workspaceId: string;
  readOnly: boolean;
  expiresAt: string | null;
  prefix: string;
  keyHash: string;
}

const READ_ONLY = sql<{ readOnly: number }>(`WITH ${CALLER_CTE} SELECT read_only AS readOnly FROM caller`);

const CREATE_KEY = sql(
  `WITH ${CALLER_CTE}
   INSERT INTO api_keys (id, prefix, key_hash, user_id, project_id, expires_at, read_only)
   SELECT :key_id, :prefix, :key_hash, caller.user_id, p.id, :expires_at, :read_only
     FROM caller
     JOIN workspaces w ON w.id = :workspace_id
     JOIN membership m ON m.organization_id = w.organization_id
     JOIN projects p ON p.workspace_id = w.id AND p.is_default = 1
    WHERE caller.read_only = 0
   RETURNING id`,
);

const KEY_CREATED = sql(
  `WITH ${CALLER_CTE} ${INSERT_EVENT}
   SELECT :event_id, 'api_key.created', w.organization_id, w.id, p.id, NULL, ${EVENT_ACTOR}, ${KEY_DATA}
     FROM api_keys k ${KEY_PLACE} WHERE k.id = :key_id ${EVENT_HANDOFF}`,
);

/**
 * A key of the caller's for the default project of workspace `key.workspaceId`, where the caller must be a member:
 * one round trip. A read-only key makes no keys ("forbidden"); "not_found": no such workspace among the caller's.
 */
export async function createApiKeyAsCaller(db: CallerWriteDb, key: NewKeyRequest): Promise<"done" | "not_found" | "forbidden"> {
  const keyId = newId(db.bucket);
  const { facts, made } = await db.batch({
    facts: db.statement(READ_ONLY),
    made: db.statement(CREATE_KEY, {
      key_id: keyId,
      prefix: key.prefix,
      key_hash: key.keyHash,
      expires_at: key.expiresAt,
      read_only: key.readOnly ? 1 : 0,
      workspace_id: key.workspaceId,
    }),
    event: db.statement(KEY_CREATED, { event_id: newId(db.bucket), key_id: keyId }),
  });
  if (made.results.length > 0) return "done";
  return facts.results[0]?.readOnly === 1 ? "forbidden" : "not_found";
}

// Before the update, which it is conditioned like.
const KEY_DELETED = sql(
  `WITH ${CALLER_CTE} ${INSERT_EVENT}
   SELECT :event_id, 'api_key.deleted', w.organization_id, w.id, p.id, NULL, ${EVENT_ACTOR}, ${KEY_DATA}
     FROM api_keys k ${KEY_PLACE}
    WHERE k.prefix = :prefix AND k.revoked_at IS NULL AND k.user_id = (SELECT user_id FROM caller WHERE read_only = 0) ${EVENT_HANDOFF}`,
);

const REVOKE_KEY = sql<{ prefix: string; revokedAt: string }>(
  `WITH ${CALLER_CTE}
   UPDATE api_keys SET revoked_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
    WHERE prefix = :prefix AND revoked_at IS NULL
      AND user_id = (SELECT user_id FROM caller WHERE read_only = 0)
   RETURNING prefix, revoked_at AS revokedAt`,
);

/**
 * Deletes (revokes) the caller's live key with this prefix: it fails from the next request on. "not_found": no
 * live key of the caller's has it; "forbidden": the request's key is read-only.
 */
export async function deleteApiKeyAsCaller(
  db: CallerWriteDb,
  prefix: string,
): Promise<{ outcome: "done"; prefix: string; revokedAt: string } | { outcome: "not_found" | "forbidden" }> {
  const { facts, revoked } = await db.batch({
    facts: db.statement(READ_ONLY),
    event: db.statement(KEY_DELETED, { prefix, event_id: newId(db.bucket) }),
    revoked: db.statement(REVOKE_KEY, { prefix }),
  });
  const row = revoked.results[0];
  if (row) return { outcome: "done", prefix: row.prefix, revokedAt: row.revokedAt };
  return { outcome: facts.results[0]?.readOnly === 1 ? "forbidden" : "not_found" };
}

/** `deleteApiKeyAsCaller`'s dry-run: its refusal, or the key it would delete; one read, nothing written. */
export async function previewApiKeyDeletion(
  db: CallerWriteDb,
  prefix: string,
): Promise<{ outcome: "preview"; key: ApiKeySummary } | { outcome: "not_found" | "forbidden" }> {
  const { facts, keys } = await db.batch({ facts: db.statement(READ_ONLY), keys: db.statement(KEYS, { prefix }) });
  if (facts.results[0]?.readOnly === 1) return { outcome: "forbidden" };
  const key = keys.results[0];
  return key ? { outcome: "preview", key: toSummary(key) } : { outcome: "not_found" };
}

const LIVE_KEY = sql<{ live: number }>(
  `WITH ${CALLER_CTE}
   SELECT EXISTS (SELECT 1 FROM api_keys
                   WHERE prefix = :prefix AND user_id = (SELECT user_id FROM caller) AND revoked_at IS NULL
                     AND (expires_at IS NULL OR expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))) AS live`,
);

/** Whether the caller has a live key (not deleted, not expired) with this prefix. */
export async function isLiveKeyOfCaller(db: CallerDb, prefix: string): Promise<boolean> {
  const { found } = await db.batch({ found: db.statement(LIVE_KEY, { prefix }) });
  return found.results[0]?.live === 1;
}
