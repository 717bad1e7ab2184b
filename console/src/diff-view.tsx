import { useState } from "preact/hooks";
import { type Api, answer, type Schemas } from "./api";
import { ExactObject, type ExactValue, formatExact, parseExact, readableString } from "./exact-json";
import { TextDiff } from "./text-diff";

/*
 * A diff of the service (docs/CHANGE-REQUESTS.md §5) as a person reads it: the changed paths, highlighted by what
 * happened to each, with their values before and after (numbers exactly as stored); a string that changed read as text
 * (console/src/text-diff.tsx); the unchanged paths folded away; both whole configs and the RFC 6902 patch one click
 * away, the patch copyable.
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

/** A whole config as a page shows it: its name and params, numbers exact; null for nothing deployed. */
export type WholeConfig = ExactValue;

const wholeConfig = (name: ExactValue | undefined, params: ExactValue | undefined): WholeConfig =>
  new ExactObject([
    ["config_name", name ?? null],
    ["params", params ?? null],
  ]);

/** A config version by its id (the current API's retrieve): its config and version, and its whole config. */
export async function versionById(api: Api, variantRevisionId: string) {
  const { data, exact } = await answerExact<Schemas["RevisionAnswer"]>(
    api.POST("/applications/revisions/retrieve", {
      body: { application_revision_ref: { id: variantRevisionId } },
      parseAs: "text",
    }),
  );
  const revision = exactAt(exact, "application_revision");
  const found = "application_revision" in data ? data.application_revision : undefined;
  return {
    config: found?.variant_slug ?? null,
    version: found ? Number(found.version) : null,
    whole: wholeConfig(exactAt(revision, "variant_slug"), exactAt(revision, "data", "parameters")),
  };
}

/** A config version's whole config, by its id. */
export const configById = async (api: Api, variantRevisionId: string): Promise<WholeConfig> =>
  (await versionById(api, variantRevisionId)).whole;

/** The whole config a deploy (an environment revision) deployed. */
export async function configOfDeploy(api: Api, deployId: string): Promise<WholeConfig> {
  const { exact } = await answerExact<unknown>(
    api.GET("/configs/deployment/{deployment_revision_id}", {
      params: { path: { deployment_revision_id: deployId } },
      parseAs: "text",
    }),
  );
  return wholeConfig(exact.get("config_name"), exact.get("parameters"));
}

/** A change request diff's document (`{config_name, params, url}`, or null) as a whole config. */
export const configOfDocument = (document: ExactValue | undefined): WholeConfig =>
  document instanceof ExactObject ? wholeConfig(document.get("config_name"), document.get("params")) : null;

const OPS = { add: "added", remove: "removed", replace: "changed" } as const;

/** A string read as text rather than as a value: more than a line, or more than a short line's characters. */
const isLong = (text: string) => text.includes("\n") || text.length > 80;

/** What each side is called (`main · v3`), and how to read both whole configs when asked. */
export interface Sides {
  before: string;
  after: string;
  wholeConfigs?: () => Promise<[WholeConfig, WholeConfig]>;
}

/**
 * `diff` (typed), with `exact` the same diff read exactly; `label` names it for screen readers; `sides` names its
 * sides and reads the whole configs.
 */
export function DiffView({
  diff,
  exact,
  label,
  sides = { before: "before", after: "after" },
}: {
  diff: Diff;
  exact: ExactValue | undefined;
  label: string;
  sides?: Sides;
}) {
  const [copied, setCopied] = useState(false);
  if (diff.identical) return <p class="empty">No change: both sides are the same.</p>;
  const patch = formatExact(exactAt(exact, "patch") ?? null);
  const side = (index: number, name: "from" | "to") => exactAt(exact, "changes", index, name) ?? null;
  // A side's value, strings' lines as lines: none for the side an add or remove has not.
  const value = (index: number, name: "from" | "to") => {
    const op = diff.changes[index].op;
    return (name === "from" && op === "add") || (name === "to" && op === "remove")
      ? ""
      : formatExact(side(index, name), "", readableString);
  };
  const indexed = diff.changes.map((change, index) => ({ change, index }));
  // A string replaced by a string reads as text when either is long (a prompt); every other change, a name among them,
  // as a row of the table.
  const isText = ({ change, index }: { change: Diff["changes"][number]; index: number }) => {
    const [from, to] = [side(index, "from"), side(index, "to")];
    return change.op === "replace" && typeof from === "string" && typeof to === "string" && (isLong(from) || isLong(to));
  };
  const rows = indexed.filter((one) => !isText(one));
  return (
    <div class="diff">
      {diff.coarse && <p>Over 1,000 changes: the whole document is replaced (the patch below).</p>}
      {indexed.filter(isText).map(({ change, index }) => (
        <section key={change.path} class="text-change" aria-label={`${label}: ${change.path}`}>
          <h4>
            <code>{change.path}</code> changed
          </h4>
          <TextDiff
            before={side(index, "from") as string}
            after={side(index, "to") as string}
            label={`${change.path}: ${label}`}
            beforeName={sides.before}
            afterName={sides.after}
          />
        </section>
      ))}
      {!diff.coarse && rows.length > 0 && (
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
            {rows.map(({ change, index }) => (
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
      {sides.wholeConfigs && <WholeConfigs sides={sides} read={sides.wholeConfigs} />}
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

/** Both whole configs, read when first opened. */
function WholeConfigs({ sides, read }: { sides: Sides; read: () => Promise<[WholeConfig, WholeConfig]> }) {
  const [configs, setConfigs] = useState<[WholeConfig, WholeConfig] | "failed">();
  const show = (config: WholeConfig) =>
    config === null ? <p class="empty">Nothing deployed.</p> : <pre>{formatExact(config, "", readableString)}</pre>;
  return (
    <details
      class="whole"
      onToggle={(event) => {
        if (event.currentTarget.open && !configs) read().then(setConfigs, () => setConfigs("failed"));
      }}
    >
      <summary>Both whole configs</summary>
      {configs === "failed" ? (
        <p role="alert">The whole configs could not be read.</p>
      ) : !configs ? (
        <p class="loading" role="status">
          Reading the whole configs…
        </p>
      ) : (
        <div class="sides">
          <section aria-label={`Before: ${sides.before}`}>
            <h4>Before: {sides.before}</h4>
            {show(configs[0])}
          </section>
          <section aria-label={`After: ${sides.after}`}>
            <h4>After: {sides.after}</h4>
            {show(configs[1])}
          </section>
        </div>
      )}
    </details>
  );
}
