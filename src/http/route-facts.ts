declare global {
  /**
   * Whether the facts only the tests read are loaded with the route declarations: true where test/support/route-facts.ts
   * prints them for the worker tests (in Node, as the OpenAPI document is built); false in the Worker's bundle
   * (wrangler.toml [define]), where `globalThis.ROUTE_FACTS && { ... }` folds to false and the facts are left out.
   */
  var ROUTE_FACTS: boolean | undefined;
}

/** A fact only the tests read, written `globalThis.ROUTE_FACTS && { ... }`: none in the Worker. */
export type TestFact<Fact> = Fact | false | undefined;

/**
 * One request to a route and what it costs: test/worker/round-trips.cases.ts sends it and counts its D1 round trips;
 * buckets.test.ts sends a write's cases again, in its walk of every write (one must answer 2xx), and checks that what
 * they made carries its organization's bucket. `{name}` in the path, the body and the headers
 * stands for a value of the tests' world (test/worker/route-world.ts): ids of what it made, emails, tokens.
 */
export interface RoundTripCase {
  /** What the case is (unique among the route's cases). */
  name: string;
  /** The URL under BASE_PATH, with its query. */
  path: string;
  /** Whose key it sends, by the world's name (its main account's by default; `none`: no key). */
  key?: "viewer" | "owner" | "requester" | "wrongKey" | "nonsense" | "none";
  body?: unknown;
  headers?: Record<string, string>;
  /** The status it answers (200 by default). */
  status?: number;
  /** Its round trips, on every database together: never more, never fewer. */
  trips: number;
}

/**
 * A route's round-trip budget, case by case, in the order they are sent (a case may rely on an earlier case of its own
 * route, never on another route's). `everyShard`: a list spanning organizations, which reads every shard.
 */
export interface RoundTrips {
  everyShard?: true;
  cases: readonly RoundTripCase[];
}
