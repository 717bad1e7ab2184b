import { beforeAll, describe, expect, it } from "vitest";
import { changeRequests, current, registry } from "../client";
import {
  type Account,
  createAccount,
  expectError,
  expectJson,
  getRevisions,
  murmur3,
  send,
  splitBucket,
  type ValidationIssue,
} from "../fixtures";
import { type Split, splitApp, splitPath, startSplit } from "./split-fixtures";

/*
 * Which revision a read of a split environment gets (docs/SPLITS.md §2): the bucket of its Targeting-Key, the base
 * without one, `Config-Split` on every read of it, through each SDK era's config read.
 */

let owner: Account;
let appId: string;
let appName: string;
let split: Split;

beforeAll(async () => {
  owner = await createAccount();
  appId = await splitApp(owner, ["production", "staging"]);
  split = await startSplit(owner.key, appId, "production", { weight: 1000, salt: "salt-1" });
  const fetched = await expectJson<{ application_ref: { slug: string } }>(await fetchProduction());
  appName = fetched.application_ref.slug;
});

function fetchProduction(headers: Record<string, string> = {}, environment = "production") {
  return send("POST", "/variants/configs/fetch", {
    key: owner.key,
    body: { application_ref: { id: appId }, environment_ref: { slug: environment } },
    headers,
  });
}

/** The arm a read with this key got: the revision its body names, and its `Config-Split`. */
async function armOf(key: string | null) {
  const response = await fetchProduction(key === null ? {} : { "Targeting-Key": key });
  const body = await expectJson<{ variant_ref: { id: string }; params: Record<string, unknown> }>(response);
  return { revision: body.variant_ref.id, header: response.headers.get("Config-Split") };
}

describe("the bucket", () => {
  it("is MurmurHash3 x86_32 (seed 0) of salt:key's UTF-8, modulo 10000: the spec's vectors", () => {
    const utf8 = (text: string) => new TextEncoder().encode(text);
    expect(murmur3(utf8("hello"))).toBe(613153351);
    expect(murmur3(utf8("salt-1:user-1"))).toBe(1205814101);
    expect(murmur3(utf8("salt-1:user-2"))).toBe(3455439977);
    expect(murmur3(utf8("s:été"))).toBe(1024883116);
    expect([splitBucket("salt-1", "user-1"), splitBucket("salt-1", "user-2"), splitBucket("s", "été")]).toEqual([
      4101, 9977, 3116,
    ]);
    // The tail's lengths 0 to 3 (the reference implementation's values).
    expect(["", "a", "ab", "abc"].map((text) => murmur3(utf8(text)))).toEqual([0, 1009084850, 2613040991, 3017643002]);
  });

  it("sends the candidate a share within 1.5 points of the weight over 10,000 keys, at every weight", () => {
    const keys = Array.from({ length: 10_000 }, (_, i) => `user-${i}`);
    for (const weight of [100, 1000, 2500, 5000, 9000]) {
      const share = keys.filter((key) => splitBucket("salt-1", key) < weight).length / keys.length;
      expect(Math.abs(share * 100 - weight / 100), `weight ${weight}`).toBeLessThanOrEqual(1.5);
    }
  });
});

