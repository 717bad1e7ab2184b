import { env } from "cloudflare:workers";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import {
  type Account,
  BASE_URL,
  createAccount,
  createAppVia,
  createTeam,
  DEFAULT_ENVIRONMENTS,
  deploy,
  getRevisions,
  issueKey,
  type Role,
  revokeApiKey,
  send,
} from "./fixtures";
import { databaseProblems, declaredForeignKeys, describeForeignKey, FOREIGN_KEYS, rowCounts, TABLES } from "./harness";

/*
 * Generated requests, through the Worker's own fetch handler, against the real local D1. Each property runs
 * RUNS requests; fast-check picks a new seed each run and, on failure, prints it with the shrunk counterexample
 * ("seed: ..., path: ..."). To replay a failure, put that seed and path into REPLAY (only the counterexample
 * and its shrinks then run, so the run-count checks are skipped); a failure worth keeping becomes a named test
 * below ("cases found by fuzzing").
 */
const RUNS = 1000;
const REPLAY: { seed?: number; path?: string } = {};
const parameters = { numRuns: RUNS, ...REPLAY };
/** Per property: its runs take a few seconds; a failure's shrinking may take longer. */
const TIMEOUT = 120_000;

// ---------------------------------------------------------------------------------------------------------------
// The documented contract (README, "The HTTP contract"), written out independently of src/.

const DOCUMENTED_STATUSES = [200, 401, 403, 404, 405, 409, 413, 415, 422];
const DETAIL_BY_STATUS: Record<number, RegExp> = {
  401: /^Unauthorized$/,
  403: /^You do not have access to perform this action\. Please contact your organization admin\.$/,
  404: /^(App environment not found|App not found|Not Found)$/,
  405: /^Method Not Allowed$/,
  409: /^App with the same name already exists$/,
  413: /^Request body is larger than 16384 bytes$/,
  415: /^Request body must be JSON/,
};
const MAX_BODY_BYTES = 16 * 1024;

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const LOWER_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** RFC 9562 versions 1-8: certainly a valid UUID. */
const RFC_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
/** UUID-shaped, whatever the version and variant: a string not of this shape is certainly not a valid id. */
const UUID_SHAPED = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const Uuid = z.string().regex(LOWER_UUID);
const CreatedBody = z.strictObject({ app_id: z.string().regex(UUID_V7), app_name: z.string() });
const RecordBody = z.strictObject({
  name: z.string(),
  app_id: Uuid,
  project_id: Uuid,
  deployed_app_variant_id: Uuid.nullable(),
  deployed_variant_name: z.string().nullable(),
  deployed_app_variant_revision_id: Uuid.nullable(),
  revision: z.number().int().min(0).nullable(),
  revisions: z.array(
    z.strictObject({
      id: Uuid,
      revision: z.number().int().min(1),
      modified_by: z.string(),
      deployed_app_variant_revision: Uuid.nullable(),
      deployment: Uuid.nullable(),
      created_at: z.string().regex(TIMESTAMP),
    }),
  ),
  organization_id: Uuid.nullable().optional(),
  workspace_id: Uuid.nullable().optional(),
});
const ErrorBody = z.strictObject({ detail: z.string().min(1) });
const ValidationBody = z.strictObject({
  detail: z
    .array(
      z.strictObject({
        loc: z
          .array(z.union([z.string(), z.number().int()]))
          .min(1)
          .refine((loc) => loc[0] === "body" || loc[0] === "path", "loc[0] is body or path"),
        msg: z.string(),
        type: z.string(),
      }),
    )
    .min(1),
});
type Issue = z.infer<typeof ValidationBody>["detail"][number];

/**
 * Whether a length is within 1..255, as far as the contract is certain: the README counts UTF-16 code units, the
 * validator (zod 4) counts code points; a string within the limit in one count and over it in the other is left
 * undecided here (undefined), and pinned down by the named tests below ("cases found by fuzzing").
 */
/** Lengths are counted in code points, as pydantic counts them (README "Choices"). */
const lengthWithin = (text: string, max = 255): boolean => {
  const codePoints = [...text].length;
  return codePoints >= 1 && codePoints <= max;
};

/** Text that cannot be stored as UTF-8 (half of a surrogate pair) is refused. */
const hasLoneSurrogate = (text: string) => LONE_SURROGATE.test(text);

/** What app_name must be (README "Choices"): 1-255 characters after NFC, not blank, no control characters. */
function nameIsValid(value: unknown): boolean {
  if (typeof value !== "string") return false;
  const name = value.normalize("NFC");
  if (name.trim() === "" || /\p{Cc}/u.test(name) || hasLoneSurrogate(name)) return false;
  return lengthWithin(name);
}

