import { CALLER_CTE } from "./caller";
import { isTransientD1Error, isUniqueViolation, type Queryable } from "./d1";
import type { CallerWriteDb } from "./handles";
import { batch, type Results, type Statement, type Statements, sql, type Values } from "./sql";

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

// A claim is the key's on the shard of what the write makes, in that bucket (docs/SHARDING.md §7e).
const DROP_EXPIRED_CLAIM = sql(
  `DELETE FROM idempotency_keys
    WHERE key_hash = :caller_key AND idempotency_key = :idempotency_key AND bucket = :bucket
      AND expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`,
);

// From the caller: an unknown key claims nothing, and the batch answers 401 like any other.
const CLAIM = sql(
  `WITH ${CALLER_CTE}
   INSERT INTO idempotency_keys (key_hash, idempotency_key, fingerprint, result_id, bucket, expires_at)
   SELECT :caller_key, :idempotency_key, :fingerprint, :result_id, :bucket, strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+24 hours')
     FROM caller`,
);

// A row when it released the claim (the write made nothing).
const RELEASE_CLAIM_OF_NOTHING = sql(
  `DELETE FROM idempotency_keys
    WHERE key_hash = :caller_key AND idempotency_key = :idempotency_key AND bucket = :bucket
      AND NOT EXISTS (SELECT 1 FROM apps WHERE id = :result_id)
      AND NOT EXISTS (SELECT 1 FROM app_variants WHERE id = :result_id)
      AND NOT EXISTS (SELECT 1 FROM app_variant_revisions WHERE id = :result_id)
      AND NOT EXISTS (SELECT 1 FROM environment_revisions WHERE id = :result_id)
      AND NOT EXISTS (SELECT 1 FROM change_requests WHERE id = :result_id)
      -- A change request's action: the event it made (src/change-requests/change-requests.sql.ts).
      AND NOT EXISTS (SELECT 1 FROM events WHERE id = :result_id)
   RETURNING 1 AS released`,
);

const LIVE_CLAIM = sql<{ fingerprint: string; resultId: string }>(
  `SELECT fingerprint, result_id AS resultId FROM idempotency_keys
    WHERE key_hash = :caller_key AND idempotency_key = :idempotency_key AND bucket = :bucket
      AND expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`,
);

/** The bucket of the caller's key's organization (with CALLER_CTE, on the key's home shard): where its requests are kept. */
const KEY_ORGANIZATION_BUCKET = `(SELECT o.bucket FROM caller c JOIN projects p ON p.id = c.project_id
  JOIN workspaces w ON w.id = p.workspace_id JOIN organizations o ON o.id = w.organization_id)`;

/** The fence guard of the key's own bucket, which the request's row is written in, whatever the write's bucket. */
const KEY_BUCKET_FENCE = sql(
  `WITH ${CALLER_CTE} INSERT INTO fence_trips SELECT bucket FROM bucket_fences WHERE bucket = ${KEY_ORGANIZATION_BUCKET}`,
);

const DROP_EXPIRED_REQUEST = sql(
  `DELETE FROM idempotency_key_requests
    WHERE key_hash = :caller_key AND idempotency_key = :idempotency_key AND expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`,
);

// Nothing when the key is kept for this very request; a key kept for another fails the insert (its primary key).
const KEEP_REQUEST = sql(
  `WITH ${CALLER_CTE}
   INSERT INTO idempotency_key_requests (key_hash, idempotency_key, fingerprint, bucket, expires_at)
   SELECT :caller_key, :idempotency_key, :fingerprint, ${KEY_ORGANIZATION_BUCKET}, strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+24 hours')
     FROM caller
    WHERE NOT EXISTS (SELECT 1 FROM idempotency_key_requests
                       WHERE key_hash = :caller_key AND idempotency_key = :idempotency_key AND fingerprint = :fingerprint)`,
);

// Once this request's claim is gone (released: the write made nothing), so is the key's request: nothing is kept.
const RELEASE_REQUEST_OF_NOTHING = sql(
  `DELETE FROM idempotency_key_requests
    WHERE key_hash = :caller_key AND idempotency_key = :idempotency_key AND fingerprint = :fingerprint
      AND NOT EXISTS (SELECT 1 FROM idempotency_keys
                       WHERE key_hash = :caller_key AND idempotency_key = :idempotency_key AND bucket = :bucket)`,
);

/** The claim's values, bound by name (`bucket`: the write's). */
const claimValues = (db: CallerWriteDb, claim: IdempotencyClaim, resultId: string) => ({
  idempotency_key: claim.key,
  fingerprint: claim.fingerprint,
  result_id: resultId,
  bucket: db.bucket,
});

/** Keeps the key for this request on the key's home shard (`db`), failing on a key kept for another (KEEP_REQUEST). */
const keepRequest = (db: CallerWriteDb, values: Values) => ({
  requestFence: db.statement(KEY_BUCKET_FENCE, values),
  requestDropExpired: db.statement(DROP_EXPIRED_REQUEST, values),
  requestKeep: db.statement(KEEP_REQUEST, values),
});

