import fc from "fast-check";
import { expect } from "vitest";
import type { z } from "zod";
import { BASE_URL, getRevisions, hashApiKey, send } from "./fixtures";
import {
  type EnvironmentRevisionRow,
  type EnvironmentRow,
  etagOf,
  expectDeployment,
  type Model,
  type RevisionRow,
  type ShardName,
  type Tracked,
  writerOf,
} from "./fuzz-model";
import {
  type AuthSpec,
  anyString,
  BAD_IDEMPOTENCY_KEY,
  type Body,
  contentType,
  fuzz,
  type Holder,
  headersOf,
  MOVED_ON,
  type Replay,
  requestInput,
  routedAnswer,
  TIMESTAMP,
  type Verdict,
  type World,
} from "./fuzz-support";
import type { changes } from "./harness";
import { PAYLOADS } from "./injection-payloads";
import { bucketFor, shardNameFor } from "./pool";

/*
 * What every fuzzed POST shares (the config registry's, the deployments', POST /apps', the older SDK's saves), and PUT
 * /variants/{variant_id}/parameters (a commit): its two headers and the runner.
 * - Idempotency-Key (docs/http-contract.md, "Retries and races"): read by the contract; a ledger of the keys each API key has used
 *   predicts replays (the first answer again, nothing written) and 422s (a key used for another request), and the row a
 *   kept answer leaves in idempotency_keys (on the shard its request reached) and idempotency_key_requests (on the API
 *   key's home). A key names one request over the pool (docs/SHARDING.md §7e): another request with it, on any shard,
 *   is a 422.
 * - If-Match (deploy and revert): `*` or the environment record's ETag, as GET /apps/{app_id}/revisions/{name} answers
 *   it, lets a deployment through; anything else is a 412 that writes nothing.
 */

export type Changes = ReturnType<typeof changes>;
/** The check of what a request wrote: the rows it changed (idempotency_keys aside), and the database after it. */
export type Check = (changed: Changes, after: Model) => void;
/** Nothing changed: a Check, which can do without the model. */
export const unchanged = (changed: Changes) => expect(changed).toEqual({});
export const anything: Check = () => {};

/** A predicted answer, for an oracle. */
export interface Answer {
  status: number;
  body: unknown;
  response: Response;
  /** The If-Match header sent, if any. */
  ifMatch: string | undefined;
}

/** The answer is one of the refusals given ([status, detail]), and nothing is written. */
export function refusedWithOneOf({ status, body }: Answer, refusals: [number, string][]): Check {
  const allowed = refusals.map(([expected, detail]) => ({ status: expected, body: { detail } }));
  expect(allowed, `answered ${status} ${JSON.stringify(body)}`).toContainEqual({ status, body });
  return unchanged;
}

/** What the service receives of a header's value: fetch drops the whitespace around it. */
const received = (value: string) => value.replace(/^[\t ]+|[\t ]+$/g, "");

// ---------------------------------------------------------------------------------------------------------------
// Idempotency-Key, as the contract reads it.

/** An RFC 8941 string, the draft's form of a key: printable ASCII within quotes, `"` and `\` escaped. */
const QUOTED = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/;

/** A key as the quoted form writes it. */
export const quoted = (key: string) => `"${key.replace(/["\\]/g, "\\$&")}"`;

/**
 * The key a header names: absent, invalid (a 400), valid, or (a quote at an end that does not make a quoted string)
 * either refused or taken as a bare key: the contract says nothing of those.
 */
type KeyReading = { kind: "none" } | { kind: "invalid" } | { kind: "valid" | "bare or invalid"; key: string };