/** What environment_name must be: 1-255 characters, no control characters. */
const environmentNameIsValid = (name: string): boolean =>
  /\p{Cc}/u.test(name) || hasLoneSurrogate(name) ? false : lengthWithin(name);

/**
 * Compares two strings through their JSON form, which escapes lone surrogates: a failure message holding a raw lone
 * surrogate breaks the test runner's reporting (its WebSocket refuses the invalid UTF-8).
 */
const expectSameText = (actual: string | undefined, expected: string) =>
  expect(JSON.stringify(actual)).toBe(JSON.stringify(expected));

const hasIssueAt = (issues: Issue[], ...loc: string[]) =>
  issues.some((issue) => JSON.stringify(issue.loc) === JSON.stringify(loc));

/**
 * Checks what every response must be, whatever the request: a documented status, a JSON body of the documented
 * shape, the documented message. Returns the parsed body.
 */
async function expectDocumentedResponse(response: Response, endpoint: "create" | "list" | "another route"): Promise<unknown> {
  const text = await response.text();
  expect(DOCUMENTED_STATUSES, `status ${response.status}: ${text.slice(0, 300)}`).toContain(response.status);
  expect(response.headers.get("Content-Type")).toMatch(/^application\/json/);
  let body: unknown;
  expect(() => (body = JSON.parse(text)), `not JSON: ${text.slice(0, 300)}`).not.toThrow();
  if (response.status === 200) {
    if (endpoint !== "another route") (endpoint === "create" ? CreatedBody : RecordBody).parse(body);
  } else if (response.status === 422) {
    ValidationBody.parse(body);
  } else {
    const { detail } = ErrorBody.parse(body);
    expect(detail).toMatch(DETAIL_BY_STATUS[response.status]);
    if (response.status === 401) expect(response.headers.get("WWW-Authenticate")).toBeTruthy();
  }
  return body;
}

// ---------------------------------------------------------------------------------------------------------------
// The accounts and apps requests are made against.

/** A live key, and what its holder may do. */
interface Holder {
  label: string;
  key: string;
  /** The holder's role in each organization they belong to (apps there are visible to them). */
  roles: Map<string, Role>;
  /** The project the key names: where an untargeted create goes. */
  keyProjectId: string;
}

const mayCreateIn = (holder: Holder, organizationId: string) =>
  ["owner", "admin", "editor"].includes(holder.roles.get(organizationId) ?? "none");

interface KnownApp {
  id: string;
  organizationId: string;
  /** The record of each environment, as a member reads it (the fuzzed GETs must answer exactly this). */
  records: Map<string, unknown>;
}

let owner: Account;
let editor: Account;
let viewer: Account;
let outsider: Account;
let team: Awaited<ReturnType<typeof createTeam>>;
let holders: Holder[];
let deadKeys: { label: string; key: string }[];
let apps: KnownApp[];
let targets: Map<string, { organizationId: string; projectId: string }>;

beforeAll(async () => {
  vi.spyOn(console, "log").mockImplementation(() => {}); // one request log line per request: thousands
  [owner, editor, viewer, outsider] = [
    await createAccount(),
    await createAccount(),
    await createAccount(),
    await createAccount(),
  ];
  team = await createTeam(owner, [
    [editor, "editor"],
    [viewer, "viewer"],
  ]);
  const roles = (...entries: [string, Role][]) => new Map(entries);
  holders = [
    {
      label: "owner",
      key: owner.key,
      roles: roles([owner.organizationId, "owner"], [team.organizationId, "owner"]),
      keyProjectId: owner.projectId,
    },
    {
      label: "owner, key in the team",
      key: await issueKey(owner.userId, team.projectId),
      roles: roles([owner.organizationId, "owner"], [team.organizationId, "owner"]),
      keyProjectId: team.projectId,
    },
    {
      label: "editor",
      key: editor.key,
      roles: roles([editor.organizationId, "owner"], [team.organizationId, "editor"]),
      keyProjectId: editor.projectId,
    },
    {
      label: "viewer, key in the team",
      key: await issueKey(viewer.userId, team.projectId),
      roles: roles([viewer.organizationId, "owner"], [team.organizationId, "viewer"]),
      keyProjectId: team.projectId,
    },
    { label: "outsider", key: outsider.key, roles: roles([outsider.organizationId, "owner"]), keyProjectId: outsider.projectId },
  ];
  // What each body field may name ("project_id:<id>", ...), with its organization and (default) project.
  targets = new Map();
  for (const account of [owner, editor, viewer, outsider, team]) {
    const target = { organizationId: account.organizationId, projectId: account.projectId };
    targets.set(`project_id:${account.projectId}`, target);
    targets.set(`workspace_id:${account.workspaceId}`, target);
    targets.set(`organization_id:${account.organizationId}`, target);
  }
  const revoked = await issueKey(owner.userId, owner.projectId);
  await revokeApiKey(env.DB, revoked.split(".")[0]);
  deadKeys = [
    { label: "expired", key: await issueKey(owner.userId, owner.projectId, "2001-01-01T00:00:00.000Z") },
    { label: "revoked", key: revoked },
    { label: "wrong secret", key: `${owner.key.split(".")[0]}.${"0".repeat(64)}` },
    { label: "unknown prefix", key: `Zz9Zz9Zz.${owner.key.split(".")[1]}` },
  ];

  const ownApp = await createAppVia(owner.key, { app_name: "fuzz-own" });
  const teamApp = await createAppVia(owner.key, { app_name: "fuzz-team", organization_id: team.organizationId });
  const otherApp = await createAppVia(outsider.key, { app_name: "fuzz-other" });
  await deploy(ownApp, "development", "main", owner);
  for (const variant of ["main", "main", "canary"]) await deploy(teamApp, "production", variant, editor);
  apps = [];
  for (const [id, organizationId, reader] of [
    [ownApp, owner.organizationId, owner],
    [teamApp, team.organizationId, viewer],
    [otherApp, outsider.organizationId, outsider],
  ] as const) {
    const records = new Map<string, unknown>();
    for (const name of DEFAULT_ENVIRONMENTS) {
      const response = await getRevisions(reader.key, id, name);
      expect(response.status).toBe(200);
      records.set(name, await response.json());
    }
    apps.push({ id, organizationId, records });
  }
  expect(await databaseProblems()).toEqual([]);
});

