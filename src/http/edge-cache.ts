import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { ShardName } from "../db/pool";
import { answerBookmarks, asksNewerThan, type CallerEnv, reachedBookmarks, readFromPrimary, wroteAt } from "./d1-session";
import { edgeSettings } from "./edge-settings";
import type { KeyCheck } from "./request-caller";
import { CONFIG_SPLIT_HEADER } from "./targeting-key";

/**
 * The start-up reads' answers kept in the isolate's memory (docs/EDGE-DELIVERY.md §1): served while the shard
 * confirmed them less than FRESHNESS_BOUND_SECONDS ago, counted from when the confirming round trip was sent. A
 * confirmation is the uncached read itself, which checks the key, its role and the data; its 200 replaces the entry
 * (the same answer extends it), any refusal drops it.
 */

/** An answer kept: its body and headers, and what it was confirmed with. */
interface Entry {
  body: string;
  headers: Record<string, string>;
  /** When the confirming round trip was sent (ms). */
  sentAt: number;
  /** The key's expiry (ms; Infinity: none): refused from that instant, on a hit too. */
  expiresAt: number;
  /** The key as the confirmation found it, its use recorded then: a hit sends no key check of its own. */
  check: KeyCheck;
  /** The bookmarks the read reached, by shard: a client's newer one reads fresh. */
  bookmarks: Map<ShardName, string>;
  /** The characters of its key and body: what the byte limit counts. */
  size: number;
}

/** At most this many entries and characters (about bytes: JSON is mostly ASCII) per isolate, least recently used out. */
export const MAX_ENTRIES = 4096;
export const MAX_HELD = 16 * 1024 * 1024;
/** An answer over this is served uncached (`fwd=bypass`). */
export const MAX_ENTRY = 512 * 1024;
/** A request waiting on another's confirmation waits this long at most, then reads itself. */
const SHARED_WAIT_MS = 10_000;

const entries = new Map<string, Entry>();
let held = 0;
/** Confirmations in flight, by entry key: concurrent misses share one round trip. */
const inFlight = new Map<string, Promise<Entry | undefined>>();
/** Counts the isolate's writes: a read sent before one is not kept after it. */
let writes = 0;

function drop(key: string) {
  const entry = entries.get(key);
  if (!entry) return;
  entries.delete(key);
  held -= entry.size;
}

function keep(key: string, entry: Entry) {
  drop(key);
  entries.set(key, entry);
  held += entry.size;
  for (const oldest of entries.keys()) {
    if (entries.size <= MAX_ENTRIES && held <= MAX_HELD) break;
    drop(oldest);
  }
}

/** Answers that stream (a long history read page by page): never read whole to be kept. */
export const streamedAnswers = new WeakSet<Response>();

export const LIVE_EVERYWHERE_BY = "Live-Everywhere-By";

/**
 * After a write's handler (src/app.ts), before its answer goes: every entry is dropped, as any may show what it changed
 * (an isolate reads its own writes), unless it was refused (4xx: it wrote nothing); a 2xx says when the change is live
 * everywhere (§3): no isolate serves what was there before after that instant.
 */
export function afterWrite<E extends { Bindings: Env }>(c: Context<E>) {
  const at = wroteAt(c);
  const status = c.res.status;
  if (at === undefined || (status >= 400 && status < 500)) return;
  entries.clear();
  held = 0;
  writes++;
  if (status >= 300) return;
  const { bound, stale } = edgeSettings(c.env);
  c.res.headers.set(LIVE_EVERYWHERE_BY, new Date(at + bound + stale).toISOString());
}

/** `Cache-Control: no-cache` or `max-age=0` on the request; anything malformed is ignored. */
const ASKS_FRESH = /(?:^|,)\s*(?:no-cache|max-age=0+)\s*(?=,|$)/i;

const STATUS = "Cache-Status";
const SERVICE = "app-management; ";

/** The receipt (§2) on the answer made: its Age and Cache-Status. */
function receipt(c: Context, age: number, status: string) {
  c.res.headers.set("Age", String(age));
  c.res.headers.set(STATUS, SERVICE + status);
}