export function readIdempotencyKey(header: string | undefined): KeyReading {
  if (header === undefined) return { kind: "none" };
  const value = received(header);
  const inQuotes = QUOTED.exec(value);
  const key = inQuotes ? inQuotes[1].replace(/\\(["\\])/g, "$1") : value;
  // 1-255 printable ASCII characters, not all spaces.
  if (!/^[\x20-\x7e]{1,255}$/.test(key) || key.trim() === "") return { kind: "invalid" };
  return { kind: !inQuotes && /^"|"$/.test(value) ? "bare or invalid" : "valid", key };
}

/** The SQL payloads a header can carry as they are (printable ASCII). */
const ASCII_PAYLOADS = PAYLOADS.filter((payload) => /^[\x20-\x7e]+$/.test(payload));

const printable = (minLength: number, maxLength: number) =>
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength, maxLength });

/** Header values around the rules: lengths about 255 (bare, quoted, escaped), blanks, quoting, escapes, other bytes. */
const keySyntax = fc.oneof(
  { arbitrary: printable(1, 40), weight: 1 },
  {
    arbitrary: fc
      .tuple(fc.integer({ min: 253, max: 257 }), fc.constantFrom("k", " ", '"', "\\"), fc.boolean())
      .map(([length, filler, inQuotes]) => {
        const key = `k${filler.repeat(length - 2)}k`;
        return inQuotes ? quoted(key) : key;
      }),
    weight: 2,
  },
  {
    arbitrary: fc.constantFrom(
      "",
      " ",
      "   ",
      '""',
      '" "',
      '"',
      '""""',
      '"k',
      'k"',
      '"k"k"',
      '"k\\x"',
      '"k\\"k"',
      '"k\\\\k"',
      "\\",
      "k\tk",
      "k\u007f",
      "caf\u00e9",
      "*",
      'W/"k"',
      "k1, k2",
    ),
    weight: 3,
  },
  { arbitrary: fc.constantFrom(...ASCII_PAYLOADS), weight: 1 },
  { arbitrary: printable(0, 12).map((text) => `${text}\t${text}`), weight: 1 },
);

/** Keys a pool of requests shares (so that API keys reuse them), written one way or another. */
const KEY_POOL = ["k1", '"k1"', " k1 ", "k2", "K1"];

/**
 * How a request's Idempotency-Key is chosen (when it is sent): none; one of a pool; one the API key has kept (for this
 * request: a 422, mostly); a kept request of the route sent again with its key, by its API key (a replay); a fresh
 * one; any text.
 */
type KeyPlan = { kind: "none" } | { kind: "pool" | "kept" | "retry"; n: number; form: number } | { kind: "text"; text: string };
const keyPlan: fc.Arbitrary<KeyPlan> = fc.oneof(
  { arbitrary: fc.constant<KeyPlan>({ kind: "none" }), weight: 8 },
  // Keys kept before often enough that a route whose requests mostly fail before the key is read still meets a key's
  // reuse at FUZZ_RUNS=500 (at weight 4, POST /variants/configs/add once met none: 10 answers kept).
  { arbitrary: fc.record({ kind: fc.constantFrom("pool", "kept", "kept", "retry"), n: fc.nat(), form: fc.nat() }), weight: 7 },
  // Fresh keys, and any text, often enough that the everyday sample (FUZZ_RUNS=500) keeps answers to replay and reuse
  // and meets a malformed key's 400 (at weights 1 and 2 a commit property of 500 requests once kept none).
  { arbitrary: fc.uuid().map((text): KeyPlan => ({ kind: "text", text })), weight: 4 },
  { arbitrary: keySyntax.map((text): KeyPlan => ({ kind: "text", text })), weight: 3 },
);

/** A request as sent, and what identifies it for its Idempotency-Key (method, path and body). */
export interface Sent {
  path: string;
  body: Body;
  type: [string | undefined, boolean | undefined];
  /** The path parameters, when the encoding makes them certain. */
  parameters?: string[];
}

/** A request whose 200 was kept for its Idempotency-Key, and its answer. */
interface Kept {
  /** The shard the request reached, where the key is kept (undefined until its row says, where the oracle cannot tell). */
  shard: ShardName | undefined;
  route: string;
  auth: AuthSpec;
  sent: Sent;
  key: string;
  header: string;
  fingerprint: string;
  body: unknown;
}

/** Method, path and a digest of the body: what the contract compares. */
async function fingerprintOf(method: string, { path, body }: Sent): Promise<string> {
  const url = new URL(`${BASE_URL}${path}`);
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : (body ?? new Uint8Array());
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return `${method} ${url.pathname}${url.search} ${Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The one idempotency_keys row a kept answer adds: the API key's hash, the key verbatim, the id of what the write made
 * (an app, a variant revision or an environment revision; a save that commits and deploys names the variant revision
 * it committed), kept 24 hours; and the one idempotency_key_requests row beside it, in the API key's bucket, for the
 * same request. Returns that id.
 */
export async function expectKeptRow(changed: Changes, apiKey: string, key: string): Promise<string> {
  const { idempotency_keys, idempotency_key_requests, ...rest } = changed;
  const made = rest.app_variant_revisions?.added[0] ?? rest.environment_revisions?.added[0] ?? rest.apps?.added[0];
  expect(made, "a kept answer made something").toBeDefined();
  const at = expect.stringMatching(TIMESTAMP);
  expect(idempotency_keys).toEqual({
    added: [
      {
        key_hash: await hashApiKey(apiKey),
        idempotency_key: key,
        fingerprint: expect.any(String),
        result_id: made?.id,
        bucket: bucketFor(String(made?.id)),
        created_at: at,
        expires_at: at,
      },
    ],
    removed: [],
  });
  const [row] = idempotency_keys!.added as { fingerprint: string; created_at: string; expires_at: string }[];
  expect(Date.parse(row.expires_at) - Date.parse(row.created_at), "kept for 24 hours").toBe(DAY_MS);
  expect(idempotency_key_requests).toEqual({
    added: [
      {
        key_hash: await hashApiKey(apiKey),
        idempotency_key: key,
        fingerprint: row.fingerprint,
        bucket: bucketFor(apiKey),
        created_at: at,
        expires_at: at,
      },
    ],
    removed: [],
  });
  return String(made?.id);
}

/** The keys each API key has used, with what they answered; counts, by property, of what the keys did. */
export class KeyLedger {
  /** By API key: what it kept, each key at most once. */
  private readonly kept = new Map<string, Kept[]>();
  readonly counts = new Map<string, Record<string, number>>();

  count(label: string, what: string) {
    const counts = this.counts.get(label) ?? {};
    counts[what] = (counts[what] ?? 0) + 1;
    this.counts.set(label, counts);
  }

  /** What the holder's API key kept under `key` (at most one), whichever shard it was kept on. */
  find(holder: Holder, key: string): Kept[] {
    const kept = this.kept.get(holder.key) ?? [];
    return kept.filter((each) => each.key === key);
  }

  keep(holder: Holder, kept: Kept) {
    this.kept.set(holder.key, [...(this.kept.get(holder.key) ?? []), kept]);
  }

  /**
   * The header a plan sends and, for a retry, the kept request of this route sent again (by its API key); a key kept
   * is one of the holder's own, kept on `shard` (the one the request reaches) when it has one there; else one kept
   * elsewhere, which the request does not find (it runs as a first one).
   */
  header(
    plan: KeyPlan,
    holder: Holder | undefined,
    route: string,
    shard: ShardName | undefined,
  ): { header?: string; retry?: Kept } {
    if (plan.kind === "none") return {};
    if (plan.kind === "text") return { header: plan.text };
    const own = (holder && this.kept.get(holder.key)) || [];
    const here = own.filter((kept) => kept.shard === shard);
    const candidates =
      plan.kind === "retry"
        ? [...this.kept.values()].flat().filter((kept) => kept.route === route)
        : here.length > 0
          ? here
          : own;
    if (plan.kind === "pool" || candidates.length === 0) return { header: KEY_POOL[plan.n % KEY_POOL.length] };
    const kept = candidates[plan.n % candidates.length];
    // The key as first sent, quoted, or quoted within whitespace: the same key.
    const header = [kept.header, quoted(kept.key), ` ${quoted(kept.key)}\t`][plan.form % 3];
    return plan.kind === "retry" ? { header, retry: kept } : { header };
  }
}

/** What a request's Idempotency-Key makes of its answer: see `fuzzPost` for the order of the checks. */
class KeyedAnswer {
  private kept: Kept | undefined;
  private replayed = false;

  private constructor(
    private readonly ledger: KeyLedger,
    private readonly label: string,
    private readonly auth: AuthSpec,
    private readonly reading: KeyReading,
    private readonly header: string | undefined,
    private readonly sent: Sent,
    private readonly fingerprint: string,
    private readonly status: number,
    private readonly body: unknown,
    private readonly replayHeader: string | null,
  ) {}

  /** The reading of the header, settled by the answer where the contract leaves it open (refused, or a bare key). */
  static async of(
    ledger: KeyLedger,
    label: string,
    method: string,
    auth: AuthSpec,
    header: string | undefined,
    sent: Sent,
    response: Response,
  ) {
    let reading = readIdempotencyKey(header);
    const text = await response.clone().text();
    const body = (() => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return undefined;
      }
    })();
    if (reading.kind === "bare or invalid") {
      const refused = response.status === 400 && BAD_IDEMPOTENCY_KEY.test((body as { detail?: string })?.detail ?? "");
      reading = refused ? { kind: "invalid" } : { kind: "valid", key: reading.key };
    }
    if (auth.holder && reading.kind !== "none") ledger.count(label, reading.kind === "valid" ? "valid key" : "invalid key");
    const replayHeader = response.headers.get("Idempotent-Replayed");
    return new KeyedAnswer(
      ledger,
      label,
      auth,
      reading,
      header,
      sent,
      await fingerprintOf(method, sent),
      response.status,
      body,
      replayHeader,
    );
  }

  /** What this API key kept under the request's key, on any shard. */
  private keptBefore(): Kept[] {
    const key = this.reading.kind === "valid" ? this.reading.key : undefined;
    return key !== undefined && this.auth.holder ? this.ledger.find(this.auth.holder, key) : [];
  }

  /**
   * An invalid key is a 400 (or another refusal of the request: the contract does not order them); a key kept for
   * another request, on any shard, may be the 422 of a request whose validity the verdict leaves open.
   */
  judge(verdict: Verdict) {
    if (this.reading.kind === "invalid") verdict.fail(400);
    const open = [...verdict.failures, ...verdict.possible].some((refusal) => refusal.status === 422);
    if (this.keptBefore().some((kept) => kept.fingerprint !== this.fingerprint) && open)
      verdict.possible.push({ status: 422, loc: ["header", "Idempotency-Key"] });
  }

  /** A refused request: a 400 of an invalid key says so. */
  refused() {
    if (this.status === 400 && this.reading.kind === "invalid") {
      expect((this.body as { detail: string }).detail).toMatch(BAD_IDEMPOTENCY_KEY);
      this.ledger.count(this.label, "400 for the key");
    }
    if (this.status === 422 && JSON.stringify(this.body).includes('"loc":["header","Idempotency-Key"]'))
      this.ledger.count(this.label, "422 for a key used before");
  }

  /**
   * The outcome of a request the route takes, routed to `shard`: with a key this API key has kept (on any shard), the
   * first answer again (same method, path and body) or a 422 naming the header (another request; a read, which keeps
   * nothing, may also answer as ever); else what `predicted` says, kept when `keeps` (a write) and it is a 200. Where
   * the oracle cannot tell the shard (undefined): the same request reaches the shard of its first answer, so a retry
   * still replays; another request may be the 422 or run as a first one.
   */
  outcome(keeps: boolean, shard: ShardName | undefined, predicted: () => Check): Check {
    const key = this.reading.kind === "valid" ? this.reading.key : undefined;
    const kept = this.keptBefore();
    const first = kept.find((each) => each.fingerprint === this.fingerprint);
    const answer = { status: this.status, body: this.body };
    if (first && keeps) {
      expect(answer, "a retry replays the first answer").toEqual({ status: 200, body: first.body });
      this.replayed = true;
      this.ledger.count(this.label, "replayed");
      return unchanged;
    }
    const keyReused = this.status === 422 && JSON.stringify(this.body).includes('"loc":["header","Idempotency-Key"]');
    if (kept.length > 0 && (keeps || this.status === 422) && (shard !== undefined || keyReused)) {
      expect(answer, "a key used for another request").toEqual({
        status: 422,
        body: { detail: [expect.objectContaining({ loc: ["header", "Idempotency-Key"] })] },
      });
      this.ledger.count(this.label, "422 for a key used before");
      return unchanged;
    }
    // Kept before the oracle has its say, so that the ledger follows the service even where the oracle fails.
    if (keeps && key !== undefined && this.auth.holder && this.status === 200) {
      const { label: route, auth, sent, header, fingerprint, body } = this;
      this.kept = { shard, route, auth, sent, key, header: header!, fingerprint, body };
      this.ledger.keep(this.auth.holder, this.kept);
    }
    return predicted();
  }

  /**
   * Checks the rows the request changed: idempotency_keys against the ledger (one row for a kept answer: the API key's
   * hash, the key verbatim, what the write made, 24 hours; on the shard the request reached, which what it made names),
   * the others with `check`.
   */
  async settle(changed: Changes, after: Model, check: Check) {
    const { idempotency_keys, idempotency_key_requests, ...rest } = changed;
    check(rest, after);
    expect(this.replayHeader, "Idempotent-Replayed").toBe(this.replayed ? "true" : null);
    if (!this.kept || !this.auth.holder) {
      expect([idempotency_keys, idempotency_key_requests], "a key kept for an answer that is not").toEqual([
        undefined,
        undefined,
      ]);
      return;
    }
    const keptOn = shardNameFor(await expectKeptRow(changed, this.auth.holder.key, this.kept.key));
    if (this.kept.shard !== undefined) expect(keptOn, "kept on the shard the request reached").toBe(this.kept.shard);
    this.kept.shard = keptOn;
    this.ledger.count(this.label, "kept");
  }
}

// ---------------------------------------------------------------------------------------------------------------
// If-Match.

/**
 * How If-Match is chosen: none, `*`, the target's ETag as its record answers it, or one of another state: older or
 * newer, another environment's, weak, the revision with leading zeros, the id upper-cased, without quotes, in a list
 * with another tag; or any text.
 */
type IfMatchPlan = {
  kind: "none" | "*" | "current" | "stale" | "other" | "weak" | "padded" | "upper" | "unquoted" | "list" | "text";
  n: number;
  text: string;
};
const ifMatchPlan: fc.Arbitrary<IfMatchPlan> = fc.record({
  kind: fc.oneof(
    { arbitrary: fc.constant("none" as const), weight: 8 },
    {
      arbitrary: fc.constantFrom(
        // "stale" thrice: the everyday sample must meet a deploy's 412 (a stale ETag on an otherwise valid request).
        ...([
          "*",
          "current",
          "current",
          "current",
          "stale",
          "stale",
          "stale",
          "other",
          "weak",
          "padded",
          "upper",
          "unquoted",
          "list",
        ] as const),
      ),
      weight: 7,
    },
    { arbitrary: fc.constant("text" as const), weight: 1 },
  ),
  n: fc.nat(),
  text: fc.oneof(
    fc.constantFrom(...ASCII_PAYLOADS),
    anyString.map((text) => text.replace(/[^\x20-\x7e]/g, "")),
  ),
});

/** The ETag of an environment's record, as GET /apps/{app_id}/revisions/{environment_name} answers it to a reader. */
async function currentETag(world: World, model: Model, environment: EnvironmentRow): Promise<string> {
  const app = model.apps.get(environment.app_id)!;
  const response = await getRevisions(writerOf(world, app.project_id).key, app.id, environment.name);
  expect(response.status).toBe(200);
  await response.arrayBuffer();
  const etag = response.headers.get("ETag");
  expect(etag, "the record's ETag names the environment's state").toBe(etagOf(environment));
  return etag!;
}

/** The If-Match header a plan sends, for the environment the request most likely targets (else any). */
async function ifMatchText(plan: IfMatchPlan, target: EnvironmentRow | undefined, model: Model, world: World) {
  if (plan.kind === "none") return undefined;
  if (plan.kind === "text") return plan.text;
  if (plan.kind === "*") return ["*", " *", "*\t"][plan.n % 3];
  const all = [...model.environments.values()];
  const environment = target ?? all[plan.n % all.length];
  const { id, revision } = environment;
  const etag = etagOf(environment);
  switch (plan.kind) {
    case "current":
      return await currentETag(world, model, environment);
    case "stale":
      return `"${id}.${revision + [-1, 1, 2][plan.n % 3]}"`;
    case "other": {
      const others = all.filter((row) => row.id !== id);
      return etagOf(others[plan.n % others.length]);
    }
    case "weak":
      return `W/${etag}`;
    case "padded":
      return `"${id}.${"0".repeat(1 + (plan.n % 3))}${revision}"`;
    case "upper":
      return `"${id.toUpperCase()}.${revision}"`;
    case "unquoted":
      return `${id}.${revision}`;
    default:
      return plan.n % 2 === 0 ? `${etag}, "x"` : `"x", ${etag}`;
  }
}

/**
 * Whether If-Match lets a deployment to the environment through: none, `*` or exactly its ETag do (strong comparison,
 * RFC 9110); a list holding it, the contract does not say (undefined); anything else does not.
 */
function ifMatchAllows(header: string | undefined, environment: EnvironmentRow): boolean | undefined {
  if (header === undefined) return true;
  const value = received(header);
  if (value === "*" || value === etagOf(environment)) return true;
  return value.split(",").some((tag) => received(tag) === etagOf(environment)) ? undefined : false;
}

/**
 * A deployment (deploy or revert) the contract lets through, of variant revision `deployed` to `environment`: a 412
 * when If-Match does not name the environment's state, writing nothing; else a 200 (`ok` checks its body), exactly one
 * deployment, the next environment revision and the environment moved onto it, and the environment's new ETag
 * (required when `tagged`).
 */
export function deployed(
  answer: Answer,
  holder: Holder,
  environment: EnvironmentRow,
  deployed: RevisionRow,
  { tagged, ok }: { tagged: boolean; ok: (made: EnvironmentRevisionRow, after: Model) => void },
): Check {
  const allowed = ifMatchAllows(answer.ifMatch, environment);
  if (allowed === false || (allowed === undefined && answer.status === 412)) return refusedWithOneOf(answer, [[412, MOVED_ON]]);
  expect(answer.status).toBe(200);
  const etag = answer.response.headers.get("ETag");
  if (tagged || etag !== null)
    expect(etag, "ETag: the environment's new state").toBe(etagOf({ ...environment, revision: environment.revision + 1 }));
  return (changed, after) => ok(expectDeployment(changed, environment, deployed, holder.userId), after);
}

// ---------------------------------------------------------------------------------------------------------------
// Routing (docs/SHARDING.md §3.1).

/** What a request names for "the key's project" (its app by name, or nothing). */
export const BY_KEY = Symbol("the key's project");
/** What a request names, in the order the service resolves it: an id, BY_KEY, or (not named) null or undefined. */
export type RouteRef = string | typeof BY_KEY | null | undefined;

/** The shard a request reaches: that of the first ref given, else that of the caller's key. */
export function routedShard(refs: RouteRef[], holder: Holder): ShardName {
  const ref = refs.find((given) => given !== null && given !== undefined) ?? BY_KEY;
  return shardNameFor(ref === BY_KEY ? holder.key : ref);
}

// ---------------------------------------------------------------------------------------------------------------
// The runner.

/** What a test file's POST properties share: the world, the database as tracked, the keys used so far. */
export interface PostFuzzing {
  world: World;
  db: Tracked;
  keys: KeyLedger;
}

/** The parts of every fuzzed POST. */
interface PostParts {
  type: [string | undefined, boolean | undefined];
  key: KeyPlan;
  ifMatch: IfMatchPlan;
}
type Generated<T> = T & PostParts & { auth: AuthSpec; slash: boolean; extra: Record<string, string> };

interface PostSpec<T extends object, R> {
  /** POST (the default), or PUT for PUT /variants/{variant_id}/parameters. */
  method?: "POST" | "PUT";
  parts: { [K in keyof T]: fc.Arbitrary<T[K]> };
  /** The request a generated value makes of the database as it is (`target`: the environment If-Match is likely about). */
  plan: (value: Generated<T>, model: Model) => Omit<Sent, "type"> & { target?: EnvironmentRow };
  /** The request as the contract reads it: the refusals it must (or may) get, and what it asks for when valid. */
  read: (sent: Sent) => { verdict: Verdict; request?: R };
  /** What a valid request names, in the order the service resolves it: which shard it reaches (`routedShard`). */
  routedBy: (request: R) => RouteRef[];
  /** The outcome of a valid request, from the database before it, as the shard it reaches holds it. */
  predict: (request: R, holder: Holder, model: Model, answer: Answer) => Check;
  ok: z.ZodType;
  details?: Record<number, RegExp>;
  /** A write, whose 200 is kept for its Idempotency-Key. */
  keeps: boolean;
  /** Whether If-Match is sent (deploy and revert). */
  ifMatch?: boolean;
  mustSee: number[];
  runs?: number;
}

/**
 * Fuzzes POST (or `spec.method`) `route` (e.g. "/configs/deployment/:deployment_revision_id/revert") through `fuzz`:
 * each generated request is planned from the database as it is, sent with its headers (a retry sends a kept request
 * again), and its answer checked: documented; refused where the verdict says (an invalid Idempotency-Key adds a 400);
 * else a replay, a 422 for a key used before (on the shard the request reaches), or the oracle's outcome from that
 * shard's rows; then the rows it changed, idempotency_keys included. Prints how often the oracle predicted and what the
 * keys did, and checks that it did predict and that every outcome of a key was reached.
 */
export async function fuzzPost<T extends object, R>(fuzzing: PostFuzzing, replay: Replay, route: string, spec: PostSpec<T, R>) {
  const { world, db, keys } = fuzzing;
  const method = spec.method ?? "POST";
  const label = `${method} ${route}`;
  const parts = { ...spec.parts, type: contentType, key: keyPlan, ifMatch: ifMatchPlan };
  const input = requestInput<T & PostParts>(world, parts as { [K in keyof (T & PostParts)]: fc.Arbitrary<(T & PostParts)[K]> });
  /** The shard a request reaches, where the oracle can read what it names. */
  const shardOf = (request: R | undefined, holder: Holder | undefined) =>
    request === undefined || holder === undefined ? undefined : routedShard(spec.routedBy(request), holder);
  let predicted = 0;
  await fuzz(
    label,
    replay,
    input,
    async (value) => {
      const model = db.model;
      const { extra } = value;
      const planned = spec.plan(value, model);
      const plannedRequest = spec.read({ ...planned, type: value.type }).request;
      const { header, retry } = keys.header(value.key, value.auth.holder, label, shardOf(plannedRequest, value.auth.holder));
      const auth = retry?.auth ?? value.auth;
      const sent: Sent = retry?.sent ?? { ...planned, type: value.type };
      const ifMatch = spec.ifMatch ? await ifMatchText(value.ifMatch, planned.target, model, world) : undefined;
      const headers = {
        ...headersOf(auth, extra, sent.type[0]),
        ...(header !== undefined ? { "Idempotency-Key": header } : {}),
        ...(ifMatch !== undefined ? { "If-Match": ifMatch } : {}),
      };
      const response = await send(method, sent.path, { rawBody: sent.body, headers });
      const changed = await db.changes();
      const keyed = await KeyedAnswer.of(keys, label, method, auth, header, sent, response);
      const check = await (async (): Promise<Check> => {
        const answer = await routedAnswer(response, { path: sent.path, route, auth }, spec.ok, spec.details);
        if (!answer) return response.status === 200 ? keyed.outcome(spec.keeps, undefined, () => anything) : unchanged;
        const { verdict, request } = spec.read(sent);
        const shard = shardOf(request, answer.holder);
        keyed.judge(verdict);
        if (!verdict.accepted(response.status, answer.body)) {
          if (response.status === 200 && verdict.unpredictable) return keyed.outcome(spec.keeps, shard, () => anything);
          keyed.refused();
          return unchanged;
        }
        if (request === undefined || shard === undefined) return unchanged;
        const expected = { status: response.status, body: answer.body, response, ifMatch };
        return keyed.outcome(spec.keeps, shard, () => {
          predicted += 1;
          return spec.predict(request, answer.holder, model.on(shard), expected);
        });
      })();
      await keyed.settle(changed, db.model, check);
      return response.status;
    },
    spec.mustSee,
    spec.runs,
  );
  const counts = keys.counts.get(label) ?? {};
  console.info(`${label}: the oracle predicted ${predicted} answers; Idempotency-Key: ${JSON.stringify(counts)}`);
  if (replay[label]?.path !== undefined) return;
  expect(predicted, "the oracle never predicted an answer").toBeGreaterThan(0);
  const outcomes = spec.keeps ? ["400 for the key", "kept", "replayed", "422 for a key used before"] : ["400 for the key"];
  for (const outcome of outcomes) expect(counts[outcome] ?? 0, `Idempotency-Key: ${outcome} never seen`).toBeGreaterThan(0);
}
