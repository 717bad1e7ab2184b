/**
 * The freshness bound proved across locations (docs/EDGE-DELIVERY.md §4): two `wrangler dev` processes over one
 * persisted state share the databases and nothing else, each a location with its own isolate's memory. Writes go
 * through one (A), the admin CLI, or the other; reads are served by the other (B) from its memory. Whatever the
 * timing, an answer sent after a change's Live-Everywhere-By shows the change, and no answer is given to a key that
 * the uncached read would refuse. The bound is 2 s here; nothing is asserted on timings beyond its own semantics.
 */

import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { splitBucket } from "../../src/core/split-bucket";
import { ROOT } from "../support/processes";
import { applyMigrations, type DevServer, snapshot, startDev } from "../support/wrangler";
import { admin, api, closeDatabases, expectJsonObject, makeTempDir, query, removeTempDir } from "./helpers";

const BOUND_MS = 2_000;
/** Sequences of the property: tens every day, more under `npm run test:deep`. */
const RUNS = Number(process.env.EDGE_RUNS ?? "12");

let dir: string;
let copy: string;
let code: string;
let a: DevServer;
let b: DevServer;
let alice: { key: string; prefix: string; project_id: string; organization_id: string; workspace_id: string };
let appId: string;

const KEY_FIELDS = ["key", "prefix", "user_id", "project_id", "expires_at"];
const newKey = async (email: string, ...args: string[]) =>
  expectJsonObject(await admin(dir, "key", "create", "--email", email, ...args), KEY_FIELDS) as { key: string; prefix: string };

beforeAll(async () => {
  dir = await makeTempDir("edge");
  copy = await makeTempDir("edge-code");
  await applyMigrations(dir);
  code = snapshot(ROOT, copy);
  // One after the other: each runs the assets' build in the same copy at its start.
  a = await start("A");
  b = await start("B");
  const owner = (await admin(dir, "user", "create", "--email", "alice@example.com", "--username", "alice", "--shard", "SHARD_0"))
    .json;
  for (const email of ["bob@example.com", "carol@example.com"]) {
    expect((await admin(dir, "user", "create", "--email", email, "--shard", "SHARD_0")).code).toBe(0);
  }
  alice = { ...owner, ...(await newKey("alice@example.com")) };
  const made = await api(a, "POST", "/apps", alice.key, { app_name: "edge" });
  expect(made.status).toBe(200);
  appId = made.body.app_id;
  // The first save makes config main; the second, of a taken name, deploys it to production.
  for (const n of [0, 0])
    await write(a, "POST", "/configs", { base_id: appId, config_name: "main", parameters: { n }, overwrite: true });
}, 300_000);

/**
 * A location: wrangler dev over the shared state, from the copy of the code; as under `npm run dev`, secrets (a split's
 * verdict secret) sealed with the development key.
 */
const start = (name: string) =>
  startDev({
    name,
    persistTo: dir,
    readyPath: "/health",
    cwd: code,
    vars: { FRESHNESS_BOUND_SECONDS: String(BOUND_MS / 1000), WEBHOOKS_ALLOW_LOCAL: "true" },
  });

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await closeDatabases();
  await removeTempDir(dir);
  await removeTempDir(copy);
});

/** A write as alice through `via`, checked 200; its Live-Everywhere-By (ms) and body. */
async function write(via: DevServer, method: "POST" | "DELETE", path: string, body?: unknown, key = alice.key) {
  const answer = await api(via, method, path, key, body);
  expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBe(200);
  const by = answer.headers.get("Live-Everywhere-By");
  expect(by).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  return { liveBy: Date.parse(by as string), body: answer.body, bookmark: answer.headers.get("x-d1-bookmark") };
}

/** A write of the admin CLI: live everywhere within the bound of its end (no header: it answers no HTTP). */
async function adminWrite(...args: string[]) {
  const result = await admin(dir, ...args);
  expect(result.code, result.stderr).toBe(0);
  return Date.now() + BOUND_MS;
}

