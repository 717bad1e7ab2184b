import type { Context } from "hono";

/**
 * Sets headers on the answer a handler has already made, in place. Hono's `c.header` copies the whole Response on every
 * call once there is one (in case its headers are immutable): three copies per request took about a tenth of a read's
 * time in the Worker (BENCHMARKS.md, round 9). Only an answer whose headers are immutable (one fetched, such as a
 * static asset's) takes the copy.
 */
export function setAnswerHeaders(c: Context, headers: Readonly<Record<string, string>>): void {
  const entries = Object.entries(headers);
  try {
    for (const [name, value] of entries) c.res.headers.set(name, value);
  } catch {
    // Immutable headers refuse the first set, so none of them was set.
    for (const [name, value] of entries) c.header(name, value);
  }
}