describe("a read of an environment a split runs in", () => {
  it("answers the arm the key's bucket chooses, with Config-Split; the same key always the same arm", async () => {
    const keys = Array.from({ length: 40 }, (_, i) => `user-${i}`);
    for (const key of keys) {
      const bucket = splitBucket("salt-1", key);
      const arm = bucket < 1000 ? "candidate" : "base";
      const read = await armOf(key);
      expect(read).toEqual({
        revision: split[arm].variant_revision_id,
        header: `${arm}; bucket=${bucket}; weight=1000; reason=split`,
      });
      expect(await armOf(key)).toEqual(read);
    }
    expect(keys.some((key) => splitBucket("salt-1", key) < 1000)).toBe(true);
  });

  it("answers Config-Split from the edge cache too: a hit is its key's miss again, header and body", async () => {
    const candidateKey = Array.from({ length: 100 }, (_, i) => `c${i}`).find((k) => splitBucket("salt-1", k) < 1000) as string;
    for (const key of ["user-1", candidateKey]) {
      const read = async () => {
        const response = await send("POST", "/variants/configs/fetch", {
          key: owner.key,
          body: { application_ref: { id: appId }, environment_ref: { slug: "production" } },
          headers: { "Targeting-Key": key },
          bindings: { FRESHNESS_BOUND_SECONDS: "30" },
        });
        const cacheStatus = response.headers.get("Cache-Status");
        return { cacheStatus, split: response.headers.get("Config-Split"), body: await response.text() };
      };
      const miss = await read();
      expect(miss.cacheStatus, key).toBe("app-management; fwd=miss; stored");
      expect(miss.split, key).toMatch(new RegExp(`; bucket=${splitBucket("salt-1", key)}; weight=1000; reason=split$`));
      expect(await read(), key).toEqual({ ...miss, cacheStatus: expect.stringMatching(/^app-management; hit; /) });
    }
  });

  it("answers the base without a key, never at random", async () => {
    for (let i = 0; i < 5; i++) {
      expect(await armOf(null)).toEqual({
        revision: split.base.variant_revision_id,
        header: "base; weight=1000; reason=no_key",
      });
    }
  });

  it("keeps every key on the candidate when the weight is raised, and adds exactly the keys of the buckets below the new weight", async () => {
    const other = await createAccount();
    const otherApp = await splitApp(other);
    const started = await startSplit(other.key, otherApp, "production", { weight: 2000, salt: "raise" });
    const read = async (key: string) => {
      const response = await send("POST", "/variants/configs/fetch", {
        key: other.key,
        body: { application_ref: { id: otherApp } },
        headers: { "Targeting-Key": key },
      });
      return (await expectJson<{ variant_ref: { id: string } }>(response)).variant_ref.id;
    };
    const keys = Array.from({ length: 60 }, (_, i) => `k${i}`);
    const before = await Promise.all(keys.map(read));
    await expectJson(await send("PUT", splitPath(otherApp, "production"), { key: other.key, body: { weight: 6000 } }));
    const after = await Promise.all(keys.map(read));
    const candidate = started.candidate.variant_revision_id;
    keys.forEach((key, i) => {
      if (before[i] === candidate) expect(after[i], key).toBe(candidate);
      expect(after[i] === candidate, key).toBe(splitBucket("raise", key) < 6000);
    });
    expect(after.filter((id) => id === candidate).length).toBeGreaterThan(before.filter((id) => id === candidate).length);
  });

  it("answers the chosen arm through GET /configs and today's SDK's retrieves too", async () => {
    const key = "user-1"; // bucket 4101 with salt-1: the base at 1000
    const candidateKey = Array.from({ length: 100 }, (_, i) => `c${i}`).find((k) => splitBucket("salt-1", k) < 1000) as string;
    for (const [targeting, arm] of [
      [key, "base"],
      [candidateKey, "candidate"],
    ] as const) {
      const headers = { "Targeting-Key": targeting };
      const expected = `${arm}; bucket=${splitBucket("salt-1", targeting)}; weight=1000; reason=split`;
      const older = await registry.getConfig({ key: owner.key }, { base_id: appId, environment_name: "production" }, { headers });
      expect(older.headers.get("Config-Split")).toBe(expected);
      expect((await expectJson<{ current_version: number }>(older)).current_version).toBe(split[arm].revision);
      const retrieved = await current.retrieve(
        { key: owner.key },
        { environment_ref: { slug: "production" }, key: `${appName}.revision` },
        { headers },
      );
      expect(retrieved.headers.get("Config-Split")).toBe(expected);
      expect((await expectJson<{ application_revision: { id: string } }>(retrieved)).application_revision.id).toBe(
        split[arm].variant_revision_id,
      );
    }
  });

  it("answers no Config-Split where no split runs, nor on a read by variant", async () => {
    const staging = await fetchProduction({ "Targeting-Key": "user-1" }, "staging");
    expect(staging.status).toBe(200);
    expect(staging.headers.get("Config-Split")).toBeNull();
    const byVariant = await send("POST", "/variants/configs/fetch", {
      key: owner.key,
      body: { application_ref: { id: appId }, variant_ref: { slug: "main" } },
      headers: { "Targeting-Key": "user-1" },
    });
    expect(byVariant.status).toBe(200);
    expect(byVariant.headers.get("Config-Split")).toBeNull();
  });

  it("refuses a Targeting-Key longer than 256 characters or with a control character (422 at header); 256 pass", async () => {
    const issue: ValidationIssue = {
      loc: ["header", "Targeting-Key"],
      msg: "Value error, Targeting-Key must be 1 to 256 characters, none a control character",
      type: "value_error",
    };
    for (const bad of ["k".repeat(257), "a\u0001b", "tab\there", "é".repeat(257)]) {
      const response = await fetchProduction({ "Targeting-Key": bad });
      expect({ bad: bad.length, status: response.status, body: await response.json() }).toEqual({
        bad: bad.length,
        status: 422,
        body: { detail: [issue] },
      });
    }
    expect((await fetchProduction({ "Targeting-Key": "k".repeat(256) })).status).toBe(200);
    expect((await fetchProduction({ "Targeting-Key": "é".repeat(256) })).status).toBe(200);
  });
});