type Read = { path: string; body?: unknown; method: "GET" | "POST" };
const production: Read = {
  method: "POST",
  path: "/variants/configs/fetch",
  body: { application_ref: { id: "{app}" }, environment_ref: { slug: "production" } },
};
const latestOfMain: Read = {
  method: "POST",
  path: "/variants/configs/fetch",
  body: { application_ref: { id: "{app}" }, variant_ref: { slug: "main" } },
};
const withApp = (value: unknown) => JSON.parse(JSON.stringify(value).replaceAll("{app}", appId));

/** One read, with the instants it was sent and answered (ms). */
async function read(via: DevServer, key: string, { method, path, body }: Read, headers: Record<string, string> = {}) {
  const sent = Date.now();
  const answer = await api(via, method, path, key, body && withApp(body), headers);
  const status = answer.headers.get("Cache-Status") ?? "";
  // The receipt, on every answer: never older than the bound.
  expect(status).toMatch(/^app-management; /);
  expect(Number(answer.headers.get("Age"))).toBeLessThanOrEqual(BOUND_MS / 1000);
  return { sent, answered: Date.now(), status: answer.status, body: answer.body, cacheStatus: status };
}

/** B's answer to `key` held in its memory: read twice, the second a hit. */
async function primed(key: string, what: Read) {
  const first = await read(b, key, what);
  const again = await read(b, key, what);
  expect(again.cacheStatus, "B serves it from memory").toMatch(/; hit; /);
  return first;
}

/**
 * Reads `what` on B until well past `liveBy`: every answer to a read sent at or after `liveBy` passes `changed`, and
 * there is one.
 */
async function servedBy(liveBy: number, key: string, what: Read, changed: (answer: Awaited<ReturnType<typeof read>>) => boolean) {
  const answers: Awaited<ReturnType<typeof read>>[] = [];
  const after = () => answers.filter((answer) => answer.sent >= liveBy);
  // Past liveBy by half a second and two answers at least, however slow the machine; at most 300 reads.
  while ((Date.now() < liveBy + 500 || after().length < 2) && answers.length < 300) {
    answers.push(await read(b, key, what));
    await new Promise((wait) => setTimeout(wait, 100));
  }
  expect(after().length).toBeGreaterThan(1);
  for (const answer of after()) expect(changed(answer), JSON.stringify(answer)).toBe(true);
  return answers;
}

const paramsOf = (answer: { body: any }) => answer.body?.params;

describe("a change through A, served by B within the bound and never after Live-Everywhere-By", () => {
  it("a deploy", async () => {
    const reader = await newKey("alice@example.com");
    await primed(reader.key, production);
    const { liveBy } = await write(a, "POST", "/configs", {
      base_id: appId,
      config_name: "main",
      parameters: { n: 1 },
      overwrite: true,
    });
    await servedBy(liveBy, reader.key, production, (answer) => answer.status === 200 && paramsOf(answer).n === 1);
  });

  it("a commit", async () => {
    const reader = await newKey("alice@example.com");
    await primed(reader.key, latestOfMain);
    const committed = await write(a, "POST", "/variants/configs/commit", {
      config: { application_ref: { id: appId }, variant_ref: { slug: "main" }, params: { n: 2 } },
    });
    await servedBy(committed.liveBy, reader.key, latestOfMain, (answer) => paramsOf(answer)?.n === 2);
  });

  it("a revert", async () => {
    const reader = await newKey("alice@example.com");
    const first = await read(b, reader.key, production, { "Cache-Control": "no-cache" });
    await write(a, "POST", "/configs", { base_id: appId, config_name: "main", parameters: { n: 3 }, overwrite: true });
    await primed(reader.key, production);
    const { liveBy } = await write(a, "POST", `/configs/deployment/${first.body.environment_ref.id}/revert`);
    await servedBy(liveBy, reader.key, production, (answer) => paramsOf(answer)?.n === paramsOf(first).n);
  });

  it("a change request's apply", async () => {
    const bob = await newKeyOfMember("bob@example.com", "editor");
    const main = await read(a, alice.key, latestOfMain, { "Cache-Control": "no-cache" });
    const proposed = await api(a, "POST", "/change-requests", bob.key, {
      app_id: appId,
      environment: "production",
      variant_revision_id: main.body.variant_ref.id,
      title: "Ship main",
    });
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(200);
    await write(a, "POST", `/change-requests/${proposed.body.id}/reviews`, { kind: "approve", version: proposed.body.version });
    const reader = await newKey("alice@example.com");
    const before = await primed(reader.key, production);
    const { liveBy } = await write(a, "POST", `/change-requests/${proposed.body.id}/apply`, undefined, bob.key);
    await servedBy(
      liveBy,
      reader.key,
      production,
      (answer) => answer.body.environment_ref.version === before.body.environment_ref.version + 1,
    );
  });
});