afterAll(() => {
  vi.restoreAllMocks();
});

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

const anyString = fc.oneof(
  { arbitrary: fc.constantFrom(...NASTY_STRINGS), weight: 4 },
  { arbitrary: fc.string({ unit: "binary", maxLength: 40 }), weight: 2 },
  { arbitrary: fc.string({ unit: "grapheme", maxLength: 40 }), weight: 2 },
  { arbitrary: fc.string({ unit: "binary-ascii", maxLength: 40 }), weight: 2 },
  { arbitrary: fc.string({ unit: "grapheme-ascii", minLength: 200, maxLength: 600 }), weight: 1 },
);

/** Names the service must accept (mostly), often repeated so that collisions (409) happen. */
const likelyValidName = fc.oneof(
  {
    arbitrary: fc.constantFrom(
      "app",
      "billing",
      "App",
      "caf\u00e9",
      "cafe\u0301",
      "\u{1f600}",
      "x".repeat(255),
      "e\u0301".repeat(200),
      "' OR 1=1 --",
    ),
    weight: 3,
  },
  { arbitrary: fc.string({ unit: "grapheme", minLength: 1, maxLength: 30 }), weight: 1 },
  { arbitrary: fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 8 }), weight: 1 },
);

const deepText = fc
  .tuple(
    fc.oneof(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1_000, max: 9_000 })),
    fc.constantFrom("array", "object", "in app_name", "under __proto__"),
  )
  .map(([depth, shape]) => {
    const arrays = "[".repeat(depth) + "]".repeat(depth);
    switch (shape) {
      case "array":
        return arrays;
      case "object":
        return `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
      case "in app_name":
        return `{"app_name":${arrays}}`;
      default:
        return `{"__proto__":${arrays},"app_name":"deep"}`;
    }
  });

/** A value for any field: strings, ids, other JSON types. */
const idStrings = () => {
  const ids = [
    owner.projectId,
    owner.workspaceId,
    owner.organizationId,
    team.projectId,
    team.workspaceId,
    team.organizationId,
    outsider.projectId,
    outsider.workspaceId,
    outsider.organizationId,
    ...apps.map((app) => app.id),
  ];
  return fc.oneof(
    { arbitrary: fc.constantFrom(...ids), weight: 4 },
    { arbitrary: fc.constantFrom(...ids).map((id) => id.toUpperCase()), weight: 1 },
    { arbitrary: fc.uuid(), weight: 2 },
  );
};
const fieldValue = () =>
  fc.oneof(
    { arbitrary: anyString, weight: 4 },
    { arbitrary: likelyValidName, weight: 2 },
    { arbitrary: idStrings(), weight: 2 },
    {
      arbitrary: fc.constantFrom<unknown>(null, true, false, 0, -1, 1.5, 1e308, [], {}, ["app"], { app_name: "inner" }),
      weight: 1,
    },
    { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 1 },
  );

/** A raw JSON object text, keys possibly repeated, escaped or prototype names, values possibly raw nesting. */
const rawObjectText = () => {
  const keyText = fc.oneof(
    {
      arbitrary: fc.constantFrom("app_name", "project_id", "workspace_id", "organization_id").map((key) => JSON.stringify(key)),
      weight: 6,
    },
    {
      arbitrary: fc.constantFrom(
        '"__proto__"',
        '"constructor"',
        '"prototype"',
        '"app\\u005fname"',
        '"\\u0061pp_name"',
        '"APP_NAME"',
        '"app_name "',
        '""',
      ),
      weight: 3,
    },
    { arbitrary: anyString.map((key) => JSON.stringify(key)), weight: 1 },
  );
  const valueText = fc.oneof(
    { arbitrary: fieldValue().map((value) => JSON.stringify(value) ?? "null"), weight: 6 },
    { arbitrary: deepText, weight: 1 },
    { arbitrary: fc.json({ maxDepth: 2 }), weight: 1 },
  );
  return fc
    .array(fc.tuple(keyText, valueText), { maxLength: 8 })
    .map((members) => `{${members.map(([key, value]) => `${key}:${value}`).join(",")}}`);
};

/** A structured body: the four fields (each possibly absent) and unknown extras. */
const structuredBody = () => {
  const idValue = fc.oneof(
    { arbitrary: fc.constant(null), weight: 3 },
    { arbitrary: idStrings(), weight: 3 },
    { arbitrary: fieldValue(), weight: 1 },
  );
  return fc
    .tuple(
      fc.record(
        {
          app_name: fc.oneof({ arbitrary: likelyValidName, weight: 3 }, { arbitrary: fieldValue(), weight: 2 }),
          project_id: idValue,
          workspace_id: idValue,
          organization_id: idValue,
        },
        { requiredKeys: [] },
      ),
      fc.dictionary(anyString, fieldValue(), { maxKeys: 3 }),
    )
    .map(([fields, extra]) => JSON.stringify({ ...extra, ...fields }));
};

/** A create as a client means it: a plausible name, at most one target, mostly known ids. */
const wellFormedBody = () =>
  fc
    .tuple(likelyValidName, fc.constantFrom(undefined, "project_id", "workspace_id", "organization_id"), idStrings())
    .map(([app_name, field, id]) => JSON.stringify(field ? { app_name, [field]: id } : { app_name }));

interface BodySpec {
  kind: string;
  body: string | Uint8Array | undefined;
}

const bodySpec = (): fc.Arbitrary<BodySpec> => {
  const text = (kind: string, arbitrary: fc.Arbitrary<string>) => arbitrary.map((body): BodySpec => ({ kind, body }));
  return fc.oneof(
    { arbitrary: text("well-formed", wellFormedBody()), weight: 12 },
    { arbitrary: text("structured", structuredBody()), weight: 8 },
    { arbitrary: text("raw members", rawObjectText()), weight: 4 },
    {
      arbitrary: text(
        "JSON value",
        fc.jsonValue().map((value) => JSON.stringify(value)),
      ),
      weight: 1,
    },
    { arbitrary: text("unicode JSON", fc.json({ stringUnit: "binary" })), weight: 1 },
    { arbitrary: text("deep", deepText), weight: 1 },
    { arbitrary: text("text", anyString), weight: 1 },
    {
      arbitrary: text(
        "truncated",
        fc.tuple(structuredBody(), fc.nat()).map(([json, n]) => json.slice(0, n % json.length)),
      ),
      weight: 1,
    },
    {
      arbitrary: text(
        "BOM",
        structuredBody().map((json) => `\ufeff${json}`),
      ),
      weight: 1,
    },
    { arbitrary: text("whitespace", fc.constantFrom("", " ", "\n\t ", "\u00a0")), weight: 1 },
    {
      arbitrary: text(
        "around the limit",
        fc
          .oneof(fc.integer({ min: MAX_BODY_BYTES - 40, max: MAX_BODY_BYTES + 10 }), fc.integer({ min: 16_000, max: 40_000 }))
          .map((n) => `{"app_name":"big","pad":"${"y".repeat(n)}"}`),
      ),
      weight: 1,
    },
    { arbitrary: fc.uint8Array({ maxLength: 200 }).map((body): BodySpec => ({ kind: "bytes", body })), weight: 1 },
    { arbitrary: fc.constant<BodySpec>({ kind: "none", body: undefined }), weight: 1 },
  );
};

/** Content types, with whether the contract calls them JSON (undefined: no claim). */
const contentType = fc.oneof(
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

interface AuthSpec {
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

const authSpec = (): fc.Arbitrary<AuthSpec> => {
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
const extraHeaders = fc.record(
  {
    "x-d1-bookmark": fc.oneof(fc.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/), headerText),
    "X-Request-Id": headerText,
  },
  { requiredKeys: [] },
);

const headersOf = (auth: AuthSpec, extra: Record<string, string>, type?: string): Record<string, string> => ({
  ...extra,
  ...(auth.header !== undefined ? { Authorization: auth.header } : {}),
  ...(type !== undefined ? { "Content-Type": type } : {}),
});

// ---------------------------------------------------------------------------------------------------------------

describe("fuzzing POST /apps", () => {
  it(
    `answers every generated request (${RUNS}) as documented, and creates exactly one app per 200`,
    async () => {
      const appsBefore = (await rowCounts()).apps;
      let requests = 0;
      let created = 0;
      const statuses = new Map<number, number>();
      // The names taken in each project (NFC, as stored): those in the database now, then every name a 200 creates.
      const taken = new Map<string, Set<string>>();
      const take = (projectId: string, name: string) => taken.set(projectId, (taken.get(projectId) ?? new Set()).add(name));
      const { results: existing } = await env.DB.prepare("SELECT project_id, name FROM apps").all<{
        project_id: string;
        name: string;
      }>();
      for (const row of existing) take(row.project_id, row.name);

      await fc.assert(
        fc.asyncProperty(
          authSpec(),
          contentType,
          bodySpec(),
          fc.boolean(),
          extraHeaders,
          async (auth, [type, isJsonType], spec, slash, extra) => {
            requests += 1;
            const response = await send("POST", slash ? "/apps/" : "/apps", {
              rawBody: spec.body,
              headers: headersOf(auth, extra, type),
            });
            const body = await expectDocumentedResponse(response, "create");
            statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
            expect([404, 405], "POST /apps is always routed").not.toContain(response.status);

            // What the server reads: the bytes sent, decoded as UTF-8.
            const bytes = typeof spec.body === "string" ? new TextEncoder().encode(spec.body) : (spec.body ?? new Uint8Array());
            const text = new TextDecoder().decode(bytes);
            let parsed: { value: unknown } | undefined;
            try {
              parsed = { value: JSON.parse(text) };
            } catch {
              parsed = undefined;
            }

            // The target the body names: the first of project_id, workspace_id, organization_id given (README).
            const fields =
              parsed?.value !== null && typeof parsed?.value === "object" && !Array.isArray(parsed.value)
                ? (parsed.value as Record<string, unknown>)
                : {};
            const given = ["project_id", "workspace_id", "organization_id"].filter(
              (field) => Object.hasOwn(fields, field) && fields[field] !== null,
            );
            const target =
              given.length > 0 && typeof fields[given[0]] === "string" ? (fields[given[0]] as string).toLowerCase() : undefined;
            const named = target !== undefined ? targets.get(`${given[0]}:${target}`) : undefined;
            const expectedProject = given.length === 0 ? auth.holder?.keyProjectId : named?.projectId;
            // Whether the name was taken in that project before this request: a valid create there is then a 409.
            const appName = Object.hasOwn(fields, "app_name") ? fields.app_name : undefined;
            const nameTaken =
              expectedProject !== undefined &&
              typeof appName === "string" &&
              (taken.get(expectedProject)?.has(appName.normalize("NFC")) ?? false);

            if (response.status === 200) {
              // Created: the name is the one sent (NFC), and the app is in the database under it.
              created += 1;
              const { app_id, app_name } = body as z.infer<typeof CreatedBody>;
              const sent = (parsed?.value as { app_name?: unknown } | undefined)?.app_name;
              expect(typeof sent).toBe("string");
              expectSameText(app_name, (sent as string).normalize("NFC"));
              const row = await env.DB.prepare("SELECT name, project_id FROM apps WHERE id = ?")
                .bind(app_id)
                .first<{ name: string; project_id: string }>();
              expect(row).not.toBeNull();
              expect(row?.project_id).toBe(expectedProject);
              // Names that are not well-formed UTF-16 are refused (see "cases found by fuzzing"); the rest are stored verbatim.
              expect(LONE_SURROGATE.test(app_name)).toBe(false);
              expectSameText(row?.name, app_name);
              take(row!.project_id, app_name);
            }

            // The key is checked before anything else.
            if (!auth.holder) {
              expect(response.status).toBe(401);
              return;
            }
            expect(response.status).not.toBe(401);
            if (bytes.length > MAX_BODY_BYTES) {
              expect(response.status).toBe(413);
              return;
            }
            expect(response.status).not.toBe(413);
            if (isJsonType === false) expect(response.status).toBe(415);
            if (isJsonType !== true) return;
            expect(response.status).not.toBe(415);

            const issues = response.status === 422 ? (body as { detail: Issue[] }).detail : [];
            if (text.trim() === "") {
              expect(body).toEqual({ detail: [{ loc: ["body"], msg: "Field required", type: "missing" }] });
            } else if (!parsed) {
              expect(body).toEqual({ detail: [{ loc: ["body"], msg: "JSON decode error", type: "json_invalid" }] });
            } else if (parsed.value === null || typeof parsed.value !== "object" || Array.isArray(parsed.value)) {
              expect(response.status).toBe(422);
              expect(hasIssueAt(issues, "body")).toBe(true);
            } else {
              const validName = nameIsValid(appName);
              if (validName === false) {
                expect(response.status).toBe(422);
                expect(hasIssueAt(issues, "body", "app_name")).toBe(true);
              }
              for (const field of ["project_id", "workspace_id", "organization_id"]) {
                const value = Object.hasOwn(fields, field) ? fields[field] : undefined;
                if (value !== undefined && value !== null && (typeof value !== "string" || !UUID_SHAPED.test(value))) {
                  expect(response.status).toBe(422);
                  expect(hasIssueAt(issues, "body", field)).toBe(true);
                }
              }
              // A valid name into the key's project, or into one named target: the caller's role there decides, then
              // whether the name is taken.
              const createdOrTaken = nameTaken ? 409 : 200;
              if (validName === true && given.length === 0) {
                const keyOrganization = targets.get(`project_id:${auth.holder.keyProjectId}`)!.organizationId;
                expect(response.status).toBe(mayCreateIn(auth.holder, keyOrganization) ? createdOrTaken : 403);
              }
              if (validName === true && given.length === 1 && target !== undefined && RFC_UUID.test(target)) {
                expect(response.status).toBe(named && mayCreateIn(auth.holder, named.organizationId) ? createdOrTaken : 403);
              }
            }
          },
        ),
        parameters,
      );

      console.info(`POST /apps: ${requests} requests, by status: ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
      if (REPLAY.path === undefined) {
        expect(requests).toBeGreaterThanOrEqual(RUNS);
        // The generators reach every documented answer of this endpoint.
        for (const status of [200, 401, 403, 409, 413, 415, 422])
          expect(statuses.get(status) ?? 0, `status ${status} never seen`).toBeGreaterThan(0);
      }
      expect((await rowCounts()).apps - appsBefore).toBe(created);
      expect(await databaseProblems()).toEqual([]);
    },
    TIMEOUT,
  );
});

