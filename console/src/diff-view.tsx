import { useState } from "preact/hooks";
import { answer, type Schemas } from "./api";
import { ExactObject, type ExactValue, formatExact, parseExact } from "./exact-json";

/*
 * A diff of the service (docs/CHANGE-REQUESTS.md §5) as a person reads it: the changed paths, highlighted by what
 * happened to each, with their values before and after (numbers exactly as stored); the unchanged ones folded away;
 * the RFC 6902 patch one click away, copyable.
 */

export type Diff = Pick<Schemas["DocumentDiff"], "identical" | "coarse" | "patch" | "changes">;

type TextCall = Parameters<typeof answer<string>>[0];

/**
 * An answer read twice from its text: typed, for its structure, and exactly, for its values (JSON.parse would round
 * 12345678901234567890). `call` must ask for `parseAs: "text"`.
 */
export async function answerExact<T>(call: TextCall): Promise<{ data: T; exact: ExactObject }> {
  const text = await answer(call);
  return { data: JSON.parse(text) as T, exact: parseExact(text) as ExactObject };
}

/** A member of an exact value, by its path of keys and indexes. */
export function exactAt(value: ExactValue | undefined, ...path: (string | number)[]): ExactValue | undefined {
  let at = value;
  for (const step of path) {
    if (typeof step === "number") at = Array.isArray(at) ? at[step] : undefined;
    else at = at instanceof ExactObject ? at.get(step) : undefined;
  }
  return at;
}

const OPS = { add: "added", remove: "removed", replace: "changed" } as const;

/** `diff` (typed), with `exact` the same diff read exactly; `label` names its table for screen readers. */
export function DiffView({ diff, exact, label }: { diff: Diff; exact: ExactValue | undefined; label: string }) {
  const [copied, setCopied] = useState(false);
  if (diff.identical) return <p class="empty">No change: both sides are the same.</p>;
  const patch = formatExact(exactAt(exact, "patch") ?? null);
  // A side's value: none for the side an add or remove has not.
  const value = (index: number, side: "from" | "to") => {
    const op = diff.changes[index].op;
    return (side === "from" && op === "add") || (side === "to" && op === "remove")
      ? ""
      : formatExact(exactAt(exact, "changes", index, side) ?? null);
  };
  return (
    <div class="diff">
      {diff.coarse ? (
        <p>Over 1,000 changes: the whole document is replaced (the patch below).</p>
      ) : (
        <table class="list">
          <caption class="visually-hidden">{label}</caption>
          <thead>
            <tr>
              <th scope="col">Path</th>
              <th scope="col">Change</th>
              <th scope="col">Before</th>
              <th scope="col">After</th>
            </tr>
          </thead>
          <tbody>
            {diff.changes.map((change, index) => (
              <tr key={`${change.op}${change.path}`} class={OPS[change.op]}>
                <th scope="row">
                  <code>{change.path || "(the whole document)"}</code>
                </th>
                <td>{OPS[change.op]}</td>
                <td>
                  <pre>{value(index, "from")}</pre>
                </td>
                <td>
                  <pre>{value(index, "to")}</pre>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p class="help">Paths not listed are unchanged.</p>
      <details>
        <summary>RFC 6902 patch</summary>
        <pre class="patch">{patch}</pre>
        <button type="button" onClick={() => void navigator.clipboard.writeText(patch).then(() => setCopied(true))}>
          {copied ? "Copied" : "Copy the patch"}
        </button>
      </details>
    </div>
  );
}
