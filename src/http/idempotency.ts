import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { IdempotencyClaim } from "../db/idempotency";
import { sha256Hex } from "./digest";
import { badIdempotencyKey, idempotencyKeyInFlight, idempotencyKeyReused } from "./errors";
import type { RequestCaller } from "./request-caller";

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
/** Set on an answer that replays the first request's (Stripe's name for it, which clients know). */
export const REPLAYED_HEADER = "Idempotent-Replayed";

/**
 * A key: 1 to 255 printable ASCII characters, not all blank; or the draft's Structured Field form of one, quoted,
 * with `\"` and `\\` escaped (documented as is in the OpenAPI document).
 */
export const IDEMPOTENCY_KEY_PATTERN = /^(?!\s*$)(?!" *"$)(?:[ -~]{1,255}|"(?:[ !#-[\]-~]|\\["\\]){1,255}")$/u;

function parseKey(header: string): string | null {
  if (!IDEMPOTENCY_KEY_PATTERN.test(header)) return null;
  const quoted = /^"((?:[^"\\]|\\["\\])*)"$/.exec(header);
  return quoted ? quoted[1].replace(/\\(["\\])/g, "$1") : header;
}

// Keys whose first request is being answered by this isolate right now (per API key): a retry meanwhile is a 409.
const inFlight = new Set<string>();

/**
 * The Idempotency-Key mechanism of every POST (IETF httpapi idempotency-key draft): a route names it after its body
 * guard, and passes `c.var.claim` to its write. Without the header the claim is null. The key is scoped to the API
 * key; the request is identified by its method, path and a SHA-256 of its body. The write claims the key in its own
 * batch (src/db/idempotency.ts); a retry of a finished request replays its answer, another request with the key is
 * a 422, and a retry while the first is still being answered here a 409.
 */
export const idempotent = createMiddleware<{
  Bindings: Env;
  Variables: { caller: RequestCaller; claim: IdempotencyClaim | null };
}>(async (c, next) => {
  const header = c.req.header(IDEMPOTENCY_KEY_HEADER);
  if (header === undefined) {
    c.set("claim", null);
    return next();
  }
  const key = parseKey(header);
  if (key === null) throw badIdempotencyKey();
  const body = await sha256Hex(await c.req.arrayBuffer());
  const url = new URL(c.req.url);
  c.set("claim", { key, fingerprint: `${c.req.method} ${url.pathname}${url.search} ${body}` });
  const running = `${c.get("caller").caller.keyHash} ${key}`;
  if (inFlight.has(running)) throw idempotencyKeyInFlight();
  inFlight.add(running);
  try {
    await next();
  } finally {
    inFlight.delete(running);
  }
});

/** What a write answered for a claimed request: the replay header, or the 422 of a key used for another request. */
export function settleClaim<E extends { Bindings: Env }, T extends { outcome: string; replayed?: boolean }>(
  c: Context<E>,
  outcome: T,
): asserts outcome is Exclude<T, { outcome: "key_reused" }> {
  if (outcome.outcome === "key_reused") throw idempotencyKeyReused();
  if (outcome.replayed) c.header(REPLAYED_HEADER, "true");
}
