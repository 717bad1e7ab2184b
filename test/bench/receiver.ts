/**
 * The webhook receiver of the "deploy, three webhooks" scenario: a small HTTP server on 127.0.0.1 that answers every
 * POST 200 at once and counts what it got. It runs as a program of its own (this file, run by node with tsx), in its
 * own process group like the wrangler devs: its CPU time is neither the load generator's (whose event loop it would
 * otherwise share) nor the service's, and it is not counted as other programs' work either.
 *
 * `GET /count` answers its counts: requests, signed ones (with the Standard Webhooks headers `webhook-id`,
 * `webhook-timestamp` and `webhook-signature`), distinct deliveries (`webhook-id`: a retry sends the same one again)
 * and distinct events (the `data.id` of the body: one event reaches each of the webhooks).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath, pathToFileURL } from "node:url";
import { HarnessError, killGroup, spawnGroup } from "../support/processes";

export interface ReceiverCounts {
  requests: number;
  signed: number;
  deliveries: number;
  events: number;
}

export interface Receiver {
  /** e.g. http://127.0.0.1:40123, no trailing slash. */
  url: string;
  counts(): Promise<ReceiverCounts>;
  stop(): void;
}

const READY = /^listening (\d+)$/m;

/** Starts the receiver on a free loopback port; resolves once it listens. */
export async function startReceiver(): Promise<Receiver> {
  const child = spawnGroup(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url)]);
  let output = "";
  const port = await new Promise<number>((resolvePort, reject) => {
    const timer = setTimeout(
      () => reject(new HarnessError(`the webhook receiver did not start within 20 s:\n${output}`)),
      20_000,
    );
    const onData = (chunk: string) => {
      output += chunk;
      const ready = READY.exec(output);
      if (ready) {
        clearTimeout(timer);
        resolvePort(Number(ready[1]));
      }
    };
    child.stdout?.setEncoding("utf8").on("data", onData);
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new HarnessError(`the webhook receiver exited (code ${code}):\n${output}`));
    });
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    async counts() {
      const response = await fetch(`${url}/count`, { signal: AbortSignal.timeout(10_000) });
      if (!response.ok) throw new HarnessError(`the webhook receiver answered GET /count with ${response.status}`);
      return (await response.json()) as ReceiverCounts;
    },
    stop: () => killGroup(child, "SIGTERM"),
  };
}

/** The receiver itself (when this file is run as a program). */
function serve(): void {
  let requests = 0;
  let signed = 0;
  const deliveries = new Set<string>();
  const events = new Set<string>();
  const server = createServer((request, response) => {
    if (request.method === "GET" && request.url === "/count") {
      const counts: ReceiverCounts = { requests, signed, deliveries: deliveries.size, events: events.size };
      response.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(counts));
      return;
    }
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      requests++;
      const id = request.headers["webhook-id"];
      if (typeof id === "string" && request.headers["webhook-timestamp"] && request.headers["webhook-signature"]) signed++;
      if (typeof id === "string") deliveries.add(id);
      try {
        const event = JSON.parse(Buffer.concat(chunks).toString("utf8"))?.data?.id;
        if (typeof event === "string") events.add(event);
      } catch {
        // not JSON: counted as a request only
      }
      response.writeHead(200, { "Content-Type": "text/plain" }).end("ok");
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, "127.0.0.1", () => console.log(`listening ${(server.address() as AddressInfo).port}`));
  process.on("SIGTERM", () => process.exit(0));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) serve();