interface Segment {
  /** As written into the URL. */
  raw: string;
  /** The path parameter the service must see, when the encoding makes it certain. */
  decoded?: string;
}

const encoded = (value: string): Segment => {
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

const segment = (values: fc.Arbitrary<string>): fc.Arbitrary<Segment> =>
  fc.oneof(
    { arbitrary: values.map(encoded), weight: 14 },
    { arbitrary: anyString.map(encoded), weight: 3 },
    { arbitrary: anyString.map(doubleEncoded), weight: 1 },
    { arbitrary: anyString.map((raw): Segment => ({ raw })), weight: 1 },
    { arbitrary: fc.constantFrom(...TRICKY_SEGMENTS), weight: 2 },
  );

/** decodeURIComponent, or the text as it is where it does not decode (as the router leaves it). */
const decodeTolerantly = (text: string) => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};

/**
 * Whether the route must take a request path: unless the URL parser leaves it of another shape than
 * /apps/:app_id/revisions/:environment_name (a raw "/", "\", "?" or "#", a dot segment; a trailing slash aside),
 * or a parameter decodes to "", "." or ".." or holds a "/".
 */
function routeMustTake(path: string): boolean {
  const segments = new URL(`${BASE_URL}${path}`).pathname.replace(/(.)\/$/, "$1").split("/");
  if (segments.length !== 5 || segments[0] !== "" || segments[1] !== "apps" || segments[3] !== "revisions") return false;
  return [segments[2], segments[4]]
    .map(decodeTolerantly)
    .every((parameter) => !["", ".", ".."].includes(parameter) && !parameter.includes("/"));
}

