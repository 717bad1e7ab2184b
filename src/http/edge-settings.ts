/**
 * FRESHNESS_BOUND_SECONDS and STALE_IF_ERROR_SECONDS (wrangler.toml [vars], docs/EDGE-DELIVERY.md §1), checked at use
 * as BUCKETED_SINCE is: src/app.ts's `configured` reads them on every request.
 */

/** A bad FRESHNESS_BOUND_SECONDS or STALE_IF_ERROR_SECONDS: every request answers 500 and the log names the setting. */
class BadSettingError extends Error {}

export interface Settings {
  /** FRESHNESS_BOUND_SECONDS in ms: 0, the cache is off. */
  bound: number;
  /** STALE_IF_ERROR_SECONDS in ms. */
  stale: number;
}

/** A whole number of seconds from 0 to `max`, `fallback` unset. */
function seconds(env: Env, name: "FRESHNESS_BOUND_SECONDS" | "STALE_IF_ERROR_SECONDS", fallback: number, max: number) {
  const value = env[name];
  if (value === undefined) return fallback * 1000;
  if (!/^\d{1,3}$/.test(value) || +value > max) {
    throw new BadSettingError(
      `${name} (wrangler.toml [vars]) must be a whole number of seconds from 0 to ${max}, not ${JSON.stringify(value)}`,
    );
  }
  return +value * 1000;
}

let parsed: { bound?: string; stale?: string; settings: Settings } | undefined;

/** The settings, parsed once per isolate (again only if they differ); a bad one throws, naming it. */
export function edgeSettings(env: Env): Settings {
  const { FRESHNESS_BOUND_SECONDS: bound, STALE_IF_ERROR_SECONDS: stale } = env;
  if (!parsed || parsed.bound !== bound || parsed.stale !== stale) {
    parsed = {
      bound,
      stale,
      settings: { bound: seconds(env, "FRESHNESS_BOUND_SECONDS", 5, 60), stale: seconds(env, "STALE_IF_ERROR_SECONDS", 0, 300) },
    };
  }
  return parsed.settings;
}

/** Seconds after its commit a write is live everywhere: the events' `live_everywhere_by` (SQLite's modifier). */
export const liveAfter = (env: Env) => {
  const { bound, stale } = edgeSettings(env);
  return `+${(bound + stale) / 1000} seconds`;
};
