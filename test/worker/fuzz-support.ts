import { env } from "cloudflare:workers";
import fc from "fast-check";
import { expect } from "vitest";
import { z } from "zod";
import { A_TIME, type Account, createAccount, createTeam, FORBIDDEN, issueKey, type Role, revokeApiKey, send } from "./fixtures";
import type { EnvironmentRow, Model, RevisionRow } from "./fuzz-model";
import { type Changes, type ExpectedEvent, withEvents } from "./harness";
import { databaseOf } from "./pool";

/*
 * What the fuzz files share: the contract as the tests read it (written out independently of src/), the accounts
 * requests are made as, the arbitraries, and the runner that counts, prints seeds and replays.
 *
 * Replaying: every property prints its seed ("seed: ...") with its status counts; a failing one also prints fast-check's
 * "seed: ..., path: ...". Put them into the file's REPLAY under the property's label (e.g. `REPLAY["PATCH /apps/:app_id"]
 * = { seed, path }`): with a path only the counterexample and its shrinks run (the run-count checks are skipped), with
 * a seed alone the whole run repeats. A failure worth keeping becomes a named test ("cases found by fuzzing").
 *
 * RUNS, the requests of the longest properties (the others run a share of it), is the environment variable FUZZ_RUNS
 * (test/vitest.config.ts passes it in as a binding): 500 for `npm test` and CI, an everyday sample sized to CI's ten
 * minutes; 5000, full strength, for `npm run test:deep` (the scheduled workflow). One file at another count:
 * `FUZZ_RUNS=5000 npx vitest run --config test/vitest.config.ts --project worker test/worker/fuzz-apps.test.ts`.
 */
export const RUNS = fuzzRuns(env.FUZZ_RUNS);
/** A property's share of RUNS, in whole requests. */
export const runsShare = (share: number) => Math.ceil(RUNS * share);

function fuzzRuns(binding: string): number {
  if (!/^[1-9][0-9]*$/.test(binding)) throw new Error(`FUZZ_RUNS must be a whole number of requests, not ${binding}`);
  return Number(binding);
}
/** Per property: 1000 runs take a few seconds; a failure's shrinking may take longer. More runs, longer. */
export const TIMEOUT = 120_000 * Math.max(1, RUNS / 1000);

export type Replay = Record<string, { seed: number; path?: string }>;

/**
 * Each property's seed, unless its REPLAY names one: FUZZ_SEED (test/vitest.config.ts passes it in as a binding).
 * "label", for `npm test` and CI: a hash of the property's label, so the everyday sample draws the same requests on
 * every run, and its checks of what the sample must meet (`mustSee`, the files' outcome counts) pass or fail with the
 * code, never with the draw (a random everyday seed once met no resend of a pending invitation: CI failed on chance).
 * "random", for `npm run test:deep`: a new seed per property and run, to explore.
 */
const SEEDING = fuzzSeeding(env.FUZZ_SEED);

function fuzzSeeding(binding: string): "label" | "random" {
  if (binding !== "label" && binding !== "random") throw new Error(`FUZZ_SEED must be "label" or "random", not ${binding}`);
  return binding;
}

/** FNV-1a of the label, as a 31-bit seed. */
function labelSeed(label: string): number {
  let hash = 0x811c9dc5;
  for (const unit of new TextEncoder().encode(label)) hash = Math.imul(hash ^ unit, 0x01000193);
  return (hash >>> 0) % 2 ** 31;
}

const seedOf = (label: string) => (SEEDING === "label" ? labelSeed(label) : Math.floor(Math.random() * 2 ** 31));

// ---------------------------------------------------------------------------------------------------------------
// The documented contract (docs/http-contract.md, "The HTTP contract"; docs/LEGACY-API.md), written out independently of src/.

const DOCUMENTED_STATUSES = [200, 400, 401, 403, 404, 405, 409, 412, 413, 415, 422];

/** The 403 of a refused write (fixtures.ts), for the fuzz files with the rest of the contract. */
export { FORBIDDEN };
/** The 412 of a deploy or revert whose If-Match no longer names the environment's state. */
export const MOVED_ON = "The environment has changed since the ETag given in If-Match: read it again, then retry";
/** The 400 of a malformed Idempotency-Key: its message begins so (docs/http-contract.md, the contract table). */
export const BAD_IDEMPOTENCY_KEY = /^Idempotency-Key must be /;
const DETAIL_BY_STATUS: Record<number, RegExp> = {
  400: /^(Config already exists\.|Config name already exists\. Please use a different name or set overwrite to True\.|Idempotency-Key must be .+)$/,
  401: /^Unauthorized$/,
  403: /^You do not have access to perform this action\. Please contact your organization admin\.$/,
  404: /^(App environment not found|App not found|Not Found|Variant not found|Variant revision not found|No variant is deployed to this environment|Config not found\.|Deployment revision not found)$/,
  405: /^Method Not Allowed$/,
  409: /^(App with the same name already exists|Variant is deployed to [^:]+: deploy another variant there first, then remove this one|This revision belongs to a removed variant, which cannot be deployed again: deploy another config)$/,
  412: new RegExp(`^${MOVED_ON.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`),
  413: /^Request body is larger than \d+ bytes$/,
  415: /^Request body must be JSON/,
};
export const MAX_BODY_BYTES = 16 * 1024;

export const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const LOWER_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** RFC 9562 versions 1-8: certainly a valid UUID. */
export const RFC_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
/** UUID-shaped, whatever the version and variant: a string not of this shape is certainly not a valid id. */
export const UUID_SHAPED = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const Uuid = z.string().regex(LOWER_UUID);
export const Timestamp = z.string().regex(TIMESTAMP);
const ErrorBody = z.strictObject({ detail: z.string().min(1) });
const ValidationBody = z.strictObject({
  detail: z
    .array(
      z.strictObject({
        loc: z
          .array(z.union([z.string(), z.number().int()]))
          .min(1)
          .refine((loc) => ["body", "path", "query", "header"].includes(String(loc[0])), "loc[0] is body, path, query or header"),
        msg: z.string(),
        type: z.string(),
      }),
    )
    .min(1),
});
export type Issue = z.infer<typeof ValidationBody>["detail"][number];

/** Lengths are counted in code points, as pydantic counts them (docs/design.md, "Choices"). */
export const lengthWithin = (text: string, max = 255): boolean => {
  const codePoints = [...text].length;
  return codePoints >= 1 && codePoints <= max;
};

