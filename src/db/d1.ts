/** Anything that runs statements: the D1 binding itself, or a session of it (read replicas). */
export type Queryable = Pick<D1Database, "prepare" | "batch">;

const messageOf = (error: unknown) => (error instanceof Error ? `${error.message} ${String(error.cause ?? "")}` : String(error));

/**
 * True when D1 rejected a write for breaking a UNIQUE constraint on `table`; the database, not a prior read,
 * is what settles races between two writers.
 */
export function isUniqueViolation(error: unknown, table: string): boolean {
  return messageOf(error).includes(`UNIQUE constraint failed: ${table}.`);
}

/** What migrations/0006's triggers abort with when a statement would leave an organization without an owner. */
export const LAST_OWNER_MESSAGE = "an organization keeps at least one owner";

/** True when D1 rejected a removal or demotion of an organization's last owner (migrations/0006's triggers). */
export function isLastOwnerViolation(error: unknown): boolean {
  return messageOf(error).includes(LAST_OWNER_MESSAGE);
}

/** What migrations/0012's `fence_trips` trigger aborts with when a write batch's guard finds its bucket fenced. */
export const FENCE_MESSAGE = "bucket is moving";

/** True when D1 refused a write batch because its bucket is fenced (docs/SHARDING.md §5): nothing was written. */
export function isFenceTrip(error: unknown): boolean {
  return messageOf(error).includes(FENCE_MESSAGE);
}

// The D1 errors Cloudflare documents as transient, worth retrying (D1 "Retry queries" best practice).
const TRANSIENT = ["Network connection lost", "storage caused object to be reset", "reset because its code was updated"];

export function isTransientD1Error(error: unknown): boolean {
  const message = messageOf(error);
  return TRANSIENT.some((fragment) => message.includes(fragment));
}

/**
 * Runs a read again, once, after a transient D1 error. Reads only: a write that failed this way may or may not
 * have been applied, so it is answered 503 and left to the client.
 */
export async function retryReadOnce<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (!isTransientD1Error(error)) throw error;
    return read();
  }
}
