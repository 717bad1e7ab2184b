/**
 * True when D1 rejected a write for breaking a UNIQUE constraint on `table`; the database, not a prior read,
 * is what settles races between two writers.
 */
export function isUniqueViolation(error: unknown, table: string): boolean {
  const message = error instanceof Error ? `${error.message} ${String(error.cause ?? "")}` : String(error);
  return message.includes(`UNIQUE constraint failed: ${table}.`);
}