/** How many levels a parsed JSON value nests (a scalar: 0; `{}`: 1); params may nest 100 (docs/design.md, "Choices"). */
export function depthOf(value: unknown): number {
  // Level by level, not recursively: the fuzz sends values nested 8,000 deep.
  for (let depth = 0, level = [value]; ; depth += 1) {
    const containers = level.filter((item): item is object => typeof item === "object" && item !== null);
    if (containers.length === 0) return depth;
    level = containers.flatMap((item) => Object.values(item));
  }
}
export const MAX_PARAMS_DEPTH = 100;
/** How deep a body whose params are kept as sent may nest anywhere (docs/design.md, "Choices"). */
export const MAX_BODY_DEPTH = 1000;

/** Text that cannot be stored as UTF-8 (half of a surrogate pair) is refused. */
export const hasLoneSurrogate = (text: string) => LONE_SURROGATE.test(text);

/**
 * What a name must be to look an app up (docs/design.md, "Choices"): 1-255 characters after NFC, not blank, no control
 * characters. A new one must be more (`newNameIsValid`).
 */
export function nameIsValid(value: unknown): boolean {
  if (typeof value !== "string") return false;
  const name = value.normalize("NFC");
  if (name.trim() === "" || /[\p{Cc}\u2028\u2029]/u.test(name) || hasLoneSurrogate(name)) return false;
  return lengthWithin(name);
}

/** The letters of a few scripts, which the oracle is sure of (none is used by another script); a-z and A-Z are Latin. */
const SCRIPT_LETTERS: [script: string, letters: RegExp][] = [
  ["Latin", /[A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u017f]/u],
  ["Greek", /[\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03ce]/u],
  ["Cyrillic", /[\u0400-\u045f]/u],
  ["Hebrew", /[\u05d0-\u05ea]/u],
  ["Arabic", /[\u0621-\u063a\u0641-\u064a]/u],
  ["Han", /[\u4e00-\u9fff]/u],
  ["Kana", /[\u3041-\u3096\u30a1-\u30fa\u30fc]/u],
  ["Hangul", /[\uac00-\ud7a3]/u],
];
/** The scripts a new name may mix (docs/design.md, "Choices"): Latin with those of Japanese or of Korean (Bopomofo aside). */
const SCRIPT_COMBINATIONS = [
  ["Latin", "Han", "Kana"],
  ["Latin", "Han", "Hangul"],
];

/**
 * What a new app_name or config name must be besides a name (docs/design.md, "Choices", `app_name`): no invisible, formatting,
 * bidi, filler, private-use or unassigned character, no space but U+0020, a visible character, not a combining mark
 * first, one script (or a combination one language writes). True or false where the name is simple enough to be sure
 * (ASCII; the letters of SCRIPT_LETTERS; a refused character; two scripts no combination has); else undefined.
 */
export function newNameValidity(name: string): boolean | undefined {
  if (/^[\x20-\x7e]*$/.test(name)) return true;
  if (/(?! )[\p{Default_Ignorable_Code_Point}\p{Bidi_Control}\p{Cf}\p{Z}\p{Co}\p{Cn}\u2800]/u.test(name)) return false;
  if (/^\p{M}/u.test(name) || !/[\p{L}\p{N}\p{P}\p{S}]/u.test(name)) return false;
  const scripts = new Set<string>();
  let sure = true;
  for (const char of name) {
    const script = SCRIPT_LETTERS.find(([, letters]) => letters.test(char))?.[0];
    if (script) scripts.add(script);
    // Neither a known letter nor ASCII punctuation, a digit or a space: the oracle is not sure of it.
    else if (!/[\x20-\x40\x5b-\x60\x7b-\x7e]/.test(char)) sure = false;
  }
  const mixable = (combination: string[]) => [...scripts].every((script) => combination.includes(script));
  // Two scripts no combination has: whatever else the name holds, it is refused.
  if (scripts.size > 1 && !SCRIPT_COMBINATIONS.some(mixable)) return false;
  return sure ? true : undefined;
}

/** What the name of a new app or config must be (`nameIsValid`, then `newNameValidity`); undefined: no claim. */
export const newNameIsValid = (value: unknown): boolean | undefined =>
  nameIsValid(value) ? newNameValidity((value as string).normalize("NFC")) : false;

/** What environment_name must be: 1-255 characters, no control characters or line breaks. */
export const environmentNameIsValid = (name: string): boolean =>
  /[\p{Cc}\u2028\u2029]/u.test(name) || hasLoneSurrogate(name) ? false : lengthWithin(name);

/**
 * Compares two strings through their JSON form, which escapes lone surrogates: a failure message holding a raw lone
 * surrogate breaks the test runner's reporting (its WebSocket refuses the invalid UTF-8).
 */
export const expectSameText = (actual: string | undefined, expected: string) =>
  expect(JSON.stringify(actual)).toBe(JSON.stringify(expected));

export const hasIssueAt = (issues: Issue[], ...loc: string[]) =>
  issues.some((issue) => JSON.stringify(issue.loc) === JSON.stringify(loc));

/**
 * Checks what every response must be, whatever the request: a documented status, a JSON body of the documented
 * shape (`ok`: the 200 body's, when the request certainly reached the route), the documented message (`details`:
 * an endpoint's own messages in place of the defaults). Returns the parsed body.
 */
export async function expectDocumentedResponse(
  response: Response,
  ok?: z.ZodType,
  details: Record<number, RegExp> = {},
): Promise<unknown> {
  const text = await response.text();
  expect(DOCUMENTED_STATUSES, `status ${response.status}: ${text.slice(0, 300)}`).toContain(response.status);
  expect(response.headers.get("Content-Type")).toMatch(/^application\/json/);
  let body: unknown;
  expect(() => (body = JSON.parse(text)), `not JSON: ${text.slice(0, 300)}`).not.toThrow();
  if (response.status === 200) {
    ok?.parse(body);
  } else if (response.status === 422) {
    ValidationBody.parse(body);
  } else {
    const { detail } = ErrorBody.parse(body);
    expect(detail).toMatch(details[response.status] ?? DETAIL_BY_STATUS[response.status]);
    if (response.status === 401) expect(response.headers.get("WWW-Authenticate")).toBeTruthy();
  }
  return body;
}

// ---------------------------------------------------------------------------------------------------------------
// The accounts requests are made as.

/** A live key, and what its holder may do. */
export interface Holder {
  label: string;
  key: string;
  userId: string;
  /** The holder's role in each organization they belong to (apps there are visible to them). */
  roles: Map<string, Role>;
  /** The project the key names: where an untargeted create goes, where an app's name is looked up. */
  keyProjectId: string;
}

const WRITERS: readonly Role[] = ["owner", "workspace_admin", "editor"];
export const mayWriteIn = (holder: Holder, organizationId: string) =>
  WRITERS.includes(holder.roles.get(organizationId) ?? "viewer");

