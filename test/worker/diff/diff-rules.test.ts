import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { diffDocuments, MAX_DIFF_OPERATIONS, parseJsonExactly } from "../fixtures";
import { runsShare } from "../fuzz-support";

/*
 * The diff's rules (docs/CHANGE-REQUESTS.md §5) on the pure function the routes answer with: a property (the patch
 * turns `from` into `to` exactly, whatever the key order of either side) and an example of each rule, whole values.
 * Documents are parsed from text as the service parses stored params (numbers kept as written).
 */

/** A JSON value as a tree, each number as its text, so that one tree can be written with its keys in any order. */
type Tree = { number: string } | string | boolean | null | Tree[] | { entries: [string, Tree][] };

const text = (tree: Tree, reversed = false): string => {
  if (tree === null || typeof tree !== "object") return JSON.stringify(tree);
  if (Array.isArray(tree)) return `[${tree.map((item) => text(item, reversed)).join(",")}]`;
  if ("number" in tree) return tree.number;
  const entries = reversed ? [...tree.entries].reverse() : tree.entries;
  return `{${entries.map(([key, value]) => `${JSON.stringify(key)}:${text(value, reversed)}`).join(",")}}`;
};

// Few keys and values, so that two documents share much and differ in places; keys with "~" and "/", beyond the BMP,
// and "__proto__" (an own key in parsed JSON, which a careless patch would take for the prototype).
const key = fc.oneof(
  fc.constantFrom("a", "b", "A", "~", "/", "a/b", "~1", "~0/", "é", "😀", "\uffff", "", "__proto__"),
  fc.string({ unit: "grapheme", maxLength: 3 }),
);
const number = fc.oneof(
  fc.constantFrom("1", "1.0", "0", "-0", "1e2", "100", "9007199254740993", "9007199254740992", "1e400", "0.1", "2.50"),
  fc.integer().map(String),
);
const { tree } = fc.letrec<{ tree: Tree }>((self) => ({
  tree: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    number.map((written) => ({ number: written })),
    fc.constantFrom("x", "y", "", "~/"),
    fc.boolean(),
    fc.constant(null),
    fc.array(self("tree"), { maxLength: 4 }),
    fc.uniqueArray(fc.tuple(key, self("tree")), { maxLength: 5, selector: ([k]) => k }).map((entries) => ({ entries })),
  ),
}));
const document = fc.oneof(
  fc.uniqueArray(fc.tuple(key, tree), { maxLength: 6, selector: ([k]) => k }).map((entries): Tree => ({ entries })),
  tree,
);

/** A number parsed as the service parses one (JSON.rawJSON where JavaScript would write it otherwise). */
const exact = (number: string) => parseJsonExactly(number);
const isRawJSON = (JSON as JSON & { isRawJSON: (value: unknown) => boolean }).isRawJSON;

/** A value's text with its keys sorted: equal for equal values, numbers as written. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, item) =>
    item !== null && typeof item === "object" && !Array.isArray(item) && !isRawJSON(item)
      ? Object.fromEntries(
          Object.keys(item)
            .sort()
            .map((k) => [k, item[k]]),
        )
      : item,
  );

/** RFC 6902, strictly: each target must exist (an add's must not, in an object), keys set as own properties. */
function apply(document: unknown, patch: ReturnType<typeof diffDocuments>["patch"]): unknown {
  let root = document;
  for (const operation of patch) {
    if (operation.path === "") {
      expect(operation.op).toBe("replace");
      root = "value" in operation ? operation.value : undefined;
      continue;
    }
    const tokens = operation.path
      .slice(1)
      .split("/")
      .map((token) => token.replaceAll("~1", "/").replaceAll("~0", "~"));
    const last = tokens.pop() as string;
    let parent = root as Record<string, unknown>;
    for (const token of tokens) {
      expect(Object.hasOwn(parent, token)).toBe(true);
      parent = parent[token] as Record<string, unknown>;
    }
    if (Array.isArray(parent)) {
      const index = Number(last);
      expect(String(index)).toBe(last);
      expect(index).toBeLessThanOrEqual(operation.op === "add" ? parent.length : parent.length - 1);
      if (operation.op === "add") parent.splice(index, 0, operation.value);
      else if (operation.op === "remove") parent.splice(index, 1);
      else parent[index] = operation.value;
    } else {
      expect(Object.hasOwn(parent, last)).toBe(operation.op !== "add");
      if (operation.op === "remove") delete parent[last];
      else Object.defineProperty(parent, last, { value: operation.value, enumerable: true, writable: true, configurable: true });
    }
  }
  return root;
}