/** Each config read's ETag names its body (docs/EDGE-DELIVERY.md §2): the arm's, so a weight change that keeps it keeps it. */
describe("a config read's ETag", () => {
  it("is each arm's own, 304 to If-None-Match with it; kept by a weight change that keeps the arm, changed by a promote", async () => {
    const tagged = await splitApp(owner);
    await startSplit(owner.key, tagged, "production", { weight: 5000, salt: "tags" });
    const keys = Array.from({ length: 100 }, (_, i) => `t${i}`);
    const onCandidate = keys.find((key) => splitBucket("tags", key) < 5000) as string;
    const onBase = keys.find((key) => splitBucket("tags", key) >= 6000) as string;
    const read = (key: string, headers: Record<string, string> = {}) =>
      send("POST", "/variants/configs/fetch", {
        key: owner.key,
        body: { application_ref: { id: tagged }, environment_ref: { slug: "production" } },
        headers: { "Targeting-Key": key, ...headers },
      });
    const tagsOf = async () => Promise.all([onBase, onCandidate].map(async (key) => (await read(key)).headers.get("ETag")));
    const [base, candidate] = await tagsOf();
    expect(base).toMatch(/^"[0-9a-f]{64}"$/);
    expect(candidate).toMatch(/^"[0-9a-f]{64}"$/);
    expect(base).not.toBe(candidate);
    for (const [key, tag] of [
      [onBase, base],
      [onCandidate, candidate],
    ] as const) {
      const notModified = await read(key, { "If-None-Match": tag ?? "" });
      expect([notModified.status, await notModified.text(), notModified.headers.get("ETag")]).toEqual([304, "", tag]);
      expect(notModified.headers.get("Config-Split")).toMatch(/; weight=5000; reason=split$/);
    }
    await expectJson(await send("PUT", splitPath(tagged, "production"), { key: owner.key, body: { weight: 6000 } }));
    expect(await tagsOf()).toEqual([base, candidate]);
    await expectJson(await send("DELETE", splitPath(tagged, "production", "?outcome=promote"), { key: owner.key }));
    const promoted = await tagsOf();
    expect(promoted[0]).toBe(promoted[1]);
    expect([base, candidate]).not.toContain(promoted[0]);
  });

  it("without a split: the same while the config is, another after a deploy, through each era's read", async () => {
    const reads = (headers: Record<string, string> = {}) => [
      send("POST", "/variants/configs/fetch", {
        key: owner.key,
        body: { application_ref: { id: appId }, environment_ref: { slug: "staging" } },
        headers,
      }),
      registry.getConfig({ key: owner.key }, { base_id: appId, environment_name: "staging" }, { headers }),
      current.retrieve({ key: owner.key }, { environment_ref: { slug: "staging" }, key: `${appName}.revision` }, { headers }),
    ];
    const tagsOf = async (headers?: Record<string, string>) =>
      (await Promise.all(reads(headers))).map((response) => [response.status, response.headers.get("ETag")]);
    const before = await tagsOf();
    expect(before.map(([status]) => status)).toEqual([200, 200, 200]);
    expect(await tagsOf()).toEqual(before);
    const [notModified] = await Promise.all(reads({ "If-None-Match": String(before[0][1]) }));
    expect([notModified.status, await notModified.text()]).toEqual([304, ""]);
    await expectJson(
      await send("POST", "/variants/configs/deploy", {
        key: owner.key,
        body: { application_ref: { id: appId }, variant_ref: { slug: "next" }, environment_ref: { slug: "staging" } },
      }),
    );
    const after = await tagsOf();
    expect(after.map(([status, tag], i) => [status, tag === before[i][1]])).toEqual([
      [200, false],
      [200, false],
      [200, false],
    ]);
  });
});

