import type { Context } from "hono";
import { type BucketRef, bucketedSince, bucketOfId, bucketOfPrefix, CALLER_KEY } from "../db/buckets";
import type { RequestCaller } from "./request-caller";

/**
 * What decides a request's bucket: the first ref given, `refs` listing what the request names in the order its SQL
 * resolves them (so that the bucket is that of the row the SQL finds), else the caller's key.
 */
export const decidingRef = (refs: BucketRef[]) => refs.find((given) => given !== null && given !== undefined) ?? CALLER_KEY;

/**
 * The bucket of a request (docs/SHARDING.md §3.1): that of its deciding ref (`decidingRef`), the caller's key's being
 * its prefix's. Every id a write mints carries it, and the request runs on its shard (src/http/d1-session.ts).
 */
export function requestBucket<E extends { Bindings: Env; Variables: { caller: RequestCaller } }>(
  c: Context<E>,
  refs: BucketRef[],
): number {
  const ref = decidingRef(refs);
  if (typeof ref === "string") return bucketOfId(ref, bucketedSince(c.env));
  if (ref === CALLER_KEY) {
    const prefix = c.get("caller").caller.prefix;
    // Only a request without a key has none (an accept), and it names its organization.
    if (prefix === null) throw new Error("a request without a key must name what decides its bucket");
    return bucketOfPrefix(prefix);
  }
  return "bucket" in ref ? ref.bucket : bucketOfPrefix(ref.prefix);
}