/** An entry's answer, served from memory: `status` its Cache-Status (`hit; ttl=...` or the like). */
function answer(c: Context<CallerEnv>, entry: Entry, now: number, status: string) {
  c.get("caller").heardCheck(entry.check);
  answerBookmarks(c, entry.bookmarks);
  return c.body(entry.body, 200, {
    ...entry.headers,
    Age: String(Math.floor((now - entry.sentAt) / 1000)),
    [STATUS]: SERVICE + status,
  });
}

/**
 * The cache in front of a read's handler (route.ts places it after the key and the request's guards, before its
 * body's validation: a hit answers the very bytes validated before).
 */
export const edgeCache = createMiddleware<CallerEnv>(async (c, next) => {
  const { bound, stale } = edgeSettings(c.env);
  if (bound === 0) {
    await next();
    return receipt(c, 0, "fwd=bypass");
  }
  const caller = c.get("caller");
  const url = c.req.url;
  const key = `${caller.caller.keyHash} ${c.req.method} ${url.slice(url.indexOf("/", 8))}\n${c.req.header("Targeting-Key") ?? ""}\n${
    c.req.method === "POST" ? await c.req.text() : ""
  }`;
  const now = Date.now();
  let entry = entries.get(key);
  if (entry && now >= entry.expiresAt) {
    drop(key);
    entry = undefined;
  }
  const fresh =
    ASKS_FRESH.test(c.req.header("Cache-Control") ?? "") || (entry !== undefined && asksNewerThan(c, entry.bookmarks));
  if (!fresh && entry && now - entry.sentAt < bound) {
    // LRU: the entry goes to the end.
    entries.delete(key);
    entries.set(key, entry);
    return answer(c, entry, now, `hit; ttl=${Math.floor((Math.min(entry.sentAt + bound, entry.expiresAt) - now) / 1000)}`);
  }
  const shared = fresh ? undefined : inFlight.get(key);
  if (shared) {
    const confirmed = await Promise.race([shared, scheduler.wait(SHARED_WAIT_MS)]);
    if (confirmed) return answer(c, confirmed, Date.now(), "fwd=miss; collapsed");
  }
  let settle: (entry: Entry | undefined) => void = () => {};
  const confirming = new Promise<Entry | undefined>((resolve) => (settle = resolve));
  if (!fresh) inFlight.set(key, confirming);
  const writesBefore = writes;
  readFromPrimary(c);
  const sentAt = Date.now();
  let kept: Entry | undefined;
  try {
    await next();
    const res = c.res;
    const check = caller.keyCheck;
    if (res.status === 200 && check && !streamedAnswers.has(res)) {
      const body = await res.text();
      c.res = new Response(body, res);
      kept = {
        body,
        headers: Object.fromEntries(
          ["Content-Type", "ETag", CONFIG_SPLIT_HEADER].flatMap((name) =>
            res.headers.has(name) ? [[name, res.headers.get(name) as string]] : [],
          ),
        ),
        sentAt,
        expiresAt: check.key.expires_at === null ? Number.POSITIVE_INFINITY : Date.parse(check.key.expires_at),
        check: { ...check, key: { ...check.key, last_used_at: new Date(sentAt).toISOString() } },
        bookmarks: new Map(reachedBookmarks(c)),
        size: key.length + body.length,
      };
      if (kept.size > MAX_ENTRY || writes !== writesBefore) kept = undefined;
      else keep(key, kept);
      return receipt(c, 0, kept ? (fresh ? "fwd=request; stored" : "fwd=miss; stored") : "fwd=bypass");
    }
    if (res.status === 503 && stale > 0 && entry && now - entry.sentAt < bound + stale) {
      c.res = answer(c, entry, now, "fwd=stale; detail=shard-unavailable");
      c.res.headers.delete("Retry-After");
      return;
    }
    if (res.status !== 503) drop(key);
    receipt(c, 0, fresh ? "fwd=request" : "fwd=miss");
  } finally {
    settle(kept);
    if (inFlight.get(key) === confirming) inFlight.delete(key);
  }
});