/** A new key of `email`'s own project, the user made a member of alice's organization with `role` (by the CLI). */
async function newKeyOfMember(email: string, role: string) {
  await adminWrite("org", "add-member", "--org", alice.organization_id, "--email", email, "--role", role);
  return newKey(email);
}

describe("a key or a membership gone: refused everywhere within the bound", () => {
  it("a key deleted through A, and one revoked by the admin CLI", async () => {
    const deleted = await newKey("alice@example.com");
    await primed(deleted.key, production);
    const { liveBy } = await write(a, "DELETE", `/keys/${deleted.prefix}`);
    await servedBy(liveBy, deleted.key, production, (answer) => answer.status === 401);

    const revoked = await newKey("alice@example.com");
    await primed(revoked.key, production);
    const liveByCli = await adminWrite("key", "revoke", "--prefix", revoked.prefix);
    await servedBy(liveByCli, revoked.key, production, (answer) => answer.status === 401);
  });

  it("a member removed through A, and one removed by the admin CLI", async () => {
    for (const through of ["A", "CLI"]) {
      const bob = await newKeyOfMember("bob@example.com", "editor");
      await primed(bob.key, production);
      const query = `email=bob%40example.com&org_id=${alice.organization_id}`;
      const liveBy =
        through === "A"
          ? (await write(a, "DELETE", `/workspaces/${alice.workspace_id}/users?${query}`)).liveBy
          : await adminWrite("org", "remove-member", "--org", alice.organization_id, "--email", "bob@example.com");
      // The key is bob's own project's: it stays live, and his membership no longer lets him see the app.
      await servedBy(liveBy, bob.key, production, (answer) => answer.status === 404);
    }
  });

  it("a role lowered through A and by the admin CLI: B answers what the uncached read answers", async () => {
    for (const through of ["A", "CLI"]) {
      const bob = await newKeyOfMember("bob@example.com", "deployment_manager");
      await primed(bob.key, production);
      const query = `email=bob%40example.com&org_id=${alice.organization_id}&role=deployment_manager`;
      const liveBy =
        through === "A"
          ? (await write(a, "DELETE", `/workspaces/${alice.workspace_id}/roles?${query}`)).liveBy
          : await adminWrite("org", "set-role", "--org", alice.organization_id, "--email", "bob@example.com", "--role", "viewer");
      const uncached = await read(a, bob.key, production, { "Cache-Control": "no-cache" });
      await servedBy(liveBy, bob.key, production, (answer) => answer.status === uncached.status);
    }
  });

  it("an expiring key is refused at its instant, on a hit too", async () => {
    const expiring = await newKey("alice@example.com");
    const expiresAt = Date.now() + 2_500;
    await query(
      dir,
      `UPDATE api_keys SET expires_at = '${new Date(expiresAt).toISOString()}' WHERE prefix = '${expiring.prefix}'`,
    );
    const answers = await servedBy(expiresAt, expiring.key, production, (answer) => answer.status === 401);
    expect(
      answers.some((answer) => answer.answered < expiresAt && answer.cacheStatus.includes("; hit; ")),
      "hits before it",
    ).toBe(true);
  });
});

