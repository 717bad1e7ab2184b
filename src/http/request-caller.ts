import { Caller, type LiveKey, type Vouch } from "../db/caller";
import type { Queryable } from "../db/d1";
import { CallerDb, CallerWriteDb } from "../db/handles";
import type { ShardName } from "../db/pool";

/** last_used_at is kept to the hour: a key's use is written at most once an hour. */
const KEY_USE_RESOLUTION_MS = 3_600_000;

/**
 * What the key checks of a request found, as one value: the key not live (null), or live, found by the check of
 * `shard` (where its use is recorded); `vouched`, when that shard is the key's home and vouched for it (§3.2 of
 * docs/SHARDING.md): the bucket it was looked for in there and the caller batches on other shards run as.
 */
export type KeyCheck = {
  key: LiveKey;
  shard: ShardName;
  vouched: { bucket: number; caller: Caller } | null;
} | null;

/**
 * A request's caller and what its batches found of its key (`keyCheck`): it makes the request's handles
 * (src/http/d1-session.ts), whose batches each report their key check here; `requireApiKey` reads it when the answer
 * is ready.
 */
export class RequestCaller {
  /** Undefined until a batch with the key check has been sent (it checks the key, whatever else happens to it). */
  #check: KeyCheck | undefined = undefined;

  constructor(readonly caller: Caller) {}

  /**
   * What the request's key checks found: undefined while none has been sent (nobody, having no key, never sends one).
   * A batch that failed still counts as sent (see CallerDb's `run`).
   */
  get keyCheck(): KeyCheck | undefined {
    return this.#check;
  }

  /**
   * Hears what the key checks of batches on `shard` found (null: not live; undefined: the batch failed, which finds
   * nothing new). A vouched key's batches find what its home vouched for: the home stays where its use is recorded.
   */
  private foundBy(shard: ShardName) {
    return (key: LiveKey | null | undefined) => {
      if (key === undefined) this.#check ??= null;
      else if (key === null) this.#check = null;
      else this.#check = this.#check?.vouched ? { ...this.#check, key } : { key, shard, vouched: null };
    };
  }

  /**
   * Records what the key check of `shard`, the key's home, finds (`check`): null, the key is not live there. Sent, it
   * counts as checked even if it fails (requireApiKey does not check again).
   */
  async vouchedOn({ shard, bucket }: { shard: ShardName; bucket: number }, check: Promise<Vouch | null>) {
    this.#check ??= null;
    const vouch = await check;
    this.#check = vouch && { key: vouch, shard, vouched: { bucket, caller: Caller.vouched(this.caller, vouch) } };
  }

  /** A cached answer's check (src/http/edge-cache.ts): the key as its confirmation found it, and no batch sent. */
  heardCheck(check: KeyCheck) {
    this.#check = check;
  }

  /** The key's user, once a batch has found it live. */
  get userId(): string | null {
    return this.#check?.key.user_id ?? null;
  }

  /** The key as its home shard vouched for it, once one has (`vouchedOn`): the caller of batches on other shards. */
  get vouched(): Caller | null {
    return this.#check?.vouched?.caller ?? null;
  }

  /** The shard that vouched for the key and the bucket it was looked for in there: the key's home. */
  get home(): { shard: ShardName; bucket: number } | null {
    const check = this.#check;
    return check?.vouched ? { shard: check.shard, bucket: check.vouched.bucket } : null;
  }

  /**
   * A read handle on `shard` as `caller` (the request's own, or its key vouched for: `vouched`), of `bucket` (null: a
   * read spanning buckets).
   */
  reader(db: Queryable, shard: ShardName, caller: Caller, bucket: number | null): CallerDb {
    return new CallerDb(db, caller, this.foundBy(shard), bucket);
  }

  /**
   * A write handle on `shard` as `caller`, of `bucket`; with a vouched caller, `home` is the key's home shard's handle.
   * `liveAfter`: CallerWriteDb's.
   */
  writer(
    db: Queryable,
    shard: ShardName,
    bucket: number,
    handOff: (events: string[]) => void,
    caller: Caller,
    home: CallerWriteDb | null,
    liveAfter: string,
  ) {
    return new CallerWriteDb(db, caller, bucket, handOff, this.foundBy(shard), home, liveAfter);
  }
}

/**
 * The shard where the use of the key `check` found live is recorded: the one whose check found it, when its last
 * recorded use is over an hour old; else null.
 */
export function shardToRecordKeyUse(check: KeyCheck | undefined): ShardName | null {
  if (!check) return null;
  const { last_used_at } = check.key;
  const stale = last_used_at === null || Date.parse(last_used_at) < Date.now() - KEY_USE_RESOLUTION_MS;
  return stale ? check.shard : null;
}
