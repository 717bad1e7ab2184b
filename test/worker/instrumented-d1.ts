/** An error D1 documents as transient (worth retrying a read after; a write's answer may be lost with it). */
export const TRANSIENT = "D1_ERROR: Network connection lost.";

/** An instrument that fails the given round trips (1-based) with `message`. */
export const failTrips =
  (trips: number[] | "all", message = TRANSIENT) =>
  (trip: number) => {
    if (trips === "all" || trips.includes(trip)) throw new Error(message);
  };

export interface Instruments {
  /**
   * Called before every round trip (statement execution, batch or exec) with its 1-based number; may throw, or
   * hold the trip until the promise it returns settles.
   */
  beforeTrip?: (trip: number) => void | Promise<void>;
  /** Called once a round trip has completed in the real D1, before its result is returned; may throw (an answer lost). */
  afterTrip?: (trip: number) => void;
  /** May change the statements of a batch before it runs (e.g. slip a failing one into the middle). */
  rewriteBatch?: (statements: D1PreparedStatement[], db: D1Database) => D1PreparedStatement[];
}

/**
 * The real D1 binding, instrumented (test code only): every round trip (`batch`, `exec`, and a statement's
 * `first`, `all`, `run` or `raw`, on the binding or on its sessions) is counted, and may be made to fail; the
 * argument of each `withSession` call is recorded, and what each `getBookmark` of its sessions answered (D1's
 * session calls it too, answering null before its first query).
 */
export function instrumentD1(db: D1Database, instruments: Instruments = {}) {
  const counter = { trips: 0, sessions: [] as unknown[], bookmarks: [] as (string | null)[] };
  const trip = async (run: () => unknown) => {
    const number = ++counter.trips;
    await instruments.beforeTrip?.(number);
    const result = await run();
    instruments.afterTrip?.(number);
    return result;
  };
  const wrap = <T extends object>(target: T, methods: string[]): T => {
    for (const method of methods) {
      const original = (target as Record<string, (...args: unknown[]) => unknown>)[method].bind(target);
      Object.assign(target, {
        [method]: (...args: unknown[]) => {
          if (method === "prepare") return wrapStatement(original(...args) as D1PreparedStatement);
          if (method === "withSession") {
            counter.sessions.push(args[0]);
            const session = wrap(original(...args) as D1DatabaseSession, ["prepare", "batch"]);
            const getBookmark = session.getBookmark.bind(session);
            const recordedBookmark = () => {
              const bookmark = getBookmark();
              counter.bookmarks.push(bookmark);
              return bookmark;
            };
            return Object.assign(session, { getBookmark: recordedBookmark });
          }
          const rewrite = instruments.rewriteBatch;
          if (method === "batch" && rewrite) return trip(() => original(rewrite(args[0] as D1PreparedStatement[], db)));
          return trip(() => original(...args));
        },
      });
    }
    return target;
  };
  const wrapStatement = (statement: D1PreparedStatement): D1PreparedStatement => {
    const bind = statement.bind.bind(statement);
    wrap(statement, ["first", "all", "run", "raw"]);
    return Object.assign(statement, { bind: (...values: unknown[]) => wrapStatement(bind(...values)) });
  };
  const database = Object.create(db) as D1Database;
  for (const method of ["prepare", "batch", "exec", "withSession"] as const) {
    Object.assign(database, { [method]: (db[method] as (...args: unknown[]) => unknown).bind(db) });
  }
  return { db: wrap(database, ["prepare", "batch", "exec", "withSession"]), counter };
}
