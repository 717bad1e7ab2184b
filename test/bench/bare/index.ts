/**
 * The least possible read (BENCHMARKS.md round 15): for each read the bench holds against it, a handler that does the
 * route's own work and nothing else. No Hono, no zod, no middleware, no request log; what it keeps is the route's:
 *   - the key parsed and hashed, and the per-key rate limit;
 *   - the shard of the request's bucket, in a D1 session;
 *   - the service's own batch, built by the functions and SQL constants of src/ behind the key check and the moved
 *     guard, in one round trip (CallerDb);
 *   - the same answer body, with its ETag (the record's state, a config's body's SHA-256) and the bookmark header.
 * It serves the bench's requests only: a body of another shape is not validated, and a failure is a bare 4xx.
 *
 * It runs under `wrangler dev` with the service's own wrangler config, `main` pointing here (test/bench/prepare.ts
 * `bareConfig`): the same bindings, vars and compatibility date. Its D1 state is a copy of the service's seeded data.
 *   GET  /ready                                         200 once wrangler dev serves it
 *   GET  /apps/{app_id}/revisions/{environment_name}   the GET of a record
 *   POST /variants/configs/fetch                       the config fetch: `environment_ref` and `application_ref`
 *   POST /applications/revisions/retrieve              `retrieve` by environment: `environment_ref` and `key`
 * and, for the config fetch sent with `x-bare-hit: 1`, a hit's own work (docs/EDGE-DELIVERY.md §4): the key hashed
 * and rate-limited, the answer kept in the isolate's memory by key and request looked up and answered with its Age
 * and Cache-Status; the read above when none is kept or it is FRESHNESS_BOUND_SECONDS old.
 */
import { toRevision } from "../../../src/applications/revisions.schemas";
import { retrieveRevision } from "../../../src/applications/revisions.sql.ts";
import { toEnvironmentRevisions, toRevisionEntry } from "../../../src/apps/environments.schemas";
import { readEnvironmentRevisions } from "../../../src/apps/environments.sql.ts";
import { hashApiKey, parseAuthorization } from "../../../src/auth/api-keys";
import { type ConfigRefs, configRefOrder, fetchConfig, type Ref } from "../../../src/core/configs.sql.ts";
import { environmentETag } from "../../../src/core/environment-etag";
import { type BucketRef, bucketedSince, bucketOfId, bucketOfPrefix } from "../../../src/db/buckets";
import { Caller } from "../../../src/db/caller";
import { CallerDb } from "../../../src/db/handles";
import { shardNamed, shardNameOf } from "../../../src/db/pool";
import { BOOKMARK_HEADER } from "../../../src/http/d1-session";
import { sha256OfText } from "../../../src/http/digest";
import { decidingRef } from "../../../src/http/request-bucket";
import { toConfigOutput } from "../../../src/variants/configs.schemas";

const JSON_TYPE = "application/json";
const GET_RECORD = /^\/apps\/([^/]+)\/revisions\/([^/]+)$/;
/** Today's SDK names the app in `key` as `<app name>.revision`. */
const KEY_SUFFIX = ".revision";

/** A ref as sent: any of its keys may be missing. */
type SentRef = Partial<Ref> | undefined;

/** A ref as the route's schema leaves it: every key present, null when not sent. */
const ref = (sent: SentRef): Ref | null =>
  sent ? { slug: sent.slug ?? null, version: sent.version ?? null, id: sent.id ?? null } : null;

/**
 * `read` as the request's key on the shard of the request's bucket (that of the first of `routedBy` given, an id's or
 * the key's prefix's, as the route's `readAs` routes it), in a session from the nearest replica: the answer of
 * `answer` with the shard's bookmark and its ETag (none given: the body's SHA-256, as a config read's); 401 when the key
 * is not live.
 */
