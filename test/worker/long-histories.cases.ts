import { beforeAll, describe, expect, it } from "vitest";
import { ENVIRONMENT_REVISIONS_PAGE_ROWS } from "../../src/apps/environments.sql.ts";
import { VARIANT_REVISIONS_PAGE_ROWS } from "../../src/variants/variants.sql.ts";
import {
  type Account,
  createAccount,
  createAppVia,
  deploy,
  expectJson,
  getRevisions,
  legacyConfig,
  revokeApiKey,
  send,
} from "./fixtures";
import { countedShards, databaseOf } from "./pool";

/*
 * The two lists that grow with a history, GET /variants/{variant_id}/revisions and GET /apps/{app_id}/revisions/{env}:
 * read in pages as the body is taken, the first with the request's own batch; the same JSON as one body would be.
 */

let account: Account;
beforeAll(async () => {
  account = await createAccount();
});

/** All round trips so far of a `countedShards()`. */
const total = (trips: () => Record<string, number>) => Object.values(trips()).reduce((sum, count) => sum + count, 0);

/**
 * Revisions `from`..`to` of the variant, written straight to its shard in one statement (the API would take minutes
 * for a thousand large ones), each with params {"n": its number, "prompt": `size` characters}.
 */
async function seedRevisions(variantId: string, from: number, to: number, size: number, by = account) {
  await databaseOf(variantId)
    .prepare(
      `WITH RECURSIVE n(i) AS (SELECT ?2 UNION ALL SELECT i + 1 FROM n WHERE i < ?3)
       INSERT INTO app_variant_revisions (id, variant_id, revision, modified_by, params)
       SELECT ?1 || '-' || i, ?1, i, ?4, json_object('n', i, 'prompt', printf('%.*c', ?5, 'x')) FROM n`,
    )
    .bind(variantId, from, to, by.userId, size)
    .run();
}

