import type { Context } from "hono";

/** D1 read-replication bookmark: sent back by clients so that they read their own writes. */
export const BOOKMARK_HEADER = "x-d1-bookmark";

/** D1's bookmark format; anything else a client sends is ignored rather than passed to D1. */
const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

/**
 * A D1 session that starts where the client's bookmark says (or at `start`: "first-primary" for writes,
 * "first-unconstrained" for reads, which may go to the nearest replica), and a way to hand its bookmark back.
 */
export function d1Session<E extends { Bindings: Env }>(c: Context<E>, start: "first-primary" | "first-unconstrained") {
  const bookmark = c.req.header(BOOKMARK_HEADER)?.trim().toLowerCase();
  const session = c.env.DB.withSession(bookmark && BOOKMARK.test(bookmark) ? bookmark : start);
  return {
    session,
    returnBookmark: () => {
      const bookmark = session.getBookmark();
      if (bookmark) c.header(BOOKMARK_HEADER, bookmark);
    },
  };
}
