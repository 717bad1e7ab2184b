/** JSON.rawJSON: in workerd and Node 21+, with the source text of each value given to a reviver; not in Node 20. */
const rawJSON = (JSON as JSON & { rawJSON?: (text: string) => unknown }).rawJSON;

/** A number that the runtime cannot give back as it was written, where it has no `JSON.rawJSON`. */
export class InexactNumberError extends Error {
  constructor(readonly number: string) {
    super(`the number ${number} cannot be kept exactly by this runtime (it has no JSON.rawJSON): use Node 22 or later`);
  }
}

// Valid JSON only: its strings, then its number tokens in order.
const STRINGS = /"(?:[^"\\]|\\.)*"/g;
const NUMBERS = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/** The first number of valid JSON `text` that a plain JSON.parse would give back otherwise (see below), if any. */
function numberThatChanges(text: string): string | undefined {
  for (const [number] of text.replace(STRINGS, '""').matchAll(NUMBERS)) {
    if (JSON.stringify(Number(number)) !== number) return number;
  }
  return undefined;
}

/**
 * Parses JSON keeping every number digit for digit: one that JavaScript would write back otherwise (past 2^53,
 * `1e400`, `1.0`, `-0`) is kept as its source text (`JSON.rawJSON`), which `JSON.stringify` writes back verbatim.
 * Without `JSON.rawJSON` (the CLI on Node 20) such a number throws `InexactNumberError` rather than change.
 */
export function parseJsonExactly(text: string): unknown {
  const changes = numberThatChanges(text);
  // Most texts have no such number: a plain parse then gives the same value, at a fraction of the time of a parse whose
  // reviver reads each value's source (about 4 % of a config fetch's time in the Worker, BENCHMARKS.md round 9).
  if (changes === undefined) return JSON.parse(text);
  if (rawJSON) {
    return JSON.parse(text, (_key, value, context?: { source?: string }) =>
      typeof value === "number" && context?.source !== undefined && JSON.stringify(value) !== context.source
        ? rawJSON(context.source)
        : value,
    );
  }
  JSON.parse(text); // invalid JSON is a SyntaxError, whatever its numbers
  throw new InexactNumberError(changes);
}
