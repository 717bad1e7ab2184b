import { batchAsCaller, CALLER_CTE, type Caller } from "./caller";
import { isUniqueViolation, type Queryable } from "./d1";

/** A request's Idempotency-Key, and what identifies the request itself (method, path and a digest of its body). */
export interface IdempotencyClaim {
  key: string;
  fingerprint: string;
}

/**
 * What a write with a claim found: its own results (it ran), the id of what the first request with that key made
 * (read it back to replay the first answer), or that the key was used for another request.
 */
export type ClaimedBatch = { ran: D1Result[] } | { replayOf: string } | { reused: true };

/** How many times `batchClaimed` tries a claim whose key was taken, then found free. */
const CLAIM_ATTEMPTS = 2;

/**
 * Runs a write's statements in one batch behind the key check and, with a claim, between the claim's own: first the
 * key is claimed for this API key for 24 hours (an expired claim of it is dropped first), recording `resultId`, the id of
 * what the write makes; last, the claim is dropped again if the write made nothing (a refusal is evaluated afresh
 * on a retry). A key already claimed fails the claim's insert, and with it the whole batch: nothing was written.
 * Only then, a second round trip reads the first request's claim. A claim gone by then (it expired in between) is
 * tried again, CLAIM_ATTEMPTS times in all; a key still taken yet never readable after that is an error (a 500).
 */
export async function batchClaimed(
  db: Queryable,
  caller: Caller,
  claim: IdempotencyClaim | null,
  resultId: string,
  statements: D1PreparedStatement[],
): Promise<ClaimedBatch> {
  if (!claim) return { ran: await batchAsCaller(db, caller, statements) };
  for (let attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt++) {
    const claimed = await claimOnce(db, caller, claim, resultId, statements);
    if (claimed) return claimed;
  }
  throw new Error(
    `Idempotency-Key claim refused as taken ${CLAIM_ATTEMPTS} times, yet no live claim of it was found: not retried further`,
  );
}

/** One try of `batchClaimed`: null when the key was taken but its claim is gone by the time it is read. */
async function claimOnce(
  db: Queryable,
  caller: Caller,
  claim: IdempotencyClaim,
  resultId: string,
  statements: D1PreparedStatement[],
): Promise<ClaimedBatch | null> {
  const owner = caller.credentials[1];
  try {
    const results = await batchAsCaller(db, caller, [
      db
        .prepare(
          `DELETE FROM idempotency_keys
            WHERE key_hash = ?1 AND idempotency_key = ?2 AND expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`,
        )
        .bind(owner, claim.key),
      // From the caller: an unknown key claims nothing, and the batch answers 401 like any other.
      db
        .prepare(
          `WITH ${CALLER_CTE}
           INSERT INTO idempotency_keys (key_hash, idempotency_key, fingerprint, result_id, expires_at)
           SELECT ?2, ?3, ?4, ?5, strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+24 hours') FROM caller`,
        )
        .bind(...caller.credentials, claim.key, claim.fingerprint, resultId),
      ...statements,
      db
        .prepare(
          `DELETE FROM idempotency_keys
            WHERE key_hash = ?1 AND idempotency_key = ?2
              AND NOT EXISTS (SELECT 1 FROM apps WHERE id = ?3)
              AND NOT EXISTS (SELECT 1 FROM app_variant_revisions WHERE id = ?3)
              AND NOT EXISTS (SELECT 1 FROM environment_revisions WHERE id = ?3)`,
        )
        .bind(owner, claim.key, resultId),
    ]);
    return { ran: results.slice(2, 2 + statements.length) };
  } catch (error) {
    if (!isUniqueViolation(error, "idempotency_keys")) throw error;
  }
  const [found] = await batchAsCaller<{ fingerprint: string; resultId: string }>(db, caller, [
    db
      .prepare(
        `SELECT fingerprint, result_id AS resultId FROM idempotency_keys
          WHERE key_hash = ?1 AND idempotency_key = ?2 AND expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`,
      )
      .bind(owner, claim.key),
  ]);
  const first = found.results[0];
  // Gone since (it expired in between): the key is free, and the request may run as a first one.
  if (!first) return null;
  return first.fingerprint === claim.fingerprint ? { replayOf: first.resultId } : { reused: true };
}

/** Drops the claims that have expired; run on a schedule (wrangler.toml [triggers]). */
export async function deleteExpiredClaims(db: Queryable): Promise<number> {
  const { meta } = await db
    .prepare("DELETE FROM idempotency_keys WHERE expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')")
    .run();
  return meta.changes;
}
