/**
 * What the edge cache's entries hold in memory (docs/EDGE-DELIVERY.md §4, "Memory"): src/http/edge-cache.ts's own
 * middleware, in Node's V8 (workerd's engine), in front of a handler answering a config as the fetch does (about the
 * bench's answer, with ids and params of its own per request), for many keys and environments. The heap is measured
 * (and what V8 keeps outside it) after a full collection: before, once the entries fill the limit, and after three times as many more requests
 * (which must not grow it). Prints a markdown table; `npm run bench` runs it (`npx tsx test/bench/cache-memory.ts`
 * alone).
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Hono } from "hono";
import { Caller } from "../../src/db/caller";
import { edgeCache, MAX_ENTRIES, MAX_HELD } from "../../src/http/edge-cache";
import { RequestCaller } from "../../src/http/request-caller";
import { table } from "./report";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

type CacheEnv = { Bindings: Env; Variables: { caller: RequestCaller } };
const env = { SHARD_MAP: "SHARD_0=0-1023", FRESHNESS_BOUND_SECONDS: "60", STALE_IF_ERROR_SECONDS: "0" } as Env;

/** `length` letters, varied (a repeated one could be held as a tree of shared pieces). */
const text = (length: number, seed: number) =>
  Array.from({ length }, (_, i) => String.fromCharCode(97 + ((i * 7 + seed) % 26))).join("");

/** A config answer of about `paramsBytes` of params, unique to `n`. */
function answerOf(n: number, paramsBytes: number) {
  const id = (kind: number) => `0195000c-0000-7000-8000-${(n * 10 + kind).toString(16).padStart(12, "0")}`;
  const lifecycle = {
    created_at: new Date(n).toISOString(),
    updated_at: new Date(n).toISOString(),
    updated_by: "bench@example.com",
  };
  return {
    params: { model: "gpt-4o-mini", temperature: 0.2, prompt: `You answer ${n}: ${text(Math.max(0, paramsBytes - 70), n)}` },
    url: "",
    application_ref: { slug: `bench-deploy-${n % 256}`, version: null, id: id(1) },
    service_ref: null,
    variant_ref: { slug: "main", version: 20, id: id(2) },
    environment_ref: { slug: "staging", version: 20, id: id(3) },
    variant_lifecycle: { ...lifecycle, updated_by_id: id(4) },
    environment_lifecycle: { ...lifecycle, updated_by_id: id(4) },
  };
}

function service(paramsBytes: number) {
  const app = new Hono<CacheEnv>();
  app.post(
    "/variants/configs/fetch",
    async (c, next) => {
      const key = c.req.header("Authorization") ?? "";
      c.set("caller", new RequestCaller(Caller.withKey(key.slice(0, 8), key.padEnd(64, "0"))));
      await next();
    },
    edgeCache,
    async (c) => {
      // What the read's batch reports of the key, as a live one's.
      c.get("caller").heardCheck({
        key: { user_id: "u", last_used_at: null, expires_at: null },
        shard: "SHARD_0",
        vouched: null,
      });
      const { application_ref } = await c.req.json();
      return c.json(answerOf(Number(application_ref.id), paramsBytes), 200);
    },
  );
  return app;
}

/** `count` requests from `from` on: each the next of 128 keys, each 128 the next app's environment. */
async function send(app: Hono<CacheEnv>, from: number, count: number) {
  const statuses = new Map<string, number>();
  for (let n = from; n < from + count; n++) {
    const body = JSON.stringify({ environment_ref: { slug: "staging" }, application_ref: { id: String(n) } });
    const response = await app.request(
      "/variants/configs/fetch",
      {
        method: "POST",
        body,
        headers: { Authorization: `key${(n % 128).toString().padStart(5, "0")}`, "Content-Type": "application/json" },
      },
      env,
    );
    await response.text();
    const status = (response.headers.get("Cache-Status") ?? "").split("; ").slice(1).join("; ");
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
  }
  return statuses;
}

/** V8's heap and what lives outside it (large strings may): after a full collection. */
function heap() {
  gc();
  gc();
  const { heapUsed, external } = process.memoryUsage();
  return heapUsed + external;
}

const rows: string[][] = [];
for (const paramsBytes of [170, 10_000]) {
  const app = service(paramsBytes);
  await send(app, -1_000, 100); // warm: the code's own allocations
  const before = heap();
  const filled = Math.min(MAX_ENTRIES, Math.floor(MAX_HELD / (paramsBytes + 900)));
  await send(app, 0, filled);
  const full = heap();
  const more = await send(app, filled, 3 * MAX_ENTRIES);
  const after = heap();
  const again = await send(app, 0, 1);
  rows.push([
    `${paramsBytes.toLocaleString("en")} B of params`,
    filled.toLocaleString("en"),
    Math.round((full - before) / filled).toLocaleString("en"),
    `${((full - before) / 2 ** 20).toFixed(1)} MiB`,
    (3 * MAX_ENTRIES).toLocaleString("en"),
    [...more].map(([status, count]) => `${status} ${count}`).join(", "),
    `${((after - full) / 2 ** 20).toFixed(1)} MiB`,
    [...again.keys()].join(""),
  ]);
}
console.log(
  table(
    [
      "answers",
      "entries kept",
      "heap B per entry",
      "heap held",
      "requests more, each new",
      "their Cache-Status",
      "heap growth",
      "the first again",
    ],
    rows,
    ["l", "r", "r", "r", "r", "l", "r", "l"],
  ),
);
console.log(
  `\nLimits (src/http/edge-cache.ts): ${MAX_ENTRIES.toLocaleString("en")} entries, ${(MAX_HELD / 2 ** 20).toFixed(0)} Mi characters of keys and bodies per isolate.`,
);