describe("diffDocuments, for any two documents", () => {
  it("answers a patch that turns `from` into `to` exactly, the same whatever either side's key order", () => {
    fc.assert(
      fc.property(document, document, (fromTree, toTree) => {
        const diff = diffDocuments(parseJsonExactly(text(fromTree)), parseJsonExactly(text(toTree)));
        const patched = apply(parseJsonExactly(text(fromTree)), diff.patch);
        expect(canonical(patched)).toBe(canonical(parseJsonExactly(text(toTree))));
        const reordered = diffDocuments(parseJsonExactly(text(fromTree, true)), parseJsonExactly(text(toTree)));
        const bothReordered = diffDocuments(parseJsonExactly(text(fromTree)), parseJsonExactly(text(toTree, true)));
        expect(canonical(reordered)).toBe(canonical(diff));
        expect(canonical(bothReordered)).toBe(canonical(diff));
        // Identical exactly when equal; one change per operation, in its order.
        expect(diff.identical).toBe(canonical(parseJsonExactly(text(fromTree))) === canonical(parseJsonExactly(text(toTree))));
        expect(diff.identical).toBe(diff.patch.length === 0);
        expect(diff.changes.map(({ path, op }) => ({ path, op }))).toEqual(diff.patch.map(({ path, op }) => ({ path, op })));
      }),
      // Pure and quick: four times FUZZ_RUNS (2,000 pairs everyday, 20,000 in `npm run test:deep`).
      { numRuns: runsShare(4) },
    );
  });
});

const diff = (from: string | null, to: string | null) =>
  diffDocuments(from === null ? null : parseJsonExactly(from), to === null ? null : parseJsonExactly(to));

