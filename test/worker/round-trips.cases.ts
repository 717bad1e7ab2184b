import { beforeAll, describe, expect, it } from "vitest";
import { createAccount, markKeyUsed, send } from "./fixtures";
import { instrumentD1 } from "./instrumented-d1";
import { countedShards, databaseOf, inPlaceOfShardFor, shards } from "./pool";
import { isOfOperation, makeRouteWorld, type RouteWorld, requestOf, routeFacts } from "./route-world";

/**
 * Status and D1 round trips of every route's cases, as its declaration budgets them (`roundTrips`,
 * src/http/route-facts.ts): a route whose round trips grow fails here, and so does a route that declares none. The key's
 * use is first recorded as recent, as it is for every request but a key's first in an hour, which adds one write after
 * the answer (counted on its own in "a key's use").
 */

/** A request's status and its round trips on each shard, by shard (a shard it did not reach: 0). */
async function tripsByShard(
  method: string,
  path: string,
  key: string,
  body?: object,
  headers?: Record<string, string>,
  settings: Partial<Env> = {},
) {
  await markKeyUsed(key);
  const { bindings, trips } = countedShards();
  const response = await send(method, path, { key, body, headers, bindings: { ...bindings, ...settings } });
  await response.arrayBuffer();
  return { status: response.status, trips: trips() };
}

describe("D1 round trips per request", () => {
  it("the counter sees every kind of call", async () => {
    const { db, counter } = instrumentD1(shards()[0]);
    await db.prepare("SELECT 1").first();
    await db.prepare("SELECT ?").bind(1).all();
    await db.batch([db.prepare("SELECT 1"), db.prepare("SELECT 2")]);
    const session = db.withSession("first-unconstrained");
    await session.prepare("SELECT 1").bind().raw();
    await session.batch([session.prepare("SELECT 1")]);
    expect(counter.trips).toBe(5);
  });

  it("a key's first request in an hour is answered after one round trip; the record of its use comes after the answer", async () => {
    const fresh = await createAccount();
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Trip 2, the write of the key's use, is held until the answer is in: the answer does not wait for it.
    const { db, counter } = instrumentD1(databaseOf(fresh.key), { beforeTrip: (trip) => (trip === 2 ? held : undefined) });
    const response = await send("GET", "/profile", { key: fresh.key, bindings: inPlaceOfShardFor(fresh.key, db) });
    expect(response.status).toBe(200);
    expect(counter.trips).toBe(2);
    release();
    const recorded = async () =>
      (
        await databaseOf(fresh.key)
          .prepare("SELECT last_used_at FROM api_keys WHERE user_id = ?")
          .bind(fresh.userId)
          .first<{ last_used_at: string | null }>()
      )?.last_used_at;
    for (let attempt = 0; attempt < 50 && !(await recorded()); attempt++) await scheduler.wait(10);
    expect(await recorded()).not.toBeNull();
  });
});

let world: RouteWorld;
beforeAll(async () => {
  world = await makeRouteWorld();
});

/**
 * Every route's cases, in the router's order. Every organization is on SHARD_1, and every key homed there: a request
 * answered otherwise than 401 (a key not found on SHARD_1 is looked for on the legacy bucket's shard) never reaches
 * SHARD_0, or it was routed wrong; but a list spanning organizations (`everyShard`) reads every shard.
 */
describe.each(routeFacts())("$operation", ({ operation, roundTrips }) => {
  it("declares its round trips", () => {
    expect(roundTrips?.cases.length, `${operation} declares no round trips`).toBeGreaterThan(0);
  });
  it.each((roundTrips?.cases ?? []).map((counted) => ({ status: 200, ...counted })))(
    "$name: $status in $trips round trip(s)",
    async (counted) => {
      const method = operation.split(" ")[0];
      const { path, key, body, headers } = requestOf(world, counted);
      expect(isOfOperation(operation, path), `${path} is a URL of ${operation}`).toBe(true);
      const { status, trips } = await tripsByShard(method, path, key, body, headers);
      if (status !== 401 && !roundTrips?.everyShard) expect(trips.SHARD_0, `${method} ${path} reached SHARD_0`).toBe(0);
      const total = Object.values(trips).reduce((sum, count) => sum + count, 0);
      expect({ status, trips: total }).toEqual({ status: counted.status, trips: counted.trips });
    },
  );
});

/**
 * The start-up reads with the cache on (docs/EDGE-DELIVERY.md §4): a miss costs what the uncached read costs, a hit
 * none, and the read after the bound (a confirmation) what the uncached read costs again. Each 200 case of each.
 */
describe("the cached reads", () => {
  const cases = routeFacts()
    .filter(({ cached }) => cached)
    .flatMap(({ operation, roundTrips }) =>
      (roundTrips?.cases ?? []).filter(({ status }) => (status ?? 200) === 200).map((counted) => ({ operation, counted })),
    );

  it("are the five start-up reads, each with a 200 case", () => {
    expect(new Set(cases.map(({ operation }) => operation))).toEqual(
      new Set([
        "POST /variants/configs/fetch",
        "GET /configs",
        "POST /applications/revisions/retrieve",
        "POST /workflows/revisions/retrieve",
        "GET /apps/{app_id}/revisions/{environment_name}",
      ]),
    );
  });

  it("a miss as the uncached read, a hit in 0 round trips, a confirmation past the bound as the uncached read", async () => {
    const bound = { FRESHNESS_BOUND_SECONDS: "1" };
    const sendAll = () =>
      Promise.all(
        cases.map(async ({ operation, counted }) => {
          const { path, key, body, headers } = requestOf(world, counted);
          const { status, trips } = await tripsByShard(operation.split(" ")[0], path, key, body, headers, bound);
          return { name: counted.name, status, trips: Object.values(trips).reduce((sum, count) => sum + count, 0) };
        }),
      );
    const uncached = cases.map(({ counted }) => ({ name: counted.name, status: 200, trips: counted.trips }));
    expect(await sendAll(), "misses").toEqual(uncached);
    expect(await sendAll(), "hits").toEqual(uncached.map((expected) => ({ ...expected, trips: 0 })));
    await scheduler.wait(1_000);
    expect(await sendAll(), "confirmations").toEqual(uncached);
  });
});
