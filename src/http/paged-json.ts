import type { Context, TypedResponse } from "hono";
import type { JSONParsed } from "hono/utils/types";
import { retryReadOnce } from "../db/d1";
import type { PagedList } from "../db/paged-list";
import { streamedAnswers } from "./edge-cache";

/**
 * The 200 of an answer holding one list read in pages (`PagedList`): byte for byte what `c.json(answer(items))` would
 * answer. A list that ends with its first page is answered so, at once. A longer one streams: `answer` around the
 * items, each page read as the client takes the body (none before: a HEAD or a 304 reads no further), so that one page
 * at a time is held. A page that fails or comes back empty before the list's end (the key revoked meanwhile, say)
 * cuts the body short: the client's JSON does not parse, never a shorter list that does.
 */
export function pagedJson<Row, Item, Answer>(
  c: Context,
  list: PagedList<Row>,
  toItem: (row: Row) => Item,
  answer: (items: Item[]) => Answer,
): TypedResponse<JSONParsed<Answer>, 200, "json"> {
  const { first } = list;
  let last = first.at(-1);
  if (last === undefined || list.endsWith(last)) return c.json(answer(first.map(toItem)), 200);
  // Where the items go in the answer's text: a marker no data can hold, in place of the list.
  const marker = `paged-${crypto.randomUUID()}`;
  const [head, tail] = JSON.stringify(answer([marker as unknown as Item])).split(JSON.stringify(marker));
  const encoder = new TextEncoder();
  const text = (rows: Row[]) => encoder.encode(rows.map((row) => JSON.stringify(toItem(row))).join(","));
  let started = false;
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (!started) {
          started = true;
          controller.enqueue(encoder.encode(head));
          controller.enqueue(text(first));
          return;
        }
        const from = last as Row;
        const page = await retryReadOnce(() => list.after(from));
        if (page.length === 0) throw new Error("a page of the list came back empty before its end");
        controller.enqueue(encoder.encode(","));
        controller.enqueue(text(page));
        last = page[page.length - 1];
        if (list.endsWith(last)) {
          controller.enqueue(encoder.encode(tail));
          controller.close();
        }
      },
    },
    { highWaterMark: 0 },
  );
  // The answer's JSON, streamed: the type c.json would give it, for the route's declared schema. Never kept in memory.
  const streamed = c.body(body, 200, { "Content-Type": "application/json" });
  streamedAnswers.add(streamed);
  return streamed as unknown as TypedResponse<JSONParsed<Answer>, 200, "json">;
}
