import { diffLines, diffWordsWithSpace } from "diff";

/*
 * Two texts compared line by line, and a changed line word by word, by jsdiff (the `diff` package): loaded only when a
 * diff first shows a changed string (console/src/text-diff.tsx imports this module dynamically), so that the first page
 * carries none of it.
 */

/** A part of a line: unchanged, or the words this side changed (removed from Before, added in After). */
export interface Part {
  text: string;
  changed: boolean;
}

/** A row of the diff: a line both sides share, or a change (one side absent for a line only removed or added). */
export type Row = { same: string } | { before?: Part[]; after?: Part[] };

/** The text's lines; a final line break ends the last line rather than starting an empty one. */
const linesOf = (text: string) => text.replace(/\n$/, "").split("\n");

/** A removed line and the added line in its place, each with the words that changed marked. */
function pair(before: string, after: string): Row {
  const words = diffWordsWithSpace(before, after);
  return {
    before: words.filter((part) => !part.added).map((part) => ({ text: part.value, changed: part.removed })),
    after: words.filter((part) => !part.removed).map((part) => ({ text: part.value, changed: part.added })),
  };
}

/** The rows from `before` to `after`: removed lines paired in order with the lines added in their place. */
export function textRows(before: string, after: string): Row[] {
  const rows: Row[] = [];
  const chunks = diffLines(before, after);
  for (let i = 0; i < chunks.length; i++) {
    const chunk = chunks[i];
    if (!chunk.added && !chunk.removed) {
      for (const line of linesOf(chunk.value)) rows.push({ same: line });
      continue;
    }
    const removed = chunk.removed ? linesOf(chunk.value) : [];
    const next = chunks[i + 1];
    const added = chunk.added ? linesOf(chunk.value) : next?.added ? linesOf(next.value) : [];
    if (chunk.removed && next?.added) i++;
    for (let line = 0; line < Math.max(removed.length, added.length); line++) {
      const [was, is] = [removed[line], added[line]];
      if (was !== undefined && is !== undefined) rows.push(pair(was, is));
      else if (was !== undefined) rows.push({ before: [{ text: was, changed: false }] });
      else rows.push({ after: [{ text: is, changed: false }] });
    }
  }
  return rows;
}