describe("fuzzing GET /apps/:app_id/revisions/:environment_name", () => {
  it(
    `answers every generated request (${RUNS}) as documented, shows an app only to members, and writes nothing`,
    async () => {
      const before = await rowCounts();
      let requests = 0;
      const statuses = new Map<number, number>();
      const appIds = fc.oneof(
        { arbitrary: fc.constantFrom(...apps.map((app) => app.id)), weight: 6 },
        { arbitrary: fc.constantFrom(...apps.map((app) => app.id.toUpperCase())), weight: 1 },
        { arbitrary: fc.uuid(), weight: 1 },
        { arbitrary: fc.constantFrom(...apps.map((app) => `${app.id}${"0".repeat(5000)}`)), weight: 1 },
      );
      const environmentNames = fc.oneof(
        { arbitrary: fc.constantFrom(...DEFAULT_ENVIRONMENTS), weight: 6 },
        {
          arbitrary: fc.constantFrom(
            "Development",
            "PRODUCTION",
            "staging ",
            " staging",
            "qa",
            "a".repeat(255),
            "a".repeat(256),
            "p".repeat(10_000),
          ),
          weight: 1,
        },
      );

      await fc.assert(
        fc.asyncProperty(
          authSpec(),
          segment(appIds),
          segment(environmentNames),
          fc.boolean(),
          extraHeaders,
          async (auth, app, environment, slash, extra) => {
            requests += 1;
            const path = `/apps/${app.raw}/revisions/${environment.raw}${slash ? "/" : ""}`;
            const response = await send("GET", path, { headers: headersOf(auth, extra) });
            // A path the URL parser normalises into another route's (a dot segment) is answered by that route.
            const body = await expectDocumentedResponse(response, routeMustTake(path) ? "list" : "another route");
            statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
            expect([403, 409, 413, 415]).not.toContain(response.status);

            if (response.status === 200 && routeMustTake(path)) {
              // Only an existing environment of an app the caller's organization owns, exactly as a member reads it.
              const record = body as z.infer<typeof RecordBody>;
              const known = apps.find((candidate) => candidate.id === record.app_id);
              expect(known, `200 for an unknown app ${record.app_id}`).toBeDefined();
              expect(auth.holder?.roles.has(known!.organizationId), "200 for an app the caller cannot see").toBe(true);
              expect(body).toEqual(known!.records.get(record.name));
            }
            // A path the route does not take (no key needed then): only one the URL parser leaves of another shape, or a
            // parameter that is empty, a dot segment or holds a "/".
            if (response.status === 405 || (response.status === 404 && (body as { detail: string }).detail === "Not Found")) {
              expect(routeMustTake(path), `${path} was not routed`).toBe(false);
              return;
            }
            if (!auth.holder) {
              expect(response.status).toBe(401);
              return;
            }
            expect(response.status).not.toBe(401);

            // Where the encoding makes the parameters certain, the answer is certain too.
            const [appId, name] = [app.decoded, environment.decoded];
            if (appId === undefined || name === undefined || [appId, name].some((value) => ["", ".", ".."].includes(value)))
              return;
            const issues = response.status === 422 ? (body as { detail: Issue[] }).detail : [];
            if (!UUID_SHAPED.test(appId)) expect(hasIssueAt(issues, "path", "app_id")).toBe(true);
            const validName = environmentNameIsValid(name);
            if (validName === false) expect(hasIssueAt(issues, "path", "environment_name")).toBe(true);
            if (RFC_UUID.test(appId) && validName === true) {
              const known = apps.find((candidate) => candidate.id === appId.toLowerCase());
              const visible = known !== undefined && auth.holder.roles.has(known.organizationId);
              if (visible && (DEFAULT_ENVIRONMENTS as readonly string[]).includes(name)) {
                expect(response.status).toBe(200);
                expect(body).toEqual(known.records.get(name));
              } else {
                expect(body).toEqual({ detail: "App environment not found" });
              }
            }
          },
        ),
        parameters,
      );

      console.info(`GET revisions: ${requests} requests, by status: ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
      if (REPLAY.path === undefined) {
        expect(requests).toBeGreaterThanOrEqual(RUNS);
        for (const status of [200, 401, 404, 422])
          expect(statuses.get(status) ?? 0, `status ${status} never seen`).toBeGreaterThan(0);
      }
      expect(await rowCounts()).toEqual(before);
      expect(await databaseProblems()).toEqual([]);
    },
    TIMEOUT,
  );
});

describe("cases found by fuzzing", () => {
  const post = (body: string) =>
    send("POST", "/apps", { key: owner.key, rawBody: body, headers: { "Content-Type": "application/json" } });
  const get = (appId: string, environment: string) => send("GET", `/apps/${appId}/revisions/${environment}`, { key: owner.key });

  it("counts lengths in code points, as pydantic does: 255 emoji pass, 256 do not", async () => {
    expect((await post(JSON.stringify({ app_name: "\u{1f600}".repeat(256) }))).status).toBe(422);
    expect((await post(JSON.stringify({ app_name: "\u{1f600}".repeat(255) }))).status).toBe(200);
    expect((await get(apps[0].id, encodeURIComponent("\u{1f600}".repeat(256)))).status).toBe(422);
  });

  // Found while writing the fuzz oracle: a JSON escape can carry a lone surrogate ("\ud800"), which D1 would store
  // as bytes that are not UTF-8 (read back as U+FFFD), so the stored name would not be the one the client was told.
  it("refuses a name or an environment name with a lone surrogate with 422", async () => {
    const response = await post('{"app_name":"lone \\ud800 surrogate"}');
    expect(response.status).toBe(422);
    const { detail } = (await response.json()) as { detail: Issue[] };
    expect(hasIssueAt(detail, "body", "app_name")).toBe(true);
  });

  it("decodes a path parameter exactly once: %64evelopment is development, %2564evelopment is not", async () => {
    expect((await get(apps[0].id, "%64evelopment")).status).toBe(200);
    expect(await (await get(apps[0].id, "%2564evelopment")).json()).toEqual({ detail: "App environment not found" });
    expect(await (await get(apps[0].id, "development%2F")).json()).toEqual({ detail: "App environment not found" });
  });

  it("reads a BOM-prefixed JSON body as JSON (the UTF-8 decoder drops the BOM)", async () => {
    const response = await post('\ufeff{"app_name":"with-bom"}');
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ app_name: "with-bom" });
  });

  it("answers 422, not 500, for JSON nested 8,000 deep in a field, and ignores __proto__ keys", async () => {
    const deep = "[".repeat(8000) + "]".repeat(8000);
    const response = await post(`{"__proto__":{"app_name":"polluted"},"app_name":${deep}}`);
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({
      detail: [{ loc: ["body", "app_name"], msg: "Input should be a valid string", type: "string_type" }],
    });
    const proto = await post('{"__proto__":{"app_name":"polluted"}}');
    expect(await proto.json()).toEqual({ detail: [{ loc: ["body", "app_name"], msg: "Field required", type: "missing" }] });
  });

  it("takes the last of duplicate keys, as JSON.parse does", async () => {
    const response = await post('{"app_name":"first-of-two","app_name":"last-of-two"}');
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ app_name: "last-of-two" });
  });
});

describe("the fuzzing harness itself", () => {
  it("prints the seed and path of a failure, and replays the same counterexample from them", async () => {
    const failing = fc.asyncProperty(fc.integer(), async (n) => n < 1000);
    const error = await fc.assert(failing).then(
      () => null,
      (caught: Error) => caught,
    );
    const [, seed, path] = /seed: (-?\d+), path: "([^"]+)"/.exec(error?.message ?? "") ?? [];
    expect(seed, error?.message).toBeDefined();
    const replayed = await fc.check(failing, { seed: Number(seed), path });
    expect(replayed.failed).toBe(true);
    expect(replayed.counterexample).toEqual([1000]);
  });

  it("checks every table and every foreign key the migrations declare", async () => {
    const { results } = await env.DB.prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' AND name <> 'd1_migrations' ORDER BY name",
    ).all<{ name: string }>();
    expect(results.map((row) => row.name)).toEqual([...TABLES].sort());
    expect(FOREIGN_KEYS.map(describeForeignKey).sort()).toEqual(declaredForeignKeys());
  });

  it("sees an app without its environments and an environment whose counter disagrees with its revisions", async () => {
    // D1 itself refuses orphans (the foreign keys are enforced), so the LEFT JOIN checks are a second line.
    await expect(
      env.DB.prepare("INSERT INTO apps (id, project_id, name, created_by) VALUES ('orphan', ?, 'orphan', 'no such user')")
        .bind(owner.projectId)
        .run(),
    ).rejects.toThrow(/FOREIGN KEY constraint failed/);
    expect(await databaseProblems()).toEqual([]);
    const appId = crypto.randomUUID();
    await env.DB.prepare("INSERT INTO apps (id, project_id, name, created_by) VALUES (?, ?, 'no environments', ?)")
      .bind(appId, owner.projectId, owner.userId)
      .run();
    await env.DB.prepare("UPDATE environments SET revision = revision + 1 WHERE app_id = ? AND name = 'staging'")
      .bind(apps[0].id)
      .run();
    try {
      const problems = await databaseProblems();
      expect(problems).toHaveLength(2);
      expect(problems.find((problem) => problem.startsWith("app without exactly development,production,staging"))).toContain(
        appId,
      );
      expect(problems.find((problem) => problem.startsWith("environment revisions not 1..revision"))).toContain('"revision":1');
    } finally {
      await env.DB.prepare("DELETE FROM apps WHERE id = ?").bind(appId).run();
      await env.DB.prepare("UPDATE environments SET revision = revision - 1 WHERE app_id = ? AND name = 'staging'")
        .bind(apps[0].id)
        .run();
    }
    expect(await databaseProblems()).toEqual([]);
  });
});