describe("fresh at once", () => {
  it("no-cache and a newer bookmark on B; A reading its own write", async () => {
    const reader = await newKey("alice@example.com");
    for (const asked of ["no-cache", "bookmark"]) {
      await primed(reader.key, production);
      await read(a, reader.key, production);
      const n = 10 + (asked === "no-cache" ? 0 : 1);
      const { bookmark } = await write(a, "POST", "/configs", {
        base_id: appId,
        config_name: "main",
        parameters: { n },
        overwrite: true,
      });
      const own = await read(a, reader.key, production);
      expect([own.cacheStatus, paramsOf(own)]).toEqual(["app-management; fwd=miss; stored", { n }]);
      const headers: Record<string, string> =
        asked === "no-cache" ? { "Cache-Control": "no-cache" } : { "x-d1-bookmark": bookmark as string };
      const fresh = await read(b, reader.key, production, headers);
      expect([fresh.cacheStatus, paramsOf(fresh)]).toEqual(["app-management; fwd=request; stored", { n }]);
    }
  });
});

/** Steps of the property, through either location or the admin CLI. */
type Step =
  | { kind: "read"; via: 0 | 1; who: number }
  | { kind: "deploy"; via: 0 | 1 }
  | { kind: "revoke"; via: 0 | 1 | "cli"; who: number }
  | { kind: "remove-member"; via: 0 | 1 | "cli" }
  | { kind: "wait"; ms: number };

const WHO = 4; // alice's two keys, bob's own key (a member at first), carol's (never a member)
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("read" as const),
      via: fc.constantFrom(0 as const, 1 as const),
      who: fc.nat(WHO - 1),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("deploy" as const), via: fc.constantFrom(0 as const, 1 as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("revoke" as const),
      via: fc.constantFrom(0 as const, 1 as const, "cli" as const),
      who: fc.nat(1),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("remove-member" as const),
      via: fc.constantFrom(0 as const, 1 as const, "cli" as const),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("wait" as const), ms: fc.integer({ min: 0, max: 2_500 }) }) },
);

describe("a property over random sequences of keys, memberships and deploys through both locations", () => {
  it(
    "no answer to a key the uncached read refuses, none older than the bound, none made for one key reaching another",
    async () => {
      let n = 100;
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 4, maxLength: 10 }), async (steps) => {
          const keys = [
            await newKey("alice@example.com"),
            await newKey("alice@example.com"),
            await newKeyOfMember("bob@example.com", "editor"),
            await newKey("carol@example.com"),
          ];
          const locations = [a, b];
          // When each key stops being served (ms, Infinity: never) and when each deploy is live everywhere.
          const refusedFrom = [Infinity, Infinity, Infinity, -Infinity];
          const deploys: { n: number; sent: number; liveBy: number }[] = [];
          const current = await read(a, alice.key, production, { "Cache-Control": "no-cache" });
          deploys.push({ n: paramsOf(current).n, sent: 0, liveBy: 0 });
          /** One read through `via` as key `who`, held against what the steps changed and when it was live everywhere. */
          const readAndCheck = async (via: 0 | 1, who: number) => {
            const answer = await read(locations[via], keys[who].key, production);
            const uncached = who === 3 ? 404 : who === 2 ? 404 : 401;
            if (answer.status !== 200) {
              // A refusal is the uncached read's own, and only of a key whose change has been made.
              expect(answer.status).toBe(uncached);
              expect(refusedFrom[who]).toBeLessThan(Infinity);
              return;
            }
            // Never to a key the uncached read refuses (carol never; the others from their change's instant on).
            expect(answer.sent, `key ${who} served after it was refused everywhere`).toBeLessThan(refusedFrom[who]);
            // Never older than the bound: the deploy it shows was not yet replaced everywhere when it was asked.
            const shown = deploys.findIndex((deploy) => deploy.n === paramsOf(answer).n);
            expect(shown, `an answer of a deploy made: ${JSON.stringify(answer.body)}`).toBeGreaterThanOrEqual(0);
            expect(deploys[shown].sent).toBeLessThan(answer.answered);
            const replacedBy = deploys[shown + 1];
            if (replacedBy)
              expect(answer.sent, `n=${paramsOf(answer).n} served after n=${replacedBy.n} was live everywhere`).toBeLessThan(
                replacedBy.liveBy,
              );
          };
          for (const s of steps) {
            if (s.kind === "wait") await new Promise((wait) => setTimeout(wait, s.ms));
            else if (s.kind === "deploy") {
              n += 1;
              const sent = Date.now();
              const body = { base_id: appId, config_name: "main", parameters: { n }, overwrite: true };
              deploys.push({ n, sent, liveBy: (await write(locations[s.via], "POST", "/configs", body)).liveBy });
            } else if (s.kind === "revoke" && refusedFrom[s.who] === Infinity) {
              refusedFrom[s.who] =
                s.via === "cli"
                  ? await adminWrite("key", "revoke", "--prefix", keys[s.who].prefix)
                  : (await write(locations[s.via], "DELETE", `/keys/${keys[s.who].prefix}`, undefined, keys[s.who].key)).liveBy;
            } else if (s.kind === "remove-member" && refusedFrom[2] === Infinity) {
              const query = `email=bob%40example.com&org_id=${alice.organization_id}`;
              refusedFrom[2] =
                s.via === "cli"
                  ? await adminWrite("org", "remove-member", "--org", alice.organization_id, "--email", "bob@example.com")
                  : (await write(locations[s.via], "DELETE", `/workspaces/${alice.workspace_id}/users?${query}`)).liveBy;
            } else if (s.kind === "read") await readAndCheck(s.via, s.who);
          }
          // Then once every change is live everywhere: each key through each location, the latest state or a refusal.
          const settled = Math.max(...deploys.map((deploy) => deploy.liveBy), ...refusedFrom.filter(Number.isFinite));
          await new Promise((wait) => setTimeout(wait, Math.max(0, settled - Date.now())));
          for (const via of [0, 1] as const) for (let who = 0; who < WHO; who++) await readAndCheck(via, who);
        }),
        { numRuns: RUNS, endOnFailure: true },
      );
    },
    RUNS * 15_000 + 60_000,
  );
});

