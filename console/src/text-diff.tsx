import { useEffect, useId, useState } from "preact/hooks";
import type { Part, Row } from "./text-lines";

/*
 * A string that changed, read as text (docs/CONSOLE.md "Daily use" 2): its lines as lines, the changed words marked
 * (<del> in Before, <ins> in After), side by side or unified as the reader last chose (kept in localStorage, for every
 * diff), Before and After named above it at every width, and unchanged runs longer than a screenful folded.
 */

const LAYOUT_ITEM = "console.diff-layout";
const LAYOUT_EVENT = "console-diff-layout";
type Layout = "split" | "unified";

const storedLayout = (): Layout => (localStorage.getItem(LAYOUT_ITEM) === "unified" ? "unified" : "split");

/** The reader's layout, the same in every diff of the page, and remembered. */
function useLayout(): [Layout, (layout: Layout) => void] {
  const [layout, setLayout] = useState(storedLayout);
  useEffect(() => {
    const changed = () => setLayout(storedLayout());
    addEventListener(LAYOUT_EVENT, changed);
    return () => removeEventListener(LAYOUT_EVENT, changed);
  }, []);
  return [
    layout,
    (chosen) => {
      localStorage.setItem(LAYOUT_ITEM, chosen);
      dispatchEvent(new Event(LAYOUT_EVENT));
    },
  ];
}

let loading: Promise<typeof import("./text-lines")> | undefined;
/** The line and word diff (jsdiff), loaded once, when a text diff first shows. */
const textLines = () => {
  loading ??= import("./text-lines");
  return loading;
};

/** Unchanged lines kept around a change; a run longer than twice this, and a line, is folded. */
const CONTEXT = 3;

type Shown = Row | { fold: number; lines: string[] };

/** The rows with each long unchanged run folded but for its CONTEXT lines next to a change. */
function folded(rows: Row[], opened: Set<number>): Shown[] {
  const shown: Shown[] = [];
  let start = 0;
  while (start < rows.length) {
    if (!("same" in rows[start])) {
      shown.push(rows[start++]);
      continue;
    }
    let end = start;
    while (end < rows.length && "same" in rows[end]) end++;
    const keepBefore = start === 0 ? 0 : CONTEXT;
    const keepAfter = end === rows.length ? 0 : CONTEXT;
    if (end - start > keepBefore + keepAfter + 1 && !opened.has(start)) {
      shown.push(...rows.slice(start, start + keepBefore));
      const lines = rows.slice(start + keepBefore, end - keepAfter).map((row) => (row as { same: string }).same);
      shown.push({ fold: start, lines });
      shown.push(...rows.slice(end - keepAfter, end));
    } else shown.push(...rows.slice(start, end));
    start = end;
  }
  return shown;
}

/** A side's line, its changed words marked. */
function Line({ parts, mark }: { parts: Part[] | undefined; mark: "del" | "ins" }) {
  if (!parts) return null;
  const Mark = mark;
  return <>{parts.map((part, i) => (part.changed ? <Mark key={i}>{part.text}</Mark> : part.text))}</>;
}

export function TextDiff({
  before,
  after,
  label,
  beforeName,
  afterName,
}: {
  before: string;
  after: string;
  /** What changed, for the table's caption (the value's path). */
  label: string;
  beforeName: string;
  afterName: string;
}) {
  const [rows, setRows] = useState<Row[]>();
  const [opened, setOpened] = useState(new Set<number>());
  const [layout, setLayout] = useLayout();
  const id = useId();
  useEffect(() => {
    let current = true;
    void textLines().then(({ textRows }) => current && setRows(textRows(before, after)));
    return () => {
      current = false;
    };
  }, [before, after]);

  const fold = (row: { fold: number; lines: string[] }, columns: number) => (
    <tr key={`fold${row.fold}`} class="fold">
      <td colSpan={columns}>
        <button type="button" onClick={() => setOpened(new Set(opened).add(row.fold))}>
          Show {row.lines.length} unchanged lines
        </button>
      </td>
    </tr>
  );
  const shown = rows && folded(rows, opened);
  return (
    <div class="text-diff">
      <div class="text-diff-head">
        <p class="legend">
          <span class="legend-before">
            <span aria-hidden="true">− </span>Before: {beforeName}
          </span>
          <span class="legend-after">
            <span aria-hidden="true">+ </span>After: {afterName}
          </span>
        </p>
        <fieldset class="layout">
          <legend class="visually-hidden">Layout of the text diff</legend>
          {(["split", "unified"] as const).map((choice) => (
            <label key={choice} class="check">
              <input type="radio" name={`layout${id}`} checked={layout === choice} onChange={() => setLayout(choice)} />
              {choice === "split" ? "Side by side" : "Unified"}
            </label>
          ))}
        </fieldset>
      </div>
      {!shown ? (
        <p class="loading" role="status">
          Comparing the text…
        </p>
      ) : layout === "split" ? (
        <table class={`text-lines split`}>
          <caption class="visually-hidden">{label}, side by side</caption>
          <thead>
            <tr>
              <th scope="col">Before</th>
              <th scope="col">After</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((row, i) =>
              "fold" in row ? (
                fold(row, 2)
              ) : "same" in row ? (
                <tr key={i}>
                  <td>{row.same}</td>
                  <td>{row.same}</td>
                </tr>
              ) : (
                <tr key={i} class="changed-line">
                  <td class={row.before ? "line-removed" : "line-none"}>
                    {row.before && <span class="visually-hidden">removed: </span>}
                    <Line parts={row.before} mark="del" />
                  </td>
                  <td class={row.after ? "line-added" : "line-none"}>
                    {row.after && <span class="visually-hidden">added: </span>}
                    <Line parts={row.after} mark="ins" />
                  </td>
                </tr>
              ),
            )}
          </tbody>
        </table>
      ) : (
        <table class="text-lines unified">
          <caption class="visually-hidden">{label}, unified</caption>
          <thead>
            <tr>
              <th scope="col">
                <span class="visually-hidden">Side</span>
              </th>
              <th scope="col">Before and after</th>
            </tr>
          </thead>
          <tbody>
            {shown.flatMap((row, i) => {
              if ("fold" in row) return [fold(row, 2)];
              if ("same" in row)
                return [
                  <tr key={i}>
                    <td class="sign" />
                    <td>{row.same}</td>
                  </tr>,
                ];
              const lines = [];
              if (row.before)
                lines.push(
                  <tr key={`${i}-`} class="line-removed">
                    <td class="sign">
                      <span aria-hidden="true">−</span>
                      <span class="visually-hidden">Before</span>
                    </td>
                    <td>
                      <Line parts={row.before} mark="del" />
                    </td>
                  </tr>,
                );
              if (row.after)
                lines.push(
                  <tr key={`${i}+`} class="line-added">
                    <td class="sign">
                      <span aria-hidden="true">+</span>
                      <span class="visually-hidden">After</span>
                    </td>
                    <td>
                      <Line parts={row.after} mark="ins" />
                    </td>
                  </tr>,
                );
              return lines;
            })}
          </tbody>
        </table>
      )}
    </div>
  );
}