describe("each rule of the diff", () => {
  it("objects: keys in ascending UTF-16 code-unit order, whatever their order on either side; remove, add, recurse", () => {
    // "😀" is the code units D83D DE00: before "\uffff" in UTF-16 order, after it in code point order.
    const from = '{"\\uffff":1,"😀":1,"é":1,"b":{"x":1,"y":1},"Z":1}';
    const to = '{"Z":2,"b":{"y":1,"x":2},"é":1,"\\uffff":2,"😀":2,"new":1}';
    expect(diff(from, to)).toEqual({
      identical: false,
      coarse: false,
      patch: [
        { op: "replace", path: "/Z", value: 2 },
        { op: "replace", path: "/b/x", value: 2 },
        { op: "add", path: "/new", value: 1 },
        { op: "replace", path: "/😀", value: 2 },
        { op: "replace", path: "/\uffff", value: 2 },
      ],
      changes: [
        { path: "/Z", op: "replace", from: 1, to: 2 },
        { path: "/b/x", op: "replace", from: 1, to: 2 },
        { path: "/new", op: "add", from: null, to: 1 },
        { path: "/😀", op: "replace", from: 1, to: 2 },
        { path: "/\uffff", op: "replace", from: 1, to: 2 },
      ],
    });
    expect(diff('{"a":1,"gone":true}', '{"a":1}')).toEqual({
      identical: false,
      coarse: false,
      patch: [{ op: "remove", path: "/gone" }],
      changes: [{ path: "/gone", op: "remove", from: true, to: null }],
    });
  });

  it("arrays: by index, then the extra elements added at ascending or removed at descending indexes", () => {
    expect(diff("[1,[2],3]", "[1,[4],3,5,6]").patch).toEqual([
      { op: "replace", path: "/1/0", value: 4 },
      { op: "add", path: "/3", value: 5 },
      { op: "add", path: "/4", value: 6 },
    ]);
    expect(diff("[0,1,2,3,4]", "[9,1]")).toEqual({
      identical: false,
      coarse: false,
      patch: [
        { op: "replace", path: "/0", value: 9 },
        { op: "remove", path: "/4" },
        { op: "remove", path: "/3" },
        { op: "remove", path: "/2" },
      ],
      changes: [
        { path: "/0", op: "replace", from: 0, to: 9 },
        { path: "/4", op: "remove", from: 4, to: null },
        { path: "/3", op: "remove", from: 3, to: null },
        { path: "/2", op: "remove", from: 2, to: null },
      ],
    });
  });

  it("a value of another type, or a scalar that differs: one replace with the whole `to` value", () => {
    expect(diff('{"a":{"b":1}}', '{"a":[1]}').patch).toEqual([{ op: "replace", path: "/a", value: [1] }]);
    expect(diff('{"a":"1"}', '{"a":1}').patch).toEqual([{ op: "replace", path: "/a", value: 1 }]);
    expect(diff('{"a":[]}', '{"a":{}}').patch).toEqual([{ op: "replace", path: "/a", value: {} }]);
  });

  it("numbers are equal only when written alike, digit for digit; null is not absent", () => {
    const changed = diff('{"a":1.0,"b":1e2,"c":9007199254740993,"d":-0,"e":null}', '{"a":1,"b":100,"c":9007199254740992,"d":0}');
    expect(canonical(changed)).toBe(
      canonical({
        identical: false,
        coarse: false,
        patch: [
          { op: "replace", path: "/a", value: 1 },
          { op: "replace", path: "/b", value: 100 },
          { op: "replace", path: "/c", value: exact("9007199254740992") },
          { op: "replace", path: "/d", value: 0 },
          { op: "remove", path: "/e" },
        ],
        changes: [
          { path: "/a", op: "replace", from: exact("1.0"), to: 1 },
          { path: "/b", op: "replace", from: exact("1e2"), to: 100 },
          { path: "/c", op: "replace", from: exact("9007199254740993"), to: exact("9007199254740992") },
          { path: "/d", op: "replace", from: exact("-0"), to: 0 },
          { path: "/e", op: "remove", from: null, to: null },
        ],
      }),
    );
    expect(diff('{"a":1.0,"c":9007199254740993,"n":[1e400]}', '{"n":[1e400],"c":9007199254740993,"a":1.0}')).toEqual({
      identical: true,
      coarse: false,
      patch: [],
      changes: [],
    });
  });

  it("paths are RFC 6901: ~ as ~0, / as ~1, an empty key as an empty token", () => {
    expect(diff('{"a/b":{"~":{"":1}}}', '{"a/b":{"~":{"":2}}}').patch).toEqual([{ op: "replace", path: "/a~1b/~0/", value: 2 }]);
  });

  it("a null side: one replace at the root", () => {
    expect(diff(null, '{"a":1}')).toEqual({
      identical: false,
      coarse: false,
      patch: [{ op: "replace", path: "", value: { a: 1 } }],
      changes: [{ path: "", op: "replace", from: null, to: { a: 1 } }],
    });
    expect(diff('{"a":1}', null)).toEqual({
      identical: false,
      coarse: false,
      patch: [{ op: "replace", path: "", value: null }],
      changes: [{ path: "", op: "replace", from: { a: 1 }, to: null }],
    });
    expect(diff(null, null)).toEqual({ identical: true, coarse: false, patch: [], changes: [] });
  });

  it(`up to ${MAX_DIFF_OPERATIONS} operations listed; past them, coarse: one replace at the root and no changes`, () => {
    const list = (length: number) => JSON.stringify({ list: Array.from({ length }, (_, i) => i) });
    const most = diff(list(0), list(MAX_DIFF_OPERATIONS));
    expect([most.coarse, most.patch.length, most.changes.length]).toEqual([false, MAX_DIFF_OPERATIONS, MAX_DIFF_OPERATIONS]);
    const to = Array.from({ length: MAX_DIFF_OPERATIONS + 1 }, (_, i) => i);
    expect(diff(list(0), list(MAX_DIFF_OPERATIONS + 1))).toEqual({
      identical: false,
      coarse: true,
      patch: [{ op: "replace", path: "", value: { list: to } }],
      changes: [],
    });
  });
});
