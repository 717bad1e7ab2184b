import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { BOOKMARK_HEADER } from "../../src/http/d1-session";
import { type Account, createAccount, createAppVia, deploy, getRevisions, postApp, type RequestOptions, send } from "./fixtures";
import { instrumentD1 } from "./instrumented-d1";
import { databaseOf, inPlaceOfShardFor, shardNameFor } from "./pool";

let account: Account;
let appId: string;
beforeAll(async () => {
  account = await createAccount();
  appId = await createAppVia(account.key, { app_name: "polled" });
});

/** D1's own bookmark format. */
const D1_BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

const list = (environment: string, headers: Record<string, string> = {}, options: RequestOptions = {}) =>
  getRevisions(account.key, appId, environment, { ...options, headers });

describe("conditional GET", () => {
  it("answers 304 with no body for the current ETag, and 200 again once the record changes", async () => {
    const first = await list("production");
    const etag = first.headers.get("ETag");
    expect(etag).toMatch(/^"[^"]+"$/);
    expect((await list("production")).headers.get("ETag")).toBe(etag);

    const unchanged = await list("production", { "If-None-Match": etag ?? "" });
    expect(unchanged.status).toBe(304);
    expect(await unchanged.text()).toBe("");
    expect(unchanged.headers.get("ETag")).toBe(etag);

    await deploy(appId, "production", "main", account);
    const changed = await list("production", { "If-None-Match": etag ?? "" });
    expect(changed.status).toBe(200);
    expect(changed.headers.get("ETag")).not.toBe(etag);
    expect(((await changed.json()) as { revision: number }).revision).toBe(1);
  });

  it("gives each environment its own ETag and ignores ETags that do not match", async () => {
    const staging = (await list("staging")).headers.get("ETag");
    const development = (await list("development")).headers.get("ETag");
    expect(staging).not.toBe(development);
    expect((await list("staging", { "If-None-Match": development ?? "" })).status).toBe(200);
    expect((await list("staging", { "If-None-Match": `"other", ${staging}` })).status).toBe(304);
  });

  it("does not let an ETag stand in for the key", async () => {
    const etag = (await list("production")).headers.get("ETag") ?? "";
    const response = await send("GET", `/apps/${appId}/revisions/production`, { headers: { "If-None-Match": etag } });
    expect(response.status).toBe(401);
  });
});