type Team = Awaited<ReturnType<typeof createTeam>>;

/** Owner, admin, editor and viewer of a team (each also owns a personal organization), an outsider; their keys. */
export interface World {
  owner: Account;
  admin: Account;
  editor: Account;
  viewer: Account;
  outsider: Account;
  team: Team;
  holders: Holder[];
  deadKeys: { label: string; key: string }[];
  /** What a create's body fields may name ("project_id:<id>", ...), with its organization and (default) project. */
  targets: Map<string, { organizationId: string; projectId: string }>;
}

export async function createWorld(): Promise<World> {
  const accounts: Account[] = [];
  while (accounts.length < 5) accounts.push(await createAccount());
  const [owner, admin, editor, viewer, outsider] = accounts;
  const team = await createTeam(owner, [
    [admin, "workspace_admin"],
    [editor, "editor"],
    [viewer, "viewer"],
  ]);
  const holder = (label: string, account: Account, key: string, keyProjectId: string, teamRole?: Role): Holder => ({
    label,
    key,
    userId: account.userId,
    roles: new Map<string, Role>([
      [account.organizationId, "owner"],
      ...(teamRole ? [[team.organizationId, teamRole] as const] : []),
    ]),
    keyProjectId,
  });
  const holders = [
    holder("owner", owner, owner.key, owner.projectId, "owner"),
    holder("owner, key in the team", owner, await issueKey(owner.userId, team.projectId), team.projectId, "owner"),
    holder("admin, key in the team", admin, await issueKey(admin.userId, team.projectId), team.projectId, "workspace_admin"),
    holder("editor", editor, editor.key, editor.projectId, "editor"),
    holder("viewer, key in the team", viewer, await issueKey(viewer.userId, team.projectId), team.projectId, "viewer"),
    holder("viewer", viewer, viewer.key, viewer.projectId, "viewer"),
    holder("outsider", outsider, outsider.key, outsider.projectId),
  ];
  const targets = new Map<string, { organizationId: string; projectId: string }>();
  for (const account of [owner, admin, editor, viewer, outsider, team]) {
    const target = { organizationId: account.organizationId, projectId: account.projectId };
    targets.set(`project_id:${account.projectId}`, target);
    targets.set(`workspace_id:${account.workspaceId}`, target);
    targets.set(`organization_id:${account.organizationId}`, target);
  }
  const revoked = await issueKey(owner.userId, owner.projectId);
  await revokeApiKey(databaseOf(revoked), revoked.split(".")[0]);
  const deadKeys = [
    { label: "expired", key: await issueKey(owner.userId, owner.projectId, "2001-01-01T00:00:00.000Z") },
    { label: "revoked", key: revoked },
    { label: "wrong secret", key: `${owner.key.split(".")[0]}.${"0".repeat(64)}` },
    { label: "unknown prefix", key: `Zz9Zz9Zz.${owner.key.split(".")[1]}` },
  ];
  return { owner, admin, editor, viewer, outsider, team, holders, deadKeys, targets };
}

/** The ids of the world's organizations, workspaces and projects. */
export const worldIds = (world: World) =>
  [world.owner, world.editor, world.outsider, world.team].flatMap((ids) => [ids.projectId, ids.workspaceId, ids.organizationId]);

// ---------------------------------------------------------------------------------------------------------------
// Arbitraries.

/** Strings chosen to hurt: encodings, control characters, prototype names, SQL, Unicode edge cases, lengths. */
const NASTY_STRINGS = [
  "",
  " ",
  "\t",
  "\u0000",
  "a\u0000b",
  "\n",
  "x\r\ny",
  "\u007f",
  "\u0085",
  "\u00a0",
  "\u2028",
  "\u200b",
  "\ufeff",
  "\u202e",
  "%2F",
  "%252F",
  "a/b",
  "a%2Fb",
  "..",
  ".",
  "%",
  "%%",
  "%zz",
  "%E0%A4%A",
  "%00",
  "%u0041",
  "\\",
  "?",
  "#",
  "a?b#c",
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  "__defineGetter__",
  "' OR 1=1 --",
  '"; DROP TABLE apps; --',
  "1; SELECT * FROM api_keys",
  "null",
  "undefined",
  "true",
  "NaN",
  "[]",
  "{}",
  "\ud800",
  "\udc00",
  "a\ud800b",
  "\ud83d\ude00",
  "cafe\u0301",
  "caf\u00e9",
  "e\u0301".repeat(200),
  "\u01c5",
  "\u0130",
  "\u00df",
  "\ufb00",
  "\u0041\u030a",
  "\u212b",
  "\u1100\u1161",
  "\u0627\u0644\u0639\u0631\u0628\u064a\u0629",
  "\u{1f469}\u200d\u{1f4bb}",
  "\u0430pp",
  "h-app\u3164",
  "\u2060app",
  "\u2800",
  "\u0301",
  "a".repeat(255),
  "a".repeat(256),
  "\u00e4".repeat(255),
  "a\u0308".repeat(255),
  "\u{1f600}".repeat(127),
  "\u{1f600}".repeat(128),
  "x".repeat(20_000),
  "development",
  "Development",
  "PRODUCTION",
  " staging",
  "staging ",
  "staging\u0000",
  "stag%69ng",
  "staging%00",
  "01900000-0000-7000-8000-000000000000",
  "00000000-0000-0000-0000-000000000000",
  "ffffffff-ffff-ffff-ffff-ffffffffffff",
  "01900000-0000-7000-8000-00000000000",
  "{01900000-0000-7000-8000-000000000000}",
  "urn:uuid:01900000-0000-7000-8000-000000000000",
  "0190000000007000800000000000000",
  "01900000-0000-7000-8000-000000000000\u0000",
];

export const anyString = fc.oneof(
  { arbitrary: fc.constantFrom(...NASTY_STRINGS), weight: 4 },
  { arbitrary: fc.string({ unit: "binary", maxLength: 40 }), weight: 2 },
  { arbitrary: fc.string({ unit: "grapheme", maxLength: 40 }), weight: 2 },
  { arbitrary: fc.string({ unit: "binary-ascii", maxLength: 40 }), weight: 2 },
  { arbitrary: fc.string({ unit: "grapheme-ascii", minLength: 200, maxLength: 600 }), weight: 1 },
);

