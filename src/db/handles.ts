import { LEGACY_BUCKET } from "./buckets";
import { Caller, KEY_CHECK, type LiveKey, UnknownApiKeyError } from "./caller";
import { isFenceTrip, type Queryable } from "./d1";
import { BucketMovedError, FENCE_GUARD, MOVED_GUARD } from "./fences";
import { named, type Results, type Sql, type Statement, type Statements, type Values } from "./sql";

/**
 * The way to D1 as a caller: every batch it runs begins with the key check, in the same round trip, and fails
 * with `UnknownApiKeyError` (writing nothing) when the key is not live. `found` hears what each check found (null:
 * not live; undefined: the batch failed). Reads take this; writes take `CallerWriteDb`. Where the database comes
 * from is decided by whoever makes the handle (src/http/d1-session.ts for requests, the admin CLI for operators),
 * nowhere else.
 */
export class CallerDb {
  constructor(
    protected readonly db: Queryable,
    readonly caller: Caller,
    private readonly found: (key: LiveKey | null | undefined) => void = () => {},
    /** The bucket a read is routed by, whose move away refuses it (MOVED_GUARD); null: a read spanning buckets. */
    readonly routedBucket: number | null = null,
  ) {}

  /** The statement with `values`, and the caller's own for :caller_prefix and :caller_key. */
  statement<Row>(query: Sql<Row>, values: Values = {}): Statement<Row> {
    return query.bind(this.db, values, this.caller.values);
  }

  /** Runs the statements in one batch behind the key check (and MOVED_GUARD): their results by name. */
  async batch<S extends Statements>(statements: S): Promise<Results<S>> {
    if (this.routedBucket === null) {
      const { results, from } = await this.run(statements);
      return named(statements, results, from);
    }
    const { results, from } = await this.run(statements, [this.statement(MOVED_GUARD, { bucket: this.routedBucket })]);
    if (results[from - 1].results.length > 0) throw new BucketMovedError();
    return named(statements, results, from);
  }

  /**
   * The batch's results, the statements' from index `from` (after the key check's and the `guards`', which run right
   * after it in the same transaction). Nobody has no key to check: the guards and statements run alone. A batch D1
   * refused whole (a UNIQUE violation, say) still counts as checked: its writes select from `caller`, so an unknown
   * key writes nothing and breaks no constraint. A fence's refusal does not: it refuses whatever the key, so the key
   * is left to its own check (requireApiKey), and a bad key is still a 401.
   */
  protected async run(statements: Statements, guards: Statement<unknown>[] = []): Promise<{ results: D1Result[]; from: number }> {
    const keyed = this.caller !== Caller.nobody;
    const ahead = keyed ? [this.statement(KEY_CHECK), ...guards] : guards;
    let results: D1Result[];
    try {
      results = await this.db.batch([...ahead, ...Object.values(statements)]);
    } catch (error) {
      if (keyed && !isFenceTrip(error)) this.found(undefined);
      throw error;
    }
    if (keyed) {
      const key = (results[0].results[0] as LiveKey | undefined) ?? null;
      this.found(key);
      if (!key) throw new UnknownApiKeyError();
    }
    return { results, from: ahead.length };
  }
}

/**
 * A `CallerDb` for writes: every batch it runs (an Idempotency-Key's claim and look-up included) carries the fence
 * guard for `bucket` right after the key check, so that none commits while that bucket is fenced (docs/SHARDING.md
 * §5); what a batch committed for webhooks (the `event_to_deliver` its event statements return, EVENT_HANDOFF) goes
 * to `handOff` as soon as the batch returns; reads never look for it. `bucket`: that of the organization the write's
 * rows belong to, which every id it mints carries (src/db/buckets.ts's newId).
 */
export class CallerWriteDb extends CallerDb {
  constructor(
    db: Queryable,
    caller: Caller,
    readonly bucket: number,
    private readonly handOff: (events: string[]) => void,
    found?: (key: LiveKey | null | undefined) => void,
    /** For a key homed on another shard (`Caller.vouched`): the key's own writes there (its Idempotency-Keys' requests). */
    readonly home: CallerWriteDb | null = null,
    /**
     * How long after its commit a change is live everywhere, as SQLite's date modifier (FRESHNESS_BOUND_SECONDS plus
     * STALE_IF_ERROR_SECONDS, src/http/edge-cache.ts; their defaults unless given): the deploy and apply events' field.
     */
    readonly liveAfter = "+5 seconds",
  ) {
    super(db, caller, found);
  }

  override async batch<S extends Statements>(statements: S): Promise<Results<S>> {
    const { results, from } = await this.run(statements, [this.statement(FENCE_GUARD, { bucket: this.bucket })]);
    const events = eventsToDeliver(results);
    if (events.length > 0) this.handOff(events);
    return named(statements, results, from);
  }
}

/** The events a write batch's results name for delivery (EVENT_HANDOFF). */
function eventsToDeliver(results: D1Result[]): string[] {
  const events: string[] = [];
  for (const { results: rows } of results) {
    if (rows.length === 0 || !("event_to_deliver" in (rows[0] as object))) continue;
    for (const row of rows as { event_to_deliver: string | null }[]) {
      if (row.event_to_deliver) events.push(row.event_to_deliver);
    }
  }
  return events;
}

/**
 * An operator's handle (the admin CLI) acting as `userId` on rows of an organization in `bucket` (by default the
 * legacy one, the seed's and the test fixtures'): the events its writes commit are left to the delivery sweep, which
 * queues what stays pending (the CLI has no queue binding).
 */
export const operatorDb = (db: Queryable, userId: string, bucket = LEGACY_BUCKET, liveAfter?: string) =>
  new CallerWriteDb(db, Caller.operatorAs(userId), bucket, () => {}, undefined, null, liveAfter);
