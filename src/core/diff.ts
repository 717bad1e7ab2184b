import { parseJsonExactly } from "../db/exact-json";

/**
 * The diff of two JSON documents (docs/CHANGE-REQUESTS.md §5): an RFC 6902 patch that turns `from` into `to`, built by
 * fixed rules so that the same pair always answers the same patch, whatever the key order of either side.
 */

/** One RFC 6902 operation; only these three are ever made. */
export type PatchOperation =
  | { op: "add"; path: string; value: unknown }
  | { op: "remove"; path: string }
  | { op: "replace"; path: string; value: unknown };

/** One operation as a reviewer reads it: the value before (null for an add) and after (null for a remove). */
export interface Change {
  path: string;
  op: PatchOperation["op"];
  from: unknown;
  to: unknown;
}

export interface DocumentDiff {
  identical: boolean;
  /** Over MAX_DIFF_OPERATIONS: the patch is one replace of the whole document, `changes` empty. */
  coarse: boolean;
  patch: PatchOperation[];
  changes: Change[];
}

/** Past this many operations a diff says only "all of it" (coarse). */
export const MAX_DIFF_OPERATIONS = 1000;

/** A config revision's side of a diff. */
export interface ConfigDocument {
  config_name: string;
  params: Record<string, unknown>;
  url: string;
}

/**
 * A config revision's document from its stored columns (params as JSON text, every number kept as written); null where
 * there is none (a LEFT JOIN's nulls: nothing deployed).
 */
export function storedConfigDocument({
  configName,
  params,
  url,
}: {
  configName: string | null;
  params: string | null;
  url: string | null;
}): ConfigDocument | null {
  if (configName === null || params === null || url === null) return null;
  return { config_name: configName, params: parseJsonExactly(params) as Record<string, unknown>, url };
}

/** A number kept as its source text by parseJsonExactly (src/db/exact-json.ts): `1.0`, digits past 2^53. */
const isRawJSON: (value: unknown) => boolean =
  (JSON as JSON & { isRawJSON?: (value: unknown) => boolean }).isRawJSON ?? (() => false);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) && !isRawJSON(value);

/** A number as written: equal numbers are those written alike, digit for digit. */
const numberText = (value: unknown): string | undefined =>
  typeof value === "number" || isRawJSON(value) ? JSON.stringify(value) : undefined;

/** Deep equality of JSON values: key order aside, numbers by their text, `null` a value of its own. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  const aNumber = numberText(a);
  if (aNumber !== undefined) return aNumber === numberText(b);
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  if (!isObject(a) || !isObject(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && jsonEqual(a[key], b[key]));
}

/** An RFC 6901 reference token. */
const token = (key: string | number) => String(key).replaceAll("~", "~0").replaceAll("/", "~1");

/** Thrown, and caught below, once a diff has more operations than it will list. */
class TooManyOperations {}

class PatchBuilder {
  readonly patch: PatchOperation[] = [];
  readonly changes: Change[] = [];

  private push(operation: PatchOperation, from: unknown, to: unknown) {
    if (this.patch.length === MAX_DIFF_OPERATIONS) throw new TooManyOperations();
    this.patch.push(operation);
    this.changes.push({ path: operation.path, op: operation.op, from, to });
  }

  value(path: string, from: unknown, to: unknown) {
    if (isObject(from) && isObject(to)) this.object(path, from, to);
    else if (Array.isArray(from) && Array.isArray(to)) this.array(path, from, to);
    else if (!jsonEqual(from, to)) this.push({ op: "replace", path, value: to }, from, to);
  }

  private object(path: string, from: Record<string, unknown>, to: Record<string, unknown>) {
    const keys = [...new Set([...Object.keys(from), ...Object.keys(to)])].sort();
    for (const key of keys) {
      const at = `${path}/${token(key)}`;
      if (!Object.hasOwn(to, key)) this.push({ op: "remove", path: at }, from[key], null);
      else if (!Object.hasOwn(from, key)) this.push({ op: "add", path: at, value: to[key] }, null, to[key]);
      else this.value(at, from[key], to[key]);
    }
  }

  private array(path: string, from: unknown[], to: unknown[]) {
    const common = Math.min(from.length, to.length);
    for (let i = 0; i < common; i++) this.value(`${path}/${i}`, from[i], to[i]);
    for (let i = common; i < to.length; i++) this.push({ op: "add", path: `${path}/${i}`, value: to[i] }, null, to[i]);
    for (let i = from.length - 1; i >= common; i--) this.push({ op: "remove", path: `${path}/${i}` }, from[i], null);
  }
}

/**
 * The diff of `from` and `to` by §5's rules: objects key by key in ascending UTF-16 order (remove, add, or recurse),
 * arrays index by index (then adds ascending, or removes descending), any other difference one `replace` of the whole
 * `to` value. A `null` side is one replace of the whole document.
 */
export function diffDocuments(from: unknown, to: unknown): DocumentDiff {
  const builder = new PatchBuilder();
  try {
    builder.value("", from, to);
  } catch (error) {
    if (!(error instanceof TooManyOperations)) throw error;
    return { identical: false, coarse: true, patch: [{ op: "replace", path: "", value: to }], changes: [] };
  }
  const { patch, changes } = builder;
  return { identical: patch.length === 0, coarse: false, patch, changes };
}
