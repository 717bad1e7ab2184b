/**
 * vitest globalSetup (Node): a real HTTP receiver on 127.0.0.1 for webhook deliveries, its URL provided to the tests
 * as `receiverUrl`. Each path is an inbox: POST records the request and answers as the query asks, GET lists what
 * the inbox got (oldest first). Query: `status` (default 200), `fail_first=N` (the first N requests get 500),
 * `delay_ms`, `body_bytes` (answer that many bytes). Each request is kept with how many the inbox was answering then.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    receiverUrl: string;
  }
}

export interface Received {
  headers: Record<string, string>;
  body: string;
  status: number;
  /** How many requests to this inbox were being answered when this one arrived, itself included. */
  concurrent: number;
}

export default async function startReceiver(project: TestProject) {
  const inboxes = new Map<string, Received[]>();
  const answering = new Map<string, number>();
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://receiver");
    const inbox = inboxes.get(url.pathname) ?? [];
    inboxes.set(url.pathname, inbox);
    if (request.method === "GET") {
      response.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(inbox));
      return;
    }
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const query = url.searchParams;
      const failing = inbox.length < Number(query.get("fail_first") ?? 0);
      const status = failing ? 500 : Number(query.get("status") ?? 200);
      const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
      const concurrent = (answering.get(url.pathname) ?? 0) + 1;
      answering.set(url.pathname, concurrent);
      inbox.push({ headers, body: Buffer.concat(chunks).toString("utf8"), status, concurrent });
      const body = query.has("body_bytes") ? "x".repeat(Number(query.get("body_bytes"))) : `received ${inbox.length}`;
      setTimeout(
        () => {
          answering.set(url.pathname, (answering.get(url.pathname) ?? 1) - 1);
          response.writeHead(status, { "Content-Type": "text/plain" }).end(body);
        },
        Number(query.get("delay_ms") ?? 0),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  project.provide("receiverUrl", `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}
