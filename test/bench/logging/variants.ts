/**
 * `--log-variants`: copies of the service that differ from the code under test only in how the per-request log line
 * is written (request-log.variants.ts in place of src/http/request-log.ts), each run by its own wrangler dev on its
 * own copy of the bench data, and measured on the GET of a record in the same rounds as everything else.
 */
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { HarnessError, ROOT } from "../../support/processes";
import { snapshot } from "../../support/wrangler";

export interface LogVariant {
  name: string;
  /** What the line holds and how it is written. */
  description: string;
}

const LOG_VARIANTS: LogVariant[] = [
  { name: "none", description: "no log line (what the line costs, by difference; operators get nothing)" },
  {
    name: "json-8",
    description:
      "`console.log(JSON.stringify({...}))`, 8 fields: level, message, request_id, method, route, status, duration_ms, user_id (the line before this round)",
  },
  { name: "object-8", description: "`console.log({...})`, the same 8 fields as an object" },
  {
    name: "json-4",
    description: '`console.log(JSON.stringify({...}))`, 4 fields: request_id, route ("GET /apps/:app_id/..."), status, user_id',
  },
  { name: "object-4", description: "`console.log({...})`, the same 4 fields as an object" },
  {
    name: "object-5",
    description:
      "`console.log({...})`, 5 fields: request_id, method, route, status, user_id, one line per request (src/http/request-log.ts until round 4)",
  },
  { name: "text", description: '`console.log("GET /apps/:app_id/... 200 <request_id> <user_id>")`, one plain string' },
];

const SOURCE = join(ROOT, "test/bench/logging/request-log.variants.ts");

/** Picks variants by name (comma-separated, or "all"); an unknown name is a harness error. */
export function selectLogVariants(names: string): LogVariant[] {
  if (names === "all") return LOG_VARIANTS;
  return names
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean)
    .map((name) => {
      const variant = LOG_VARIANTS.find((candidate) => candidate.name === name);
      if (!variant)
        throw new HarnessError(`unknown log variant ${name}; known: ${LOG_VARIANTS.map((known) => known.name).join(", ")}`);
      return variant;
    });
}

/**
 * A copy of the service in `code` (itself a copy) with the variant's request log, and a copy of the local D1 folder
 * `state` for it: `<work>/log-<name>/code` and `<work>/log-<name>/state`.
 */
export function logVariantCopy(code: string, state: string, work: string, variant: LogVariant): { code: string; state: string } {
  const variantCode = snapshot(code, join(work, `log-${variant.name}`));
  const source = readFileSync(SOURCE, "utf8")
    .replace('const VARIANT: string = "__VARIANT__";', `const VARIANT: string = ${JSON.stringify(variant.name)};`)
    .replaceAll('"../../../src/', '"../');
  if (!source.includes(JSON.stringify(variant.name))) throw new HarnessError(`${SOURCE}: no VARIANT line to set`);
  writeFileSync(join(variantCode, "src/http/request-log.ts"), source);
  const variantState = join(work, `log-${variant.name}`, "state");
  cpSync(state, variantState, { recursive: true });
  return { code: variantCode, state: variantState };
}