/**
 * Runs a write's statements in one batch behind the key check and, with a claim, between the claim's own: first the
 * key is claimed for this API key for 24 hours in the write's bucket (an expired claim of it is dropped first),
 * recording `resultId`, the id of what the write makes, and the key is kept for this request on the key's home shard;
 * last, both are dropped again if the write made nothing (a refusal is evaluated afresh on a retry). A key claimed
 * already in the bucket fails the claim's insert, and with it the whole batch: nothing was written; only then, a
 * second round trip reads the first request's claim. A claim gone by then (it expired in between) is tried again,
 * CLAIM_ATTEMPTS times in all; a key still taken yet never readable after that is an error (a 500). A key kept for
 * another request (in another bucket, maybe on another shard) fails the batch too: reused.
 *
 * A key homed on another shard than the write's (`db.home`) is kept for the request there first, in a round trip of
 * its own (a key kept for another request: reused, nothing written), and released there again when the write made
 * nothing or D1 refused it; a transient failure leaves it kept (the write may have committed), for this request only.
 */
export async function batchClaimed<S extends Statements>(
  db: CallerWriteDb,
  claim: IdempotencyClaim | null,
  resultId: string,
  statements: S,
): Promise<ClaimedBatch<S>> {
  if (!claim) return { ran: await db.batch(statements) };
  const values = claimValues(db, claim, resultId);
  const { home } = db;
  if (!home) return withoutRelease(await claimTries(db, values, statements));
  try {
    await home.batch(keepRequest(home, values));
  } catch (error) {
    if (isUniqueViolation(error, "idempotency_key_requests")) return { reused: true };
    throw error;
  }
  const releaseAtHome = () => home.batch({ requestRelease: home.statement(RELEASE_REQUEST_OF_NOTHING, values) });
  let claimed: Awaited<ReturnType<typeof claimTries<S>>>;
  try {
    claimed = await claimTries(db, values, statements);
  } catch (error) {
    // Refused whole by D1 (a name taken, a fence), the write made nothing; a transient error may have committed it.
    if (!isTransientD1Error(error)) await releaseAtHome();
    throw error;
  }
  if ("released" in claimed) await releaseAtHome();
  return withoutRelease(claimed);
}

const withoutRelease = <S extends Statements>(claimed: ClaimedBatch<S> | { ran: Results<S>; released: true }): ClaimedBatch<S> =>
  "released" in claimed ? { ran: claimed.ran } : claimed;

/** `claimOnce`, CLAIM_ATTEMPTS times at most while the key is taken yet its claim cannot be read. */
async function claimTries<S extends Statements>(db: CallerWriteDb, values: Values & { fingerprint: string }, statements: S) {
  for (let attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt++) {
    const claimed = await claimOnce(db, values, statements);
    if (claimed) return claimed;
  }
  throw new Error(
    `Idempotency-Key claim refused as taken ${CLAIM_ATTEMPTS} times, yet no live claim of it was found: not retried further`,
  );
}

/**
 * One try of `batchClaimed`: null when the key was taken but its claim is gone by the time it is read; `released` when
 * the write ran and made nothing.
 */
async function claimOnce<S extends Statements>(
  db: CallerWriteDb,
  values: Values & { fingerprint: string },
  statements: S,
): Promise<ClaimedBatch<S> | { ran: Results<S>; released: true } | null> {
  // The key is kept for the request here when this shard is its home (no `home` apart).
  const keptHere: Partial<ReturnType<typeof keepRequest>> = db.home ? {} : keepRequest(db, values);
  const releasedHere: { requestRelease?: Statement<unknown> } = db.home
    ? {}
    : { requestRelease: db.statement(RELEASE_REQUEST_OF_NOTHING, values) };
  try {
    // The claim's statements around the write's, under names a write's own never take.
    const { claimDropExpired, claimInsert, requestFence, requestDropExpired, requestKeep, claimRelease, requestRelease, ...ran } =
      await db.batch({
        claimDropExpired: db.statement(DROP_EXPIRED_CLAIM, values),
        claimInsert: db.statement(CLAIM, values),
        ...keptHere,
        ...statements,
        claimRelease: db.statement(RELEASE_CLAIM_OF_NOTHING, values),
        ...releasedHere,
      });
    const results = ran as unknown as Results<S>;
    return claimRelease.results.length > 0 ? { ran: results, released: true } : { ran: results };
  } catch (error) {
    if (isUniqueViolation(error, "idempotency_key_requests")) return { reused: true };
    if (!isUniqueViolation(error, "idempotency_keys")) throw error;
  }
  const { found } = await db.batch({ found: db.statement(LIVE_CLAIM, values) });
  const first = found.results[0];
  // Gone since (it expired in between): the key is free, and the request may run as a first one.
  if (!first) return null;
  return first.fingerprint === values.fingerprint ? { replayOf: first.resultId } : { reused: true };
}

const DELETE_EXPIRED_CLAIMS = sql(
  `DELETE FROM idempotency_keys
    WHERE expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now') AND bucket NOT IN (SELECT bucket FROM bucket_fences)`,
);
const DELETE_EXPIRED_REQUESTS = sql(
  `DELETE FROM idempotency_key_requests
    WHERE expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now') AND bucket NOT IN (SELECT bucket FROM bucket_fences)`,
);

/**
 * Drops the claims and the keys' requests that have expired, but a fenced bucket's (a move copies them:
 * docs/SHARDING.md §4); run on a schedule (wrangler.toml [triggers]). How many rows went.
 */
export async function deleteExpiredClaims(db: Queryable): Promise<number> {
  const { claims, requests } = await batch(db, {
    claims: DELETE_EXPIRED_CLAIMS.bind(db, {}),
    requests: DELETE_EXPIRED_REQUESTS.bind(db, {}),
  });
  return claims.meta.changes + requests.meta.changes;
}