// Locally there are no replicas, so a read sees every write whatever the session: what is checked is where the
// service starts each D1 session (the argument of withSession, recorded on the real binding), and the header it answers:
// one `SHARD_<n>:<bookmark>` entry per shard, joined by commas.
describe("D1 bookmarks (read replicas)", () => {
  /** The request, on the shard of the account's organization instrumented (with `bindings` besides). */
  async function withSessions(request: (options: RequestOptions) => Promise<Response>, bindings: Partial<Env> = {}) {
    const { db, counter } = instrumentD1(databaseOf(account.organizationId));
    const response = await request({ bindings: { ...bindings, ...inPlaceOfShardFor(account.organizationId, db) } });
    // The last bookmark a session answered: the service asks once its work is done (D1's session also asks itself).
    const bookmark = counter.bookmarks.at(-1);
    expect(bookmark).toMatch(D1_BOOKMARK);
    return {
      response,
      sessions: counter.sessions,
      header: response.headers.get(BOOKMARK_HEADER),
      entry: `${shard()}:${bookmark}`,
    };
  }
  /** The shard the account's requests reach. */
  const shard = () => shardNameFor(account.organizationId);
  let names = 0;
  const create = (headers: Record<string, string>) => (options: RequestOptions) =>
    postApp(account.key, { app_name: `bookmarked ${++names}` }, { ...options, headers });
  const read = (headers: Record<string, string>) => (options: RequestOptions) => list("production", headers, options);
  /** A bookmark D1 answered for the account's shard, bare (as D1 gives it). */
  const d1Bookmark = async () => {
    const { entry } = await withSessions(read({}));
    return entry.slice(`${shard()}:`.length);
  };

  it("starts a create at the primary and a read anywhere when the client sends no bookmark, and answers its shard's", async () => {
    const created = await withSessions(create({}));
    expect([created.response.status, created.sessions, created.header]).toEqual([200, ["first-primary"], created.entry]);
    const listed = await withSessions(read({}));
    expect([listed.response.status, listed.sessions, listed.header]).toEqual([200, ["first-unconstrained"], listed.entry]);
  });

  it("starts the session at the entry the client sends back, which lets a read after a create see it on any replica", async () => {
    const created = await withSessions(create({}));
    const entry = created.header ?? "";
    expect(entry).toBe(created.entry);
    const bookmark = entry.slice(`${shard()}:`.length);
    const { app_id } = (await created.response.json()) as { app_id: string };

    const {
      response,
      sessions,
      header,
      entry: answered,
    } = await withSessions((options) =>
      getRevisions(account.key, app_id, "production", { ...options, headers: { [BOOKMARK_HEADER]: entry } }),
    );
    expect([response.status, sessions, header]).toEqual([200, [bookmark], answered]);
    expect((await withSessions(create({ [BOOKMARK_HEADER]: entry }))).sessions).toEqual([bookmark]);
  });

  it("serves the config fetch by environment from anywhere, and from the client's entry after its deploy, which it sees", async () => {
    const app = { application_ref: { id: await createAppVia(account.key, { app_name: "fetched at the edge" }) } };
    const fetchProduction = (headers: Record<string, string>) => (options: RequestOptions) =>
      send("POST", "/variants/configs/fetch", {
        ...options,
        key: account.key,
        headers,
        body: { ...app, environment_ref: { slug: "production" } },
      });
    expect(
      (await send("POST", "/variants/configs/add", { key: account.key, body: { ...app, variant_ref: { slug: "main" } } })).status,
    ).toBe(200);
    const deployed = await withSessions((options) =>
      send("POST", "/variants/configs/deploy", {
        ...options,
        key: account.key,
        body: { ...app, variant_ref: { slug: "main" }, environment_ref: { slug: "production" } },
      }),
    );
    expect([deployed.response.status, deployed.header]).toEqual([200, deployed.entry]);
    const { environment_ref } = (await deployed.response.json()) as { environment_ref: { id: string } };

    const anywhere = await withSessions(fetchProduction({}));
    expect([anywhere.response.status, anywhere.sessions]).toEqual([200, ["first-unconstrained"]]);
    const after = await withSessions(fetchProduction({ [BOOKMARK_HEADER]: deployed.entry }));
    expect([after.response.status, after.sessions, after.header]).toEqual([
      200,
      [deployed.entry.slice(`${shard()}:`.length)],
      after.entry,
    ]);
    expect(((await after.response.json()) as { environment_ref: { id: string } }).environment_ref.id).toBe(environment_ref.id);
  });

  it("takes a bare bookmark (the format before shards, any case) as SHARD_0's", async () => {
    expect(shard()).toBe("SHARD_0");
    const bookmark = await d1Bookmark();
    for (const bare of [bookmark, bookmark.toUpperCase(), ` ${bookmark} `]) {
      const listed = await withSessions(read({ [BOOKMARK_HEADER]: bare }));
      expect([listed.response.status, listed.sessions, listed.header], bare).toEqual([200, [bookmark], listed.entry]);
    }
  });

  it("drops entries that are not one, or name no shard: the documented start instead, and only its shard's entry back", async () => {
    const bookmark = await d1Bookmark();
    for (const garbage of [
      "garbage",
      "first-primary",
      "first-unconstrained",
      "x".repeat(2000),
      `${bookmark}'--`,
      `${bookmark}x`,
      `${shard()}:garbage`,
      `${shard()}:${bookmark}'--`,
      `${shard()}:first-primary`,
      `${shard().toLowerCase()}:${bookmark}`,
      `${shard()} :${bookmark}`,
      `SHARD_00:${bookmark}`,
      `SHARD_9:${bookmark}`,
      `DIRECTORY:${bookmark}`,
      `:${bookmark}`,
      `${shard()}:${bookmark};${shard()}:${bookmark}`,
      ",,",
    ]) {
      const listed = await withSessions(read({ [BOOKMARK_HEADER]: garbage }));
      expect([listed.response.status, listed.sessions, listed.header], garbage).toEqual([
        200,
        ["first-unconstrained"],
        listed.entry,
      ]);
      const created = await withSessions(create({ [BOOKMARK_HEADER]: garbage }));
      expect([created.response.status, created.sessions, created.header], garbage).toEqual([
        200,
        ["first-primary"],
        created.entry,
      ]);
    }
  });

  describe("with a second shard declared (no bucket routed to it yet: the account's requests reach only their own)", () => {
    // A stand-in binding (instrumented, to show that nothing reaches it) and a SHARD_MAP giving it buckets.
    const secondShard = () => {
      const { db, counter } = instrumentD1(env.DIRECTORY);
      const name = shard() === "SHARD_0" ? "SHARD_1" : "SHARD_0";
      const map = `${shard()}=0-511 ${name}=512-1023`;
      return { name, counter, bindings: { [name]: db, SHARD_MAP: map } as Partial<Env> };
    };
    /** The header of these entries: by shard number, joined by commas. */
    const inShardOrder = (...entries: string[]) =>
      entries.sort((a, b) => Number(/^SHARD_(\d+):/.exec(a)?.[1]) - Number(/^SHARD_(\d+):/.exec(b)?.[1])).join(",");
    /** A well-formed bookmark, of no real database: one only ever echoed. */
    const otherBookmark = (last: string) => `00000000-00000000-00000000-${last.padStart(32, "0")}`;

    it("answers the reached shard's entry and, unchanged, the client's entry for the other, never passing it to a database", async () => {
      const other = secondShard();
      const mine = await d1Bookmark();
      const theirs = otherBookmark("1f");
      for (const sent of [
        `${other.name}:${theirs},${shard()}:${mine}`,
        ` ${shard()}:${mine} , ${other.name}:${theirs} `,
        `${other.name}:${theirs},garbage,SHARD_9:${mine},${mine}`,
      ]) {
        const listed = await withSessions(read({ [BOOKMARK_HEADER]: sent }), other.bindings);
        const entries = [listed.entry, `${other.name}:${theirs}`].sort(
          (a, b) => Number(a.slice(6, a.indexOf(":"))) - Number(b.slice(6, b.indexOf(":"))),
        );
        expect([listed.response.status, listed.sessions, listed.header], sent).toEqual([200, [mine], entries.join(",")]);
      }
      const created = await withSessions(create({ [BOOKMARK_HEADER]: `${other.name}:${theirs}` }), other.bindings);
      expect([created.response.status, created.sessions]).toEqual([200, ["first-primary"]]);
      expect(created.header).toBe(inShardOrder(created.entry, `${other.name}:${theirs}`));
      expect([other.counter.sessions, other.counter.trips]).toEqual([[], 0]);
    });

    it("keeps at most one entry per shard: of two, the later (D1's bookmarks sort by time)", async () => {
      const other = secondShard();
      const earlier = await d1Bookmark();
      await withSessions(create({}));
      const later = await d1Bookmark();
      expect(later > earlier, `${later} after ${earlier}`).toBe(true);
      const [older, newer] = [otherBookmark("2"), otherBookmark("a")];
      const sent = `${other.name}:${newer},${shard()}:${earlier},${other.name}:${older},${later}`;
      const listed = await withSessions(read({ [BOOKMARK_HEADER]: sent }), other.bindings);
      expect([listed.response.status, listed.sessions]).toEqual([200, [later]]);
      expect(listed.header).toBe(inShardOrder(listed.entry, `${other.name}:${newer}`));
    });
  });
});