async function readAsKey<T>(
  request: Request,
  env: Env,
  routedBy: BucketRef[],
  read: (db: CallerDb) => Promise<T | null>,
  answer: (found: T) => { body: unknown; etag?: string },
): Promise<Response> {
  const parsed = parseAuthorization(request.headers.get("Authorization") ?? undefined);
  if (!parsed) return new Response(null, { status: 401 });
  const keyHash = await hashApiKey(parsed.key);
  if (!(await env.KEY_RATE_LIMITER.limit({ key: keyHash })).success) return new Response(null, { status: 429 });
  const deciding = decidingRef(routedBy);
  const bucket = typeof deciding === "string" ? bucketOfId(deciding, bucketedSince(env)) : bucketOfPrefix(parsed.prefix);
  const shard = shardNameOf(env, bucket);
  const session = shardNamed(env, shard).withSession("first-unconstrained");
  let found: T | null;
  try {
    found = await read(new CallerDb(session, Caller.withKey(parsed.prefix, keyHash), undefined, bucket));
  } catch {
    return new Response(null, { status: 401 });
  }
  if (found === null) return new Response(null, { status: 404 });
  const { body, etag } = answer(found);
  const text = JSON.stringify(body);
  return new Response(text, {
    headers: {
      "content-type": JSON_TYPE,
      [BOOKMARK_HEADER]: `${shard}:${session.getBookmark()}`,
      ETag: etag ?? `"${await sha256OfText(text)}"`,
    },
  });
}

/** The hit handler's answers by key hash and request, with when they were read. */
const kept = new Map<string, { body: string; etag: string | null; at: number }>();

async function hit(request: Request, env: Env): Promise<Response> {
  const parsed = parseAuthorization(request.headers.get("Authorization") ?? undefined);
  if (!parsed) return new Response(null, { status: 401 });
  const keyHash = await hashApiKey(parsed.key);
  if (!(await env.KEY_RATE_LIMITER.limit({ key: keyHash })).success) return new Response(null, { status: 429 });
  const text = await request.text();
  const key = `${keyHash} ${request.method} ${new URL(request.url).pathname}\n\n${text}`;
  const now = Date.now();
  const found = kept.get(key);
  const bound = Number(env.FRESHNESS_BOUND_SECONDS ?? "5") * 1000;
  if (found && now - found.at < bound) {
    return new Response(found.body, {
      headers: {
        "content-type": JSON_TYPE,
        ...(found.etag ? { ETag: found.etag } : {}),
        Age: String(Math.floor((now - found.at) / 1000)),
        "Cache-Status": `app-management; hit; ttl=${Math.floor((found.at + bound - now) / 1000)}`,
      },
    });
  }
  const headers = new Headers(request.headers);
  headers.delete("x-bare-hit");
  const answer = await serve(new Request(request.url, { method: request.method, headers, body: text }), env);
  if (answer.status !== 200) return answer;
  const body = await answer.text();
  kept.set(key, { body, etag: answer.headers.get("ETag"), at: now });
  return new Response(body, answer);
}

async function serve(request: Request, env: Env): Promise<Response> {
  if (request.headers.get("x-bare-hit") === "1") return hit(request, env);
  const { pathname } = new URL(request.url);
  if (pathname === "/ready") return new Response("ok");
  const record = request.method === "GET" ? GET_RECORD.exec(pathname) : null;
  if (record) {
    const [, appId, environmentName] = record;
    return readAsKey(
      request,
      env,
      [appId],
      (db) => readEnvironmentRevisions(db, appId, environmentName),
      ({ environment, revisions }) => ({
        // The bench's histories are short: one page.
        body: toEnvironmentRevisions(environment, revisions.first.map(toRevisionEntry)),
        etag: environmentETag(
          { environmentId: environment.id, revision: environment.revision, split: environment.split },
          environment.deployedVariantArchived === 1,
        ),
      }),
    );
  }
  if (request.method === "POST" && pathname === "/variants/configs/fetch") {
    const sent: { environment_ref?: SentRef; application_ref?: SentRef } = await request.json();
    const refs: ConfigRefs = { application: ref(sent.application_ref), variant: null, environment: ref(sent.environment_ref) };
    return readAsKey(
      request,
      env,
      configRefOrder(refs),
      (db) => fetchConfig(db, refs),
      (config) => ({ body: toConfigOutput(config) }),
    );
  }
  if (request.method === "POST" && pathname === "/applications/revisions/retrieve") {
    const sent: { environment_ref?: SentRef; key?: string } = await request.json();
    const named = { slug: (sent.key ?? "").slice(0, -KEY_SUFFIX.length), version: null, id: null };
    const lookup = {
      by: "environment" as const,
      refs: { application: named, variant: null, environment: ref(sent.environment_ref) },
      environmentId: null,
    };
    return readAsKey(
      request,
      env,
      configRefOrder(lookup.refs),
      async (db) => {
        const found = await retrieveRevision(db, lookup);
        return typeof found === "object" ? found : null;
      },
      (config) => ({ body: { count: 1, application_revision: toRevision(config) } }),
    );
  }
  return new Response(null, { status: 404 });
}

export default { fetch: serve } satisfies ExportedHandler<Env>;
