import type { Context } from "hono";
import { type Queryable, retryReadOnce } from "../db/d1";

/** D1 read-replication bookmark: sent back by clients so that they read their own writes. */
export const BOOKMARK_HEADER = "x-d1-bookmark";

/** D1's bookmark format; anything else a client sends is ignored rather than passed to D1. */
const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

/** Runs `work` in a D1 session that starts where the client's bookmark says, or at `start`; answers its bookmark. */
async function inSession<E extends { Bindings: Env }, T>(
  c: Context<E>,
  start: "first-primary" | "first-unconstrained",
  work: (db: Queryable) => Promise<T>,
): Promise<T> {
  const sent = c.req.header(BOOKMARK_HEADER)?.trim().toLowerCase();
  const session = c.env.DB.withSession(sent && BOOKMARK.test(sent) ? sent : start);
  const result = await work(session);
  const bookmark = session.getBookmark();
  if (bookmark) c.header(BOOKMARK_HEADER, bookmark);
  return result;
}

/** A read, from the nearest replica unless the client's bookmark asks for more; retried once on a transient error. */
export const readSession = <E extends { Bindings: Env }, T>(c: Context<E>, read: (db: Queryable) => Promise<T>) =>
  inSession(c, "first-unconstrained", (db) => retryReadOnce(() => read(db)));

/** A write, on the primary; never retried (it may have been applied). */
export const writeSession = <E extends { Bindings: Env }, T>(c: Context<E>, write: (db: Queryable) => Promise<T>) =>
  inSession(c, "first-primary", write);