const MOVED_ON = "The environment has changed since the ETag given in If-Match: read it again, then retry";

/**
 * The environment record's ETag names what it serves, the split running there too (src/core/environment-etag.ts): an
 * If-Match read before a split's start, change or end is stale for the writes that take it.
 */
describe("the environment's ETag and a split's writes", () => {
  it("changes with a split's start, change and end: an If-Match read before is 412 on PUT, DELETE, a change request and a deploy", async () => {
    const app = await splitApp(owner);
    const etag = async () => (await getRevisions(owner.key, app, "production")).headers.get("ETag") ?? "";
    const put = (body: object, ifMatch: string) =>
      send("PUT", splitPath(app, "production"), { key: owner.key, body, headers: { "If-Match": ifMatch } });
    const before = await etag();
    const started = await expectJson<Split>(await put({ candidate: { variant_ref: { slug: "next" } }, weight: 1000 }, before));
    const running = await etag();
    await expectError(await put({ weight: 2000 }, before), 412, MOVED_ON);
    await expectJson(await put({ weight: 2000 }, running));
    const changed = await etag();
    expect(new Set([before, running, changed]).size).toBe(3);
    await expectError(await put({ weight: 3000 }, running), 412, MOVED_ON);
    const end = (outcome: string, ifMatch: string) =>
      send("DELETE", splitPath(app, "production", `?outcome=${outcome}`), { key: owner.key, headers: { "If-Match": ifMatch } });
    await expectError(await end("promote", running), 412, MOVED_ON);
    const proposal = {
      app_id: app,
      environment: "production",
      title: "More",
      split: { variant_revision_id: started.candidate.variant_revision_id, weight: 4000 },
    };
    await expectError(
      await changeRequests.create({ key: owner.key }, proposal, { headers: { "If-Match": running } }),
      412,
      MOVED_ON,
    );
    await expectJson(await end("abort", changed));
    // No split and the same revision: the state read before the split began.
    expect(await etag()).toBe(before);
    const deploy = (ifMatch: string) =>
      send("POST", "/variants/configs/deploy", {
        key: owner.key,
        body: { application_ref: { id: app }, variant_ref: { slug: "next" }, environment_ref: { slug: "production" } },
        headers: { "If-Match": ifMatch },
      });
    await expectError(await deploy(changed), 412, MOVED_ON);
    await expectJson(await deploy(before));
  });

  it("is answered by each of a split's writes and dry-runs, as a deploy answers it: the environment's state after", async () => {
    const app = await splitApp(owner);
    const start = { candidate: { variant_ref: { slug: "next" } }, weight: 1000 };
    const answered = [];
    for (const [method, query, body] of [
      ["PUT", "?dry_run=true", start],
      ["PUT", "", start],
      ["PUT", "", { weight: 2000 }],
      ["DELETE", "?outcome=promote&dry_run=true"],
      ["DELETE", "?outcome=promote"],
    ] as const) {
      const response = await send(method, splitPath(app, "production", query), { key: owner.key, body });
      const record = await getRevisions(owner.key, app, "production");
      answered.push([response.status, response.headers.get("ETag"), record.headers.get("ETag")]);
    }
    expect(answered.map(([status, etag]) => [status, etag])).toEqual(answered.map(([, , record]) => [200, record]));
    expect(new Set(answered.map(([, , record]) => record)).size).toBe(4);
  });
});
