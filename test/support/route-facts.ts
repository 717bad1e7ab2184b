/*
 * Prints every route's operation and its round-trip budget (src/http/route-facts.ts) as JSON, in the router's order.
 * test/vitest.config.ts hands them to round-trips.cases.ts and buckets.test.ts, which run inside the Worker, where the
 * declarations have no facts (wrangler.toml [define]).
 */
import { stdout } from "node:process";

globalThis.ROUTE_FACTS = true;
const { ROUTES } = await import("../../src/routes");
stdout.write(
  JSON.stringify(
    ROUTES.map(({ declaration: { method, path, roundTrips, cached } }) => ({
      operation: `${method.toUpperCase()} ${path}`,
      roundTrips: roundTrips || null,
      cached: cached === true,
    })),
  ),
);