/** Deploys `count` more revisions of the environment straight to its shard, each running `variantRevisionId`. */
async function seedDeploys(appId: string, environment: string, variantRevisionId: string, count: number) {
  await databaseOf(appId)
    .prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?4),
            e AS (SELECT id, revision FROM environments WHERE app_id = ?1 AND name = ?2)
       INSERT INTO environment_revisions (id, environment_id, revision, modified_by, deployed_app_variant_revision_id)
       SELECT e.id || '-' || (e.revision + i), e.id, e.revision + i, ?5, ?3 FROM n, e ORDER BY i`,
    )
    .bind(appId, environment, variantRevisionId, count, account.userId)
    .run();
}

/**
 * Reads a JSON array body chunk by chunk, never holding it whole: each element (an object) is parsed alone and passed
 * to `each`; `onChunk` hears each chunk's arrival. Answers what is left around the elements (`[]`), parsed, and the
 * count of chunks.
 */
async function readElements(
  body: ReadableStream<Uint8Array>,
  each: (element: Record<string, unknown>) => void,
  onChunk: () => void,
) {
  const decoder = new TextDecoder();
  // Only these characters change the reader's state; the text between them is taken whole.
  const STRUCTURAL = /["\\{}[\],]/g;
  let level = 0;
  let inString = false;
  // A backslash's next character, to pass over: its index in the chunk (the next chunk's first: 0; none: -1).
  let escapedAt = -1;
  let element: string | null = null;
  let rest = "";
  let chunks = 0;
  for await (const chunk of body) {
    chunks += 1;
    onChunk();
    const text = decoder.decode(chunk, { stream: true });
    let taken = 0;
    const take = (to: number) => {
      if (element !== null) element += text.slice(taken, to);
      else rest += text.slice(taken, to);
      taken = to;
    };
    const escapedInChunk = escapedAt;
    escapedAt = -1;
    for (const { 0: ch, index } of text.matchAll(STRUCTURAL)) {
      if (index === escapedInChunk || index === escapedAt) continue;
      if (inString) {
        if (ch === "\\") escapedAt = index + 1;
        else if (ch === '"') inString = false;
        continue;
      }
      if (ch === '"') inString = true;
      else if (ch === "{" || ch === "[") {
        if (level === 1 && element === null) {
          take(index);
          element = "";
        }
        level += 1;
      } else if (ch === "," && level === 1 && element === null) {
        take(index);
        taken = index + 1;
      } else if (ch === "}" || ch === "]") {
        level -= 1;
        if (level === 1 && element !== null) {
          take(index + 1);
          each(JSON.parse(element));
          element = null;
        }
      }
    }
    take(text.length);
    escapedAt = escapedAt === text.length ? 0 : -1;
  }
  return { rest: JSON.parse(rest) as unknown, chunks };
}

describe("GET /variants/{variant_id}/revisions", () => {
  it("a short history: the whole body as before, in one round trip", async () => {
    const appId = await createAppVia(account.key, { app_name: "short-history" });
    const variantId = await legacyConfig(account.key, appId, "main", { temperature: 0.2 });
    const rows = await databaseOf(variantId)
      .prepare("SELECT id, created_at FROM app_variant_revisions WHERE variant_id = ? ORDER BY revision")
      .bind(variantId)
      .all<{ id: string; created_at: string }>();
    const { bindings, trips } = countedShards();
    const response = await send("GET", `/variants/${variantId}/revisions`, { key: account.key, bindings });
    expect(response.headers.get("Content-Type")).toBe("application/json");
    expect(await expectJson(response)).toEqual(
      [{}, { temperature: 0.2 }].map((parameters, i) => ({
        id: rows.results[i].id,
        revision: i + 1,
        modified_by: account.username,
        config: { config_name: "main", parameters },
        created_at: rows.results[i].created_at,
        commit_message: null,
      })),
    );
    expect(total(trips)).toBe(1);
  });

  it("a thousand revisions of 100 KB: streamed a page at a time, read as the client takes them, all there in order", async () => {
    const appId = await createAppVia(account.key, { app_name: "long-history" });
    const variantId = await legacyConfig(account.key, appId, "main");
    await seedRevisions(variantId, 2, 1000, 100_000);
    const { bindings, trips } = countedShards();
    const response = await send("GET", `/variants/${variantId}/revisions`, { key: account.key, bindings });
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toBe("application/json");
    const tripsAtChunk: number[] = [];
    const revisions: number[] = [];
    const { rest, chunks } = await readElements(
      response.body as ReadableStream<Uint8Array>,
      (revision) => {
        const { parameters } = revision.config as { parameters: { n?: number; prompt?: string } };
        expect([parameters.n, parameters.prompt?.length]).toEqual(
          revision.revision === 1 ? [undefined, undefined] : [revision.revision, 100_000],
        );
        revisions.push(revision.revision as number);
      },
      () => {
        tripsAtChunk.push(total(trips));
      },
    );
    expect(rest).toEqual([]);
    expect(revisions).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    const pages = 1000 / VARIANT_REVISIONS_PAGE_ROWS;
    // Each page read when the one before was taken: the first with the request, then one round trip per page.
    expect(chunks).toBeGreaterThanOrEqual(pages);
    expect(tripsAtChunk[0]).toBe(1);
    expect(total(trips)).toBe(pages);
  }, 120_000);

  it("streamed, each revision is byte for byte what GET of that revision answers; one written meanwhile is left out", async () => {
    const appId = await createAppVia(account.key, { app_name: "paged-history" });
    const variantId = await legacyConfig(account.key, appId, "main");
    const count = VARIANT_REVISIONS_PAGE_ROWS + 10;
    await seedRevisions(variantId, 2, count, 10);
    const response = await send("GET", `/variants/${variantId}/revisions`, { key: account.key });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value, { stream: true });
    const commit = { application_ref: { id: appId }, variant_ref: { slug: "main" }, params: { later: true } };
    expect((await send("POST", "/variants/configs/commit", { key: account.key, body: commit })).status).toBe(200);
    for (let read = await reader.read(); !read.done; read = await reader.read())
      text += decoder.decode(read.value, { stream: true });
    const each = [];
    for (let revision = 1; revision <= count; revision += 1) {
      each.push(await (await send("GET", `/variants/${variantId}/revisions/${revision}`, { key: account.key })).text());
    }
    expect(text).toBe(`[${each.join(",")}]`);
  });

  it("a key revoked while the body streams cuts it short: never a shorter list that parses", async () => {
    const holder = await createAccount();
    const appId = await createAppVia(holder.key, { app_name: "cut-history" });
    const variantId = await legacyConfig(holder.key, appId, "main");
    await seedRevisions(variantId, 2, VARIANT_REVISIONS_PAGE_ROWS + 1, 10, holder);
    const response = await send("GET", `/variants/${variantId}/revisions`, { key: holder.key });
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    await revokeApiKey(databaseOf(holder.key), holder.key.split(".")[0]);
    await expect(
      (async () => {
        for (let read = await reader.read(); !read.done; read = await reader.read());
      })(),
    ).rejects.toThrow();
  });
});

describe("GET /apps/{app_id}/revisions/{environment_name}", () => {
  const deploys = ENVIRONMENT_REVISIONS_PAGE_ROWS * 2 + 200;
  let appId: string;
  let environmentId: string;
  let variantId: string;
  beforeAll(async () => {
    appId = await createAppVia(account.key, { app_name: "long-record" });
    const first = await deploy(appId, "production", "main", account);
    variantId = first.variantId;
    const row = await databaseOf(appId)
      .prepare(
        "SELECT id, deployed_app_variant_revision_id AS running FROM environments WHERE app_id = ? AND name = 'production'",
      )
      .bind(appId)
      .first<{ id: string; running: string }>();
    environmentId = (row as { id: string }).id;
    await seedDeploys(appId, "production", (row as { running: string }).running, deploys - first.revision);
  });

  it("a long history streams a page at a time, the record its ETag names, as one body would be; one deploy meanwhile left out", async () => {
    const { bindings, trips } = countedShards();
    const response = await getRevisions(account.key, appId, "production", { bindings });
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toBe("application/json");
    expect(response.headers.get("ETag")).toBe(`"${environmentId}.${deploys}"`);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value, { stream: true });
    expect(total(trips)).toBe(1);
    await deploy(appId, "production", "main", account);
    let chunks = 1;
    for (let read = await reader.read(); !read.done; read = await reader.read(), chunks += 1) {
      text += decoder.decode(read.value, { stream: true });
    }
    expect(chunks).toBeGreaterThanOrEqual(3);
    expect(total(trips)).toBe(3);
    const record = JSON.parse(text) as { revisions: unknown[] };
    // What c.json of the same value writes, byte for byte.
    expect(text).toBe(JSON.stringify(record));
    const rows = await databaseOf(appId)
      .prepare(
        `SELECT r.id, r.revision, u.username AS modified_by, r.deployed_app_variant_revision_id AS deployed_app_variant_revision,
                r.deployment_id AS deployment, r.created_at
           FROM environment_revisions r JOIN users u ON u.id = r.modified_by
          WHERE r.environment_id = ? AND r.revision <= ? ORDER BY r.revision`,
      )
      .bind(environmentId, deploys)
      .all();
    const running = rows.results.at(-1)?.deployed_app_variant_revision;
    expect(record).toEqual({
      name: "production",
      app_id: appId,
      project_id: account.projectId,
      deployed_app_variant_id: variantId,
      deployed_variant_name: "app.main",
      deployed_app_variant_revision_id: running,
      deployed_variant_archived: false,
      revision: deploys,
      revisions: rows.results,
      organization_id: account.organizationId,
      workspace_id: account.workspaceId,
    });
  });

  it("If-None-Match with its ETag, and HEAD, read no page: one round trip", async () => {
    const record = await getRevisions(account.key, appId, "production");
    const etag = record.headers.get("ETag") as string;
    await record.body?.cancel();
    for (const [method, headers, status] of [
      ["GET", { "If-None-Match": etag }, 304],
      ["HEAD", {}, 200],
    ] as const) {
      const { bindings, trips } = countedShards();
      const response = await send(method, `/apps/${appId}/revisions/production`, { key: account.key, headers, bindings });
      expect(response.status).toBe(status);
      expect(await response.text()).toBe("");
      expect(total(trips)).toBe(1);
    }
  });
});
