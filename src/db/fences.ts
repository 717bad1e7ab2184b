import type { Queryable } from "./d1";
import { type Statement, sql } from "./sql";

/**
 * The fence guard (docs/SHARDING.md §5): a fence on :bucket, whatever its state, puts a row in fence_trips, whose
 * trigger aborts the whole batch (`isFenceTrip`), so that a write to a bucket being moved commits nothing; so does the
 * bucket of the key row read here (:key_bucket; none for a vouched key) moved away from this shard: that row is a copy
 * left behind.
 */
export const FENCE_GUARD = sql(
  "INSERT INTO fence_trips SELECT bucket FROM bucket_fences WHERE bucket = :bucket OR (bucket = :key_bucket AND state = 'moved')",
);

/**
 * The fence guard of a batch written with no caller (the admin CLI's account changes, the fixtures' and the seed's):
 * its first statement, refusing the batch whole while `bucket` is fenced on this shard, whatever the fence's state.
 */
export const fenceGuard = (db: Queryable, bucket: number): Statement<unknown> =>
  FENCE_GUARD.bind(db, { bucket, key_bucket: null });

/**
 * A read's guard (docs/SHARDING.md §5): the read's bucket, or that of the key row read here (:key_bucket), moved away
 * from this shard, whose rows here are a copy left behind (an isolate still on the old SHARD_MAP): the read is refused
 * (`BucketMovedError`). A key vouched for by its home reads no key row here, whatever this shard fences of its bucket.
 */
export const MOVED_GUARD = sql<{ moved: number }>(
  "SELECT 1 AS moved FROM bucket_fences WHERE state = 'moved' AND bucket IN (:bucket, :key_bucket)",
);

/**
 * The buckets whose rows on this shard a list leaves out (docs/SHARDING.md §5): a copy being made (`incoming`) or one
 * left behind (`moved`); the organization is listed by the shard that answers for it.
 */
export const COPIED_BUCKETS = "(SELECT bucket FROM bucket_fences WHERE state IN ('incoming', 'moved'))";

/** A read of a bucket moved away from the shard asked: answered 503, as a fenced write. */
export class BucketMovedError extends Error {
  constructor() {
    super("bucket moved away from this shard");
  }
}