/** Names the service must accept (mostly), often repeated so that collisions (409) happen. */
export const likelyValidName = fc.oneof(
  {
    arbitrary: fc.constantFrom(
      "app",
      "billing",
      "App",
      "caf\u00e9",
      "cafe\u0301",
      "\u{1f600}",
      "\u043f\u0440\u0438\u043b\u043e\u0436\u0435\u043d\u0438\u0435",
      "\u65e5\u672c\u8a9e\u30a2\u30d7\u30ea",
      "\ud55c\uae00-\uc571",
      "x".repeat(255),
      "e\u0301".repeat(200),
      "' OR 1=1 --",
    ),
    weight: 3,
  },
  { arbitrary: fc.string({ unit: "grapheme", minLength: 1, maxLength: 30 }), weight: 1 },
  { arbitrary: fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 8 }), weight: 1 },
);

/** JSON nested deep, as a whole body or as the value of `field`. */
const deepText = (field: string) =>
  fc
    .tuple(
      fc.oneof(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1_000, max: 9_000 })),
      fc.constantFrom("array", "object", "in a field", "under __proto__"),
    )
    .map(([depth, shape]) => {
      const arrays = "[".repeat(depth) + "]".repeat(depth);
      switch (shape) {
        case "array":
          return arrays;
        case "object":
          return `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
        case "in a field":
          return `{${JSON.stringify(field)}:${arrays}}`;
        default:
          return `{"__proto__":${arrays},${JSON.stringify(field)}:"deep"}`;
      }
    });

/** Ids: those given (known to the service), upper-cased, or random. */
export const idStrings = (ids: readonly string[]) =>
  fc.oneof(
    { arbitrary: fc.constantFrom(...ids), weight: 4 },
    { arbitrary: fc.constantFrom(...ids).map((id) => id.toUpperCase()), weight: 1 },
    { arbitrary: fc.uuid(), weight: 2 },
  );

/** A value for any field: strings, ids, other JSON types. */
export const fieldValue = (ids: readonly string[]) =>
  fc.oneof(
    { arbitrary: anyString, weight: 4 },
    { arbitrary: likelyValidName, weight: 2 },
    { arbitrary: idStrings(ids), weight: 2 },
    {
      arbitrary: fc.constantFrom<unknown>(null, true, false, 0, -1, 1.5, 1e308, [], {}, ["app"], { app_name: "inner" }),
      weight: 1,
    },
    { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 1 },
  );

/** A raw JSON object text, keys possibly repeated, escaped or prototype names, values possibly raw nesting. */
const rawObjectText = (fields: readonly string[], values: fc.Arbitrary<unknown>) => {
  const escaped = fields.flatMap((field) => [
    JSON.stringify(field).replace(/_/, "\\u005f"),
    `"\\u00${field.charCodeAt(0).toString(16)}${field.slice(1)}"`,
    JSON.stringify(field.toUpperCase()),
    JSON.stringify(`${field} `),
  ]);
  const keyText = fc.oneof(
    { arbitrary: fc.constantFrom(...fields).map((key) => JSON.stringify(key)), weight: 6 },
    { arbitrary: fc.constantFrom('"__proto__"', '"constructor"', '"prototype"', '""', ...escaped), weight: 3 },
    { arbitrary: anyString.map((key) => JSON.stringify(key)), weight: 1 },
  );
  const valueText = fc.oneof(
    { arbitrary: values.map((value) => JSON.stringify(value) ?? "null"), weight: 6 },
    { arbitrary: deepText(fields[0]), weight: 1 },
    { arbitrary: fc.json({ maxDepth: 2 }), weight: 1 },
  );
  return fc
    .array(fc.tuple(keyText, valueText), { maxLength: 8 })
    .map((members) => `{${members.map(([key, value]) => `${key}:${value}`).join(",")}}`);
};

export type Body = string | Uint8Array | undefined;

interface BodySpec {
  kind: string;
  body: Body;
}

/** What an endpoint's bodies are made of, for `bodySpec`. */
interface BodyShapes {
  /** Bodies as a client means them. */
  wellFormed: fc.Arbitrary<string>;
  /** The fields, each possibly absent or of another type, and unknown extras. */
  structured: fc.Arbitrary<string>;
  /** The body's field names (the first padded around the size limit), and values of any kind for them. */
  fields: readonly string[];
  values: fc.Arbitrary<unknown>;
  maxBytes: number;
}

/** Bodies of every kind: well-formed and structured mostly; then raw members, other JSON, non-JSON, sizes, bytes, none. */
export const bodySpec = ({ wellFormed, structured, fields, values, maxBytes }: BodyShapes): fc.Arbitrary<BodySpec> => {
  const text = (kind: string, arbitrary: fc.Arbitrary<string>) => arbitrary.map((body): BodySpec => ({ kind, body }));
  return fc.oneof(
    { arbitrary: text("well-formed", wellFormed), weight: 12 },
    { arbitrary: text("structured", structured), weight: 8 },
    { arbitrary: text("raw members", rawObjectText(fields, values)), weight: 4 },
    {
      arbitrary: text(
        "JSON value",
        fc.jsonValue().map((value) => JSON.stringify(value)),
      ),
      weight: 1,
    },
    { arbitrary: text("unicode JSON", fc.json({ stringUnit: "binary" })), weight: 1 },
    { arbitrary: text("deep", deepText(fields[0])), weight: 1 },
    { arbitrary: text("text", anyString), weight: 1 },
    {
      arbitrary: text(
        "truncated",
        fc.tuple(structured, fc.nat()).map(([json, n]) => json.slice(0, n % json.length)),
      ),
      weight: 1,
    },
    {
      arbitrary: text(
        "BOM",
        structured.map((json) => `\ufeff${json}`),
      ),
      weight: 1,
    },
    { arbitrary: text("whitespace", fc.constantFrom("", " ", "\n\t ", "\u00a0")), weight: 1 },
    {
      arbitrary: text(
        "around the limit",
        fc
          .oneof(fc.integer({ min: maxBytes - 40, max: maxBytes + 10 }), fc.integer({ min: maxBytes - 400, max: 2.5 * maxBytes }))
          .map((n) => `{${JSON.stringify(fields[0])}:"big","pad":"${"y".repeat(n)}"}`),
      ),
      weight: 1,
    },
    { arbitrary: fc.uint8Array({ maxLength: 200 }).map((body): BodySpec => ({ kind: "bytes", body })), weight: 1 },
    { arbitrary: fc.constant<BodySpec>({ kind: "none", body: undefined }), weight: 1 },
  );
};

/**
 * The bodies of POST /apps (and PATCH /apps/{app_id}, which reads app_name alone): ids are the ones fields may name;
 * `names`, names apps have (for collisions).
 */
export const appBodyShapes = (ids: readonly string[], names: readonly string[] = []): BodyShapes => {
  const fields = ["app_name", "project_id", "workspace_id", "organization_id"] as const;
  const idValue = fc.oneof(
    { arbitrary: fc.constant(null), weight: 3 },
    { arbitrary: idStrings(ids), weight: 3 },
    { arbitrary: fieldValue(ids), weight: 1 },
  );
  // The four fields, each possibly absent, and unknown extras.
  const structured = fc
    .tuple(
      fc.record(
        {
          app_name: fc.oneof({ arbitrary: likelyValidName, weight: 3 }, { arbitrary: fieldValue(ids), weight: 2 }),
          project_id: idValue,
          workspace_id: idValue,
          organization_id: idValue,
        },
        { requiredKeys: [] },
      ),
      fc.dictionary(anyString, fieldValue(ids), { maxKeys: 3 }),
    )
    .map(([values, extra]) => JSON.stringify({ ...extra, ...values }));
  // As a client means it: a plausible name, at most one target, mostly known ids.
  const name =
    names.length > 0
      ? fc.oneof({ arbitrary: likelyValidName, weight: 1 }, { arbitrary: fc.constantFrom(...names), weight: 2 })
      : likelyValidName;
  const wellFormed = fc
    .tuple(name, fc.constantFrom(undefined, ...fields.slice(1)), idStrings(ids))
    .map(([app_name, field, id]) => JSON.stringify(field ? { app_name, [field]: id } : { app_name }));
  return { wellFormed, structured, fields, values: fieldValue(ids), maxBytes: MAX_BODY_BYTES };
};

/** Content types, with whether the contract calls them JSON (undefined: no claim). */
export const contentType = fc.oneof(
  {
    arbitrary: fc.constantFrom<[string | undefined, boolean | undefined]>(
      ["application/json", true],
      ["application/json; charset=utf-8", true],
      ["application/json;charset=UTF-8", true],
      ["Application/JSON", true],
      ["APPLICATION/JSON; CHARSET=UTF-8", true],
      ["application/vnd.api+json", true],
      ["application/problem+json", true],
      ["application/merge-patch+json; charset=utf-8", true],
      ["application/json ; charset=utf-8", true],
      ["  application/json  ", true],
    ),
    weight: 12,
  },
  {
    arbitrary: fc.constantFrom<[string | undefined, boolean | undefined]>(
      [undefined, false],
      ["", false],
      ["text/plain", false],
      ["text/json", false],
      ["text/plain; charset=utf-8", false],
      ["application/x-www-form-urlencoded", false],
      ["multipart/form-data; boundary=xyz", false],
      ["application/jsonx", false],
      ["application/json+xml", false],
      ["application/xml", false],
      ["application/x-json", false],
      ["application/+json", false],
      ["*/*", false],
      ["json", false],
      ["application/", false],
      ["charset=utf-8; application/json", false],
      ["application/json;", undefined],
      ["application/json; charset", undefined],
    ),
    weight: 3,
  },
  {
    arbitrary: fc.string({ unit: "grapheme-ascii", maxLength: 40 }).map((type): [string, undefined] => [type, undefined]),
    weight: 1,
  },
);

export interface AuthSpec {
  header: string | undefined;
  holder: Holder | undefined;
}

const headerText = fc.string({
  unit: fc.oneof(
    fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
    fc.constant("\t"),
  ),
  maxLength: 120,
});

export const authSpec = ({ holders, deadKeys, owner }: World): fc.Arbitrary<AuthSpec> => {
  const live = fc
    .tuple(
      fc.constantFrom(...holders),
      fc.constantFrom(
        (k: string) => `ApiKey ${k}`,
        (k: string) => `Bearer ${k}`,
        (k: string) => k,
        (k: string) => `apikey ${k}`,
        (k: string) => `BEARER  ${k}`,
        (k: string) => `\tApiKey \t${k} `,
      ),
    )
    .map(([holder, format]): AuthSpec => ({ header: format(holder.key), holder }));
  const key = owner.key;
  const [prefix, secret] = key.split(".");
  const malformed = fc.constantFrom(
    "",
    "ApiKey",
    "Bearer ",
    "ApiKey  ",
    "Basic dXNlcjpwYXNz",
    `Basic ${key}`,
    `Token ${key}`,
    `ApiKey${key}`,
    `ApiKey ${key} ${key}`,
    `ApiKey ${key},ApiKey ${key}`,
    `ApiKey ${key.toUpperCase()}`,
    `ApiKey ${key.slice(0, -1)}`,
    `ApiKey ${key}0`,
    `ApiKey ${prefix}`,
    `ApiKey ${secret}`,
    `ApiKey ${prefix}.${secret.toUpperCase()}`,
    `ApiKey ${prefix}:${secret}`,
    `ApiKey ${prefix}..${secret}`,
    `ApiKey ${key}\u0001`,
    `ApiKey "${key}"`,
    "ApiKey ' OR 1=1 --",
    `ApiKey ${prefix}' OR '1'='1.${secret}`,
    "Bearer null",
    "ApiKey %00",
  );
  const dead = fc
    .tuple(fc.constantFrom(...deadKeys), fc.constantFrom("ApiKey ", "Bearer ", ""))
    .map(([{ key }, scheme]) => `${scheme}${key}`);
  const keyShaped = fc
    .tuple(fc.stringMatching(/^[A-Za-z0-9]{8}$/), fc.stringMatching(/^[0-9a-f]{64}$/))
    .map(([p, s]) => `ApiKey ${p}.${s}`);
  const invalid = fc
    .oneof(fc.constant(undefined), malformed, dead, keyShaped, headerText)
    .map((header): AuthSpec => ({ header, holder: undefined }));
  return fc.oneof({ arbitrary: live, weight: 3 }, { arbitrary: invalid, weight: 1 });
};

/** Other headers a client may send: a D1 bookmark (valid-looking or not), a request id. */
export const extraHeaders = fc.record(
  {
    "x-d1-bookmark": fc.oneof(fc.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/), headerText),
    "X-Request-Id": headerText,
  },
  { requiredKeys: [] },
);

export const headersOf = (auth: AuthSpec, extra: Record<string, string>, type?: string): Record<string, string> => ({
  ...extra,
  ...(auth.header !== undefined ? { Authorization: auth.header } : {}),
  ...(type !== undefined ? { "Content-Type": type } : {}),
});

// ---------------------------------------------------------------------------------------------------------------
// Path segments and query strings.

interface Segment {
  /** As written into the URL. */
  raw: string;
  /** The parameter the service must see, when the encoding makes it certain. */
  decoded?: string;
}

export const encoded = (value: string): Segment => {
  try {
    return { raw: encodeURIComponent(value), decoded: value };
  } catch {
    return { raw: value }; // a lone surrogate: the URL parser replaces it
  }
};
const doubleEncoded = (value: string): Segment => {
  const once = encoded(value);
  return once.decoded === undefined ? once : { raw: encodeURIComponent(once.raw), decoded: once.raw };
};

const TRICKY_SEGMENTS: Segment[] = [
  { raw: "%2F", decoded: "/" },
  { raw: "%252F", decoded: "%2F" },
  { raw: "%2e%2e" },
  { raw: ".." },
  { raw: "." },
  { raw: "%" },
  { raw: "%zz" },
  { raw: "%E0%A4%A" },
  { raw: "%C0%AF" },
  { raw: "%00", decoded: "\u0000" },
  { raw: "%0A", decoded: "\n" },
  { raw: "%20", decoded: " " },
  { raw: "%7F", decoded: "\u007f" },
  { raw: "development%2F", decoded: "development/" },
  { raw: "develop%6Dent", decoded: "development" },
  { raw: "develop%256Dent", decoded: "develop%6Dent" },
  { raw: "%64evelopment", decoded: "development" },
  { raw: "%2564evelopment", decoded: "%64evelopment" },
  { raw: "development%00", decoded: "development\u0000" },
  { raw: "production;x=1", decoded: "production;x=1" },
];

/** How a path segment (or query value) is written: the value chosen for it, encoded once (mostly), or anything else. */
export type SegmentChoice = "the value" | Segment;

export const segmentChoice: fc.Arbitrary<SegmentChoice> = fc.oneof(
  { arbitrary: fc.constant<SegmentChoice>("the value"), weight: 14 },
  { arbitrary: anyString.map(encoded), weight: 3 },
  { arbitrary: anyString.map(doubleEncoded), weight: 1 },
  { arbitrary: anyString.map((raw): Segment => ({ raw })), weight: 1 },
  { arbitrary: fc.constantFrom(...TRICKY_SEGMENTS), weight: 2 },
);

/** The segment a choice makes of a value (chosen when the request is made: ids that exist by then). */
export const segmentOf = (choice: SegmentChoice, value: string): Segment => (choice === "the value" ? encoded(value) : choice);

/** A path segment (or query value): mostly one of `values`, encoded once; else anything, encoded or not. */
export const segment = (values: fc.Arbitrary<string>): fc.Arbitrary<Segment> =>
  fc.tuple(segmentChoice, values).map(([choice, value]) => segmentOf(choice, value));

/** decodeURIComponent, or the text as it is where it does not decode (as the router leaves it). */
const decodeTolerantly = (text: string) => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};

/**
 * Whether the route `pattern` (e.g. "/apps/:app_id/environments") must take a request path: unless the URL parser
 * leaves it of another shape (a raw "/", "\", "?" or "#", a dot segment; a trailing slash aside), or a parameter
 * decodes to "", "." or ".." or holds a "/".
 */
export function routeMustTake(path: string, pattern: string): boolean {
  const segments = new URL(`https://x${path}`).pathname.replace(/(.)\/$/, "$1").split("/");
  const expected = pattern.split("/");
  if (segments.length !== expected.length) return false;
  return expected.every((part, i) => {
    if (!part.startsWith(":")) return segments[i] === part;
    const parameter = decodeTolerantly(segments[i]);
    return !["", ".", ".."].includes(parameter) && !parameter.includes("/");
  });
}

/** Path parameters as the service must see them: undefined when an encoding leaves one uncertain. */
export const certainParameters = (...segments: Segment[]): string[] | undefined => {
  const values = segments.map((part) => part.decoded);
  return values.every((value) => value !== undefined && !["", ".", ".."].includes(value)) ? (values as string[]) : undefined;
};

/** A query parameter: absent, or a value (a repeated parameter is sent twice). */
export type QueryPart = { name: string; value: Segment; repeated?: boolean };

/**
 * A query string, and the parameters the service must see: undefined when a raw value leaves them uncertain or a
 * parameter is repeated (the contract says nothing of repeats).
 */
function queryString(parts: QueryPart[]): { raw: string; decoded?: Record<string, string> } {
  const pairs = parts.flatMap(({ name, value, repeated }) => Array(repeated ? 2 : 1).fill(`${name}=${value.raw}`));
  const raw = pairs.length > 0 ? `?${pairs.join("&")}` : "";
  if (parts.some((part) => part.value.decoded === undefined || part.repeated)) return { raw };
  return { raw, decoded: Object.fromEntries(parts.map((part) => [part.name, part.value.decoded as string])) };
}

/** A query parameter of `name`: absent (undefined, 1 in `freq` + 1), or a segment of `values` (sometimes repeated). */
export const queryPart = (name: string, values: fc.Arbitrary<string>, freq = 6) =>
  fc.option(
    fc
      .tuple(segment(values), fc.boolean(), fc.nat(19))
      .map(([value, twice, n]): QueryPart => ({ name, value, repeated: twice && n === 0 })),
    { nil: undefined, freq },
  );

// ---------------------------------------------------------------------------------------------------------------
// What a request's validity allows, and the runner.

/**
 * What a request's validity allows: the refusals it must get (413, 415, or 422 at a loc), those it may get where the
 * contract is silent (an unknown media type, a value the contract makes no claim about), and whether its outcome, once
 * accepted, can be predicted.
 */
export class Verdict {
  readonly failures: Refusal[] = [];
  readonly possible: Refusal[] = [];
  /** Set when an accepted request's outcome cannot be predicted (a value the contract does not say how to read). */
  unpredictable = false;
  /** Set where the parameters are validated together (a route's path, its query): a 422 names every invalid one. */
  reportsAll = false;

  fail(status: number, loc?: Loc, type?: string) {
    this.failures.push({ status, loc, type });
  }

  /** Points every loc at `loc` (where a body is read from inside another, a 422 may point either way). */
  coarsen(loc: Loc) {
    for (const refusal of [...this.failures, ...this.possible]) if (refusal.loc) refusal.loc = loc;
  }

  /**
   * A field's validity: false, a 422 there (of pydantic's `type`, when the contract names it); undefined, no claim (a
   * 422 there is allowed, and so is acceptance).
   */
  field(loc: Loc, valid: boolean | undefined, type?: string) {
    if (valid === false) this.fail(422, loc, type);
    if (valid === undefined) this.possible.push({ status: 422, loc, type });
  }

  /**
   * Checks a response's status against the verdict: a refusal (413, 415, 422) must be one the verdict names, a 422's
   * issues each at a loc it names (of the type it names); anything else means the request was accepted, which it must
   * not be when it has a certain failure. Returns whether it was accepted with an outcome the caller can predict.
   */
  accepted(status: number, body: unknown): boolean {
    const refusals = [...this.failures, ...this.possible].filter((refusal) => refusal.status === status);
    if (refusals.length === 0) {
      expect(this.failures, `status ${status} for a request that must be refused`).toEqual([]);
      return !this.unpredictable;
    }
    if (status === 422) {
      for (const issue of (body as { detail: Issue[] }).detail) {
        const at = refusals.filter((refusal) => (refusal.loc ?? []).every((part, i) => issue.loc[i] === part));
        const allowed = JSON.stringify(refusals.map((refusal) => refusal.loc ?? []));
        expect(at.length, `422 at ${JSON.stringify(issue.loc)}; allowed: ${allowed}`).toBeGreaterThan(0);
        for (const { type } of at) if (type) expect(issue.type, `422 at ${JSON.stringify(issue.loc)}`).toBe(type);
      }
      const issues = (body as { detail: Issue[] }).detail;
      for (const { loc = [] } of this.reportsAll ? refusals.filter((refusal) => this.failures.includes(refusal)) : []) {
        const reported = issues.some((issue) => loc.every((part, i) => issue.loc[i] === part));
        expect(reported, `no 422 at ${JSON.stringify(loc)}`).toBe(true);
      }
    }
    return false;
  }
}

/** A refusal a verdict expects or allows: a status, and for a 422 where (and of which type). */
type Refusal = { status: number; loc?: Loc; type?: string };
type Loc = (string | number)[];

/**
 * Checks what the key, the size and the media type decide of a request with a JSON body: returns the verdict so
 * far (413, 415 and the JSON itself), and the parsed body when it is JSON. Caller-specific checks follow.
 */
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** Whether the bytes are UTF-8 text. */
export function isUtf8(bytes: Uint8Array): boolean {
  try {
    STRICT_UTF8.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

export function readJsonBody(body: Body, isJsonType: boolean | undefined, maxBytes: number) {
  const verdict = new Verdict();
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : (body ?? new Uint8Array());
  const text = new TextDecoder().decode(bytes);
  // Bytes that are not UTF-8 are refused as they are, never read with U+FFFD in their place. A string body with half
  // a surrogate pair goes out as such bytes: workerd writes it as it is (WTF-8), where TextEncoder would replace it.
  const utf8 = typeof body === "string" ? !LONE_SURROGATE.test(body) : isUtf8(bytes);
  if (bytes.length > maxBytes) verdict.fail(413);
  if (isJsonType === false) verdict.fail(415);
  if (isJsonType === undefined) verdict.possible.push({ status: 415 });
  let parsed: { value: unknown } | undefined;
  try {
    parsed = utf8 ? { value: JSON.parse(text) } : undefined;
  } catch {
    parsed = undefined;
  }
  if (!parsed) verdict.fail(422, ["body"]);
  return { verdict, parsed, text, bytes, utf8 };
}

/** The own properties of a JSON object (not of an array or another value); undefined for anything else. */
export const asObject = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

/** An own property: JSON.parse makes "__proto__" an own property, which reading `object.key` would not see. */
export const own = (object: Record<string, unknown> | undefined, key: string): unknown =>
  object !== undefined && Object.hasOwn(object, key) ? object[key] : undefined;

/**
 * Runs a property of RUNS (or `runs`) generated requests: `request` sends one, checks it, and returns its status. Prints the
 * seed and the statuses seen; checks that every status of `mustSee` was seen (the generators reach every documented
 * answer), unless a replay path narrows the run to one counterexample.
 */
export async function fuzz<T>(
  label: string,
  replay: Replay,
  input: fc.Arbitrary<T>,
  request: (value: T) => Promise<number>,
  mustSee: number[],
  runs = RUNS,
) {
  const statuses = new Map<number, number>();
  let requests = 0;
  const { seed = seedOf(label), path } = replay[label] ?? {};
  await fc.assert(
    fc.asyncProperty(input, async (value) => {
      requests += 1;
      const status = await request(value);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }),
    { numRuns: runs, seed, path },
  );
  console.info(
    `${label}: ${requests} requests (seed: ${seed}), by status: ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`,
  );
  if (path === undefined) {
    expect(requests).toBeGreaterThanOrEqual(runs);
    for (const status of mustSee) expect(statuses.get(status) ?? 0, `status ${status} never seen`).toBeGreaterThan(0);
  }
  return statuses;
}

/** A UUID path or query value: certainly valid (RFC 9562), certainly not (not UUID-shaped), or no claim. */
export const uuidValidity = (value: string): boolean | undefined =>
  RFC_UUID.test(value) ? true : UUID_SHAPED.test(value) ? undefined : false;

/**
 * The first checks of every fuzzed answer: documented (the 200 body of `ok`'s shape when the route certainly took the
 * path), 404 Not Found and 405 only for a path the route does not take, 401 exactly when the key is not live. Returns
 * the body and the caller when the rest of the answer is for the endpoint's oracle to predict.
 */
export async function routedAnswer(
  response: Response,
  request: { path: string; route: string; auth: AuthSpec },
  ok: z.ZodType,
  details?: Record<number, RegExp>,
): Promise<{ body: unknown; holder: Holder } | undefined> {
  const taken = routeMustTake(request.path, request.route);
  const body = await expectDocumentedResponse(response, taken ? ok : undefined, details);
  if (response.status === 405 || (response.status === 404 && (body as { detail: unknown }).detail === "Not Found")) {
    expect(taken, `${request.path} was not routed`).toBe(false);
    return undefined;
  }
  if (!taken) return undefined;
  if (!request.auth.holder) {
    expect(response.status).toBe(401);
    return undefined;
  }
  expect(response.status).not.toBe(401);
  return { body, holder: request.auth.holder };
}

/** A predicted error answer. */
export const expectDetail = (status: number, body: unknown, expected: number, detail: string) => {
  expect({ status, body }).toEqual({ status: expected, body: { detail } });
};

/** An id chosen when the request is made: a known one (mostly), upper-cased, one that is gone (or of another kind), too long, random. */
export type IdChoice = { kind: "known" | "upper-cased" | "gone" | "too long"; n: number } | { kind: "random"; id: string };

export const idChoice: fc.Arbitrary<IdChoice> = fc.oneof(
  { arbitrary: fc.nat().map((n): IdChoice => ({ kind: "known", n })), weight: 8 },
  { arbitrary: fc.nat().map((n): IdChoice => ({ kind: "upper-cased", n })), weight: 1 },
  { arbitrary: fc.nat().map((n): IdChoice => ({ kind: "gone", n })), weight: 1 },
  { arbitrary: fc.nat().map((n): IdChoice => ({ kind: "too long", n })), weight: 1 },
  { arbitrary: fc.uuid().map((id): IdChoice => ({ kind: "random", id })), weight: 1 },
);

export function chooseId(choice: IdChoice, known: readonly string[], gone: readonly string[] = []): string {
  if (choice.kind === "random") return choice.id;
  const pool = choice.kind === "gone" && gone.length > 0 ? gone : known;
  const id = pool[choice.n % pool.length];
  if (choice.kind === "upper-cased") return id.toUpperCase();
  return choice.kind === "too long" ? `${id}${"0".repeat(5000)}` : id;
}

/** What every fuzzed request has (a key or none, a trailing slash or none, other headers), and its own parts. */
export const requestInput = <T extends object>(world: World, parts: { [K in keyof T]: fc.Arbitrary<T[K]> }) =>
  fc
    .tuple(fc.record({ auth: authSpec(world), slash: fc.boolean(), extra: extraHeaders }), fc.record<T>(parts))
    .map(([common, own]) => ({ ...common, ...own }));

/**
 * Fuzzes GET `route` (e.g. "/variants/:variant_id/revisions"): RUNS (or `spec.runs`) requests whose path parameters
 * are the segments `segments` makes (in the route's order) and whose query is `query`'s (both may choose by the
 * caller), each answer checked as documented. Where the parameters are certain, `judge` says which are valid (by
 * default: path parameters are UUIDs), and `predict` checks the answer to an accepted request (a run in which it never
 * does fails).
 */
export async function fuzzRead<T extends object>(
  world: World,
  replay: Replay,
  route: string,
  spec: {
    parts: { [K in keyof T]: fc.Arbitrary<T[K]> };
    segments?: (value: T, holder: Holder | undefined) => Segment[];
    query?: (value: T, holder: Holder | undefined) => (QueryPart | undefined)[];
    ok: z.ZodType;
    judge?: (verdict: Verdict, parameters: string[], query: Record<string, string>) => void;
    predict: (
      holder: Holder,
      parameters: string[],
      query: Record<string, string>,
      answer: { status: number; body: unknown },
    ) => void;
    /** The statuses the generators must reach. */
    mustSee?: number[];
    /** How many requests (RUNS by default). */
    runs?: number;
  },
) {
  const names = route.split("/").flatMap((part) => (part.startsWith(":") ? [part.slice(1)] : []));
  const uuids = (verdict: Verdict, parameters: string[]) => {
    for (const [i, value] of parameters.entries()) verdict.field(["path", names[i]], uuidValidity(value));
  };
  const judge = spec.judge ?? uuids;
  const label = `GET ${route}`;
  let predicted = 0;
  await fuzz(
    label,
    replay,
    requestInput(world, spec.parts),
    async (value) => {
      const { auth, slash, extra } = value;
      const segments = spec.segments?.(value as T, auth.holder) ?? [];
      const query = queryString(spec.query?.(value as T, auth.holder).flatMap((part) => part ?? []) ?? []);
      const raw = segments.map((part) => part.raw);
      const path = `${route.replace(/:\w+/g, () => raw.shift() ?? "")}${slash ? "/" : ""}${query.raw}`;
      const response = await send("GET", path, { headers: headersOf(auth, extra) });
      const answer = await routedAnswer(response, { path, route, auth }, spec.ok);
      const parameters = certainParameters(...segments);
      if (!answer || !parameters || !query.decoded) return response.status;
      const verdict = new Verdict();
      verdict.reportsAll = true;
      judge(verdict, parameters, query.decoded);
      if (verdict.accepted(response.status, answer.body)) {
        predicted += 1;
        spec.predict(answer.holder, parameters, query.decoded, { status: response.status, body: answer.body });
      }
      return response.status;
    },
    spec.mustSee ?? [200, 401, 404, 422],
    spec.runs,
  );
  console.info(`${label}: the oracle predicted ${predicted} answers`);
  if (replay[label]?.path === undefined) expect(predicted, "the oracle never predicted an answer").toBeGreaterThan(0);
}

// ---------------------------------------------------------------------------------------------------------------
// Events (docs/EVENTS.md): what a write the oracle predicts records, from the database before it.

/** The event of a change to `app` by `by`: where the app is, who made the change (with which key), `data` beside the app. */
export const appEvent = (
  model: Model,
  by: { userId: string; key: string },
  type: string,
  app: { id: string; project_id: string; name: string },
  data: Record<string, unknown> = {},
): ExpectedEvent => ({
  type,
  organization_id: model.organizationOfProject(app.project_id),
  project_id: app.project_id,
  app_id: app.id,
  actor_user_id: by.userId,
  actor_api_key_prefix: by.key.split(".")[0],
  data: { app_id: app.id, app_name: app.name, ...data },
});

/** What an event says of a config revision the database holds: its config's name (as it was, if removed), variant, number, id. */
export const revisionData = (model: Model, revision: RevisionRow) => {
  const variant = model.variants.get(revision.variant_id)!;
  return {
    config_name: model.configName(variant),
    variant_id: variant.id,
    revision: revision.revision,
    revision_id: revision.id,
  };
};

/**
 * The event of a deployment of `deployed` to `environment` by `holder` (a revert: to environment revision
 * `revertedTo`): the environment's next revision, what it ran before (null at first) and what it runs now.
 */
export function deploymentEvent(
  model: Model,
  holder: { userId: string; key: string },
  environment: EnvironmentRow,
  deployed: RevisionRow,
  revertedTo?: string,
): ExpectedEvent {
  const running = environment.deployed_app_variant_revision_id;
  return appEvent(
    model,
    holder,
    revertedTo ? "environment.reverted" : "environment.deployed",
    model.apps.get(environment.app_id)!,
    {
      environment: environment.name,
      environment_revision: environment.revision + 1,
      environment_revision_id: expect.stringMatching(UUID_V7),
      previous: running ? revisionData(model, model.revisions.get(running)!) : null,
      current: revisionData(model, deployed),
      live_everywhere_by: A_TIME,
      ...(revertedTo ? { reverted_to_revision_id: revertedTo } : {}),
    },
  );
}

/**
 * A predicted outcome's check, with the events its 200 records (`expectEvents`); any other answer records none, which
 * its check (nothing changed) already says.
 */
export const recording = <A extends unknown[]>(
  status: number,
  check: (changed: Changes, ...more: A) => void,
  ...events: ExpectedEvent[]
) => (status === 200 ? withEvents(check, ...events) : check);
