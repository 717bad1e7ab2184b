import { CALLER_CTE, type CallerWriteDb } from "./caller";
import { isUniqueViolation, type Queryable } from "./d1";
import { type Results, type Statements, sql } from "./sql";

/** A request's Idempotency-Key, and what identifies the request itself (method, path and a digest of its body). */
export interface IdempotencyClaim {
  key: string;
  fingerprint: string;
}

/**
 * What a write with a claim found: its own results (it ran), the id of what the first request with that key made
 * (read it back to replay the first answer), or that the key was used for another request.
 */
export type ClaimedBatch<S extends Statements> = { ran: Results<S> } | { replayOf: string } | { reused: true };

/** How many times `batchClaimed` tries a claim whose key was taken, then found free. */
const CLAIM_ATTEMPTS = 2;

const DROP_EXPIRED_CLAIM = sql(
  `DELETE FROM idempotency_keys
    WHERE key_hash = :caller_key AND idempotency_key = :idempotency_key AND expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`,
);

// From the caller: an unknown key claims nothing, and the batch answers 401 like any other.
const CLAIM = sql(
  `WITH ${CALLER_CTE}
   INSERT INTO idempotency_keys (key_hash, idempotency_key, fingerprint, result_id, bucket, expires_at)
   SELECT :caller_key, :idempotency_key, :fingerprint, :result_id, :bucket, strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+24 hours')
     FROM caller`,
);

const RELEASE_CLAIM_OF_NOTHING = sql(
  `DELETE FROM idempotency_keys
    WHERE key_hash = :caller_key AND idempotency_key = :idempotency_key
      AND NOT EXISTS (SELECT 1 FROM apps WHERE id = :result_id)
      AND NOT EXISTS (SELECT 1 FROM app_variants WHERE id = :result_id)
      AND NOT EXISTS (SELECT 1 FROM app_variant_revisions WHERE id = :result_id)
      AND NOT EXISTS (SELECT 1 FROM environment_revisions WHERE id = :result_id)`,
);

const LIVE_CLAIM = sql<{ fingerprint: string; resultId: string }>(
  `SELECT fingerprint, result_id AS resultId FROM idempotency_keys
    WHERE key_hash = :caller_key AND idempotency_key = :idempotency_key AND expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`,
);

/**
 * Runs a write's statements in one batch behind the key check and, with a claim, between the claim's own: first the
 * key is claimed for this API key for 24 hours (an expired claim of it is dropped first), recording `resultId`, the id of
 * what the write makes; last, the claim is dropped again if the write made nothing (a refusal is evaluated afresh
 * on a retry). A key already claimed fails the claim's insert, and with it the whole batch: nothing was written.
 * Only then, a second round trip reads the first request's claim. A claim gone by then (it expired in between) is
 * tried again, CLAIM_ATTEMPTS times in all; a key still taken yet never readable after that is an error (a 500).
 */
export async function batchClaimed<S extends Statements>(
  db: CallerWriteDb,
  claim: IdempotencyClaim | null,
  resultId: string,
  statements: S,
): Promise<ClaimedBatch<S>> {
  if (!claim) return { ran: await db.batch(statements) };
  for (let attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt++) {
    const claimed = await claimOnce(db, claim, resultId, statements);
    if (claimed) return claimed;
  }
  throw new Error(
    `Idempotency-Key claim refused as taken ${CLAIM_ATTEMPTS} times, yet no live claim of it was found: not retried further`,
  );
}

/** One try of `batchClaimed`: null when the key was taken but its claim is gone by the time it is read. */
async function claimOnce<S extends Statements>(
  db: CallerWriteDb,
  claim: IdempotencyClaim,
  resultId: string,
  statements: S,
): Promise<ClaimedBatch<S> | null> {
  // The claim is in the bucket of what the write makes, so that it moves with it (docs/SHARDING.md §1).
  const values = { idempotency_key: claim.key, fingerprint: claim.fingerprint, result_id: resultId, bucket: db.bucket };
  try {
    // The claim's statements around the write's, under names a write's own never take.
    const { claimDropExpired, claimInsert, claimRelease, ...ran } = await db.batch({
      claimDropExpired: db.statement(DROP_EXPIRED_CLAIM, values),
      claimInsert: db.statement(CLAIM, values),
      ...statements,
      claimRelease: db.statement(RELEASE_CLAIM_OF_NOTHING, values),
    });
    return { ran: ran as unknown as Results<S> };
  } catch (error) {
    if (!isUniqueViolation(error, "idempotency_keys")) throw error;
  }
  const { found } = await db.batch({ found: db.statement(LIVE_CLAIM, values) });
  const first = found.results[0];
  // Gone since (it expired in between): the key is free, and the request may run as a first one.
  if (!first) return null;
  return first.fingerprint === claim.fingerprint ? { replayOf: first.resultId } : { reused: true };
}

const DELETE_EXPIRED_CLAIMS = sql(
  `DELETE FROM idempotency_keys
    WHERE expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now') AND bucket NOT IN (SELECT bucket FROM bucket_fences)`,
);

/**
 * Drops the claims that have expired, but a fenced bucket's (a move copies them: docs/SHARDING.md §4); run on a
 * schedule (wrangler.toml [triggers]).
 */
export async function deleteExpiredClaims(db: Queryable): Promise<number> {
  const { meta } = await DELETE_EXPIRED_CLAIMS.bind(db, {}).run();
  return meta.changes;
}