describe("a split's arms across a restart of the dev server (docs/SPLITS.md §5)", () => {
  it("each of 50 keys gets the arm of its bucket (bucket < weight) from B, and the same once B starts again", async () => {
    const made = await write(a, "POST", "/apps", { app_name: "split-restart" });
    const split = { id: made.body.app_id as string, salt: "restart", weight: 3000 };
    for (const n of [0, 0])
      await write(a, "POST", "/configs", { base_id: split.id, config_name: "main", parameters: { n }, overwrite: true });
    const next = { application_ref: { id: split.id }, variant_ref: { slug: "next" } };
    await write(a, "POST", "/variants/configs/add", next);
    await write(a, "POST", "/variants/configs/commit", { config: { ...next, params: { next: true } } });
    const started = await api(a, "PUT", `/apps/${split.id}/environments/production/split`, alice.key, {
      candidate: { variant_ref: { slug: "next" } },
      weight: split.weight,
      salt: split.salt,
    });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const keys = Array.from({ length: 50 }, (_, i) => `user-${i}`);
    /** Each key's answer from B: its Config-Split and the params of the arm it got. */
    const arms = async () =>
      Object.fromEntries(
        await Promise.all(
          keys.map(async (key) => {
            const fetch = { application_ref: { id: split.id }, environment_ref: { slug: "production" } };
            const answer = await api(b, "POST", "/variants/configs/fetch", alice.key, fetch, { "Targeting-Key": key });
            return [key, { split: answer.headers.get("Config-Split"), params: answer.body?.params }];
          }),
        ),
      );
    const expected = Object.fromEntries(
      keys.map((key) => {
        const bucket = splitBucket(split.salt, key);
        const arm = bucket < split.weight ? "candidate" : "base";
        const params = arm === "candidate" ? { next: true } : { n: 0 };
        return [key, { split: `${arm}; bucket=${bucket}; weight=${split.weight}; reason=split`, params }];
      }),
    );
    // Both arms among the keys, so that a split sending every key one way would fail here.
    expect(new Set(Object.values(expected).map(({ params }) => JSON.stringify(params))).size).toBe(2);
    const before = await arms();
    expect(before).toEqual(expected);
    await b.stop();
    b = await start("B");
    expect(await arms()).toEqual(before);
  });
});
