/**
 * The admin CLI run while `wrangler dev` serves the same folder, as operators run it beside `npm run dev`: the
 * commands leave the server alone. Its open connections stay open, and its entry in wrangler's dev registry (where
 * other local Workers and wrangler sessions find it by name) is not replaced by the CLI's nor deleted when the CLI exits.
 */

import { readdirSync, readFileSync } from "node:fs";
import { Agent, type IncomingMessage, request } from "node:http";
import type { Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../support/processes";
import { applyMigrations, type DevServer, snapshot, startDev } from "../support/wrangler";
import { adminProcess, makeTempDir, removeTempDir } from "./helpers";

let dir: string;
let registry: string;
let copy: string;
let worker: DevServer;

beforeAll(async () => {
  dir = await makeTempDir("beside-dev");
  registry = await makeTempDir("registry");
  copy = await makeTempDir("code");
  // One dev registry for wrangler dev and the CLI, as on an operator's machine, but a temporary one: the test
  // neither reads nor changes that of the machine (~/.config/.wrangler/registry). Programs are spawned with this env.
  process.env.WRANGLER_REGISTRY_PATH = registry;
  await applyMigrations(dir);
  // wrangler dev rebuilds on every edit of a file it watches, and registers again with another address: from a copy
  // of the code, edits made to the repository while the test runs leave it and its entry as they are.
  worker = await startDev({ name: "service", persistTo: dir, readyPath: "/health", cwd: snapshot(ROOT, copy) });
});

afterAll(async () => {
  await worker?.stop();
  await removeTempDir(dir);
  await removeTempDir(registry);
  await removeTempDir(copy);
});

/** Every entry of the dev registry: the Worker's name and where it is served. */
function registryEntries(): Record<string, string> {
  return Object.fromEntries(readdirSync(registry).map((name) => [name, readFileSync(join(registry, name), "utf8")]));
}

describe("the admin CLI beside a running wrangler dev", () => {
  // One kept-alive connection, as a client of the API holds one open between its requests.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const sockets = new Set<Socket>();

  afterAll(() => agent.destroy());

  function send(method: "GET" | "POST", path: string, headers: Record<string, string> = {}, body?: unknown) {
    return new Promise<{ status: number; body: any; reusedSocket: boolean }>((resolveSend, reject) => {
      const sent = request(`${worker.url}${path}`, { method, agent, headers }, (response: IncomingMessage) => {
        let text = "";
        response.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
        response.on("end", () =>
          resolveSend({ status: response.statusCode ?? 0, body: JSON.parse(text), reusedSocket: sent.reusedSocket }),
        );
      });
      sent.on("socket", (socket: Socket) => sockets.add(socket));
      sent.on("error", reject);
      sent.end(body === undefined ? undefined : JSON.stringify(body));
    });
  }

  it("three commands, then a request on the connection opened before them: served, and the registry entry unchanged", async () => {
    const entries = registryEntries();
    expect(Object.keys(entries), "wrangler dev registered the service").toHaveLength(1);
    expect((await send("GET", "/health")).status).toBe(200);

    // workerd closes a kept-alive connection after about 5 s without a request, whatever else runs, and three commands
    // take longer than that: the connection is kept in use meanwhile, as a client polling the API keeps it.
    let commandsDone = false;
    const commands = (async () => {
      try {
        return [
          await adminProcess(dir, "user", "create", "--email", "ops@example.com", "--shard", "SHARD_0"),
          await adminProcess(dir, "org", "create", "--name", "Ops", "--owner", "ops@example.com", "--shard", "SHARD_0"),
          await adminProcess(dir, "key", "create", "--email", "ops@example.com"),
        ];
      } finally {
        commandsDone = true;
      }
    })();
    while (!commandsDone) {
      expect((await send("GET", "/health")).status).toBe(200);
      await new Promise((wait) => setTimeout(wait, 1_000));
    }
    const results = await commands;
    for (const result of results) expect(result.code, result.stderr).toBe(0);

    const created = await send(
      "POST",
      "/apps",
      { Authorization: `ApiKey ${results[2].json.key}`, "Content-Type": "application/json" },
      { app_name: "made-beside-the-cli" },
    );
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.app_name).toBe("made-beside-the-cli");
    expect(created.reusedSocket, "the request went out on the connection opened before the commands").toBe(true);
    expect(sockets.size, "one connection throughout").toBe(1);
    expect(worker.reloads(), "wrangler dev did not reload the Worker").toBe(0);
    expect(registryEntries(), "the service's registry entry, as wrangler dev wrote it").toEqual(entries);
  });
});
