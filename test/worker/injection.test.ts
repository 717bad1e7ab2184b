/// <reference types="vite/client" />
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Account, createAccount, createAppVia, createTeam, deploy } from "./fixtures";
import { databaseProblems, sendDirect, snapshot } from "./harness";

/*
 * SQL injection, from the outside (every body field and path parameter, against the real D1: nothing may change
 * beyond what the same request with an ordinary value would change, and no answer may carry SQL or internals),
 * and from the inside (a static check of src/: SQL text is made of literals and constant fragments only, so
 * request values can reach SQL only as bound parameters).
 */

const PAYLOADS = [
  "' OR 1=1 --",
  "' OR '1'='1",
  '" OR ""="',
  "'; DROP TABLE apps; --",
  '"; DROP TABLE apps; --',
  "1; DELETE FROM api_keys",
  "x'); DELETE FROM apps; --",
  "' UNION SELECT key_hash, prefix FROM api_keys --",
  "x' UNION SELECT NULL, NULL, NULL, NULL --",
  "') OR ('a'='a",
  "admin'/*",
  "*/ OR 1=1 /*",
  "anything' --",
  "/**/UNION/**/SELECT/**/1",
  "'||(SELECT key_hash FROM api_keys LIMIT 1)||'",
  "' AND (SELECT COUNT(*) FROM users) > 0 --",
  "'; UPDATE api_keys SET revoked_at = NULL; --",
  "'; PRAGMA foreign_keys = OFF; --",
  "'; ATTACH DATABASE 'file:x' AS x; --",
  "x'); INSERT INTO apps VALUES ('a', 'b', 'c', 'd', 'e'); --",
  "' OR randomblob(1000000000) --",
  "?1",
  "?3 OR 1=1",
  ":name",
  "@p",
  "$1",
  "%",
  "_",
  "%_%",
  "\\' OR 1=1 --",
  "%27%20OR%201%3D1%20--",
  "\u2019 OR 1=1 --", // right single quotation mark
  "\u02bc OR 1=1 --", // modifier letter apostrophe
  "\uff07 OR 1=1 --", // fullwidth apostrophe
  "\uff02; DROP TABLE apps; --", // fullwidth quotation mark
  "\u2018; DROP TABLE apps; --",
  "\u0000' OR 1=1 --", // NUL: refused (control character)
  "a\u0000'; DROP TABLE apps; --",
] as const;

/** What a payload is as a name or an environment name: accepted unless blank or holding a control character. */
const isAcceptableName = (value: string) => value.trim() !== "" && !/\p{Cc}/u.test(value);

/** Text that must never reach a client: SQL, SQLite/D1 internals, stack traces, table names. */
const INTERNALS =
  /sqlite|d1_|sql|syntax|near "|constraint|no such|\b(select|insert|update|delete|union|drop|pragma|from|where)\b|stack|\bat \S+ \(|api_keys|key_hash|organization_members/i;

let owner: Account;
let outsider: Account;
let team: Awaited<ReturnType<typeof createTeam>>;
let appId: string;
let otherAppId: string;

beforeAll(async () => {
  vi.spyOn(console, "log").mockImplementation(() => {});
  owner = await createAccount();
  outsider = await createAccount();
  team = await createTeam(owner);
  appId = await createAppVia(owner.key, { app_name: "target" });
  otherAppId = await createAppVia(outsider.key, { app_name: "someone else's" });
  await deploy(appId, "production", "main", owner);
});

afterAll(() => {
  vi.restoreAllMocks();
});

const authorization = () => ({ Authorization: `ApiKey ${owner.key}` });
const post = (body: unknown) =>
  sendDirect("POST", "/apps", {
    headers: { ...authorization(), "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
const get = (rawAppId: string, rawEnvironment: string) =>
  sendDirect("GET", `/apps/${encodeURIComponent(rawAppId)}/revisions/${encodeURIComponent(rawEnvironment)}`, {
    headers: authorization(),
  });

/** An error answer: the documented shape, and nothing of the payload, SQL or internals in it. */
async function expectCleanError(response: Response, payload: string) {
  const text = await response.text();
  expect(response.status).toBeGreaterThanOrEqual(400);
  expect(response.status).toBeLessThan(500);
  expect(text).not.toMatch(INTERNALS);
  expect(JSON.parse(text)).toHaveProperty("detail");
  if (payload.length >= 3) expect(text).not.toContain(JSON.stringify(payload).slice(1, -1));
  return JSON.parse(text) as { detail: unknown };
}

/** Runs the request and checks that the database is exactly as it was. */
async function expectNoChange<T>(request: () => Promise<T>): Promise<T> {
  const before = await snapshot();
  const result = await request();
  expect(await snapshot()).toEqual(before);
  return result;
}

describe("SQL in app_name", () => {
  it.each(PAYLOADS.map((payload) => [JSON.stringify(payload), payload]))(
    "%s is an ordinary name: stored and read back verbatim, and nothing else changes",
    async (_, payload) => {
      const before = await snapshot();
      const response = await post({ app_name: payload });
      if (!isAcceptableName(payload)) {
        expect(response.status).toBe(422);
        const { detail } = await expectCleanError(response, payload);
        expect(detail).toEqual([
          { loc: ["body", "app_name"], msg: "Value error, app_name must not contain control characters", type: "value_error" },
        ]);
        expect(await snapshot()).toEqual(before);
        return;
      }
      expect(response.status).toBe(200);
      const created = (await response.json()) as { app_id: string; app_name: string };
      expect(created.app_name).toBe(payload);

      // Exactly what a create changes: one app row (the payload, verbatim) and its three environments.
      const after = await snapshot();
      expect(after.counts).toEqual({
        ...before.counts,
        apps: before.counts.apps + 1,
        environments: before.counts.environments + 3,
      });
      expect(after.api_keys).toEqual(before.api_keys);
      const added = after.apps.filter((row) => !before.apps.some((old) => old.id === row.id));
      expect(after.apps.filter((row) => before.apps.some((old) => old.id === row.id))).toEqual(before.apps);
      expect(added).toEqual([
        {
          id: created.app_id,
          project_id: owner.projectId,
          name: payload,
          created_by: owner.userId,
          created_at: expect.any(String),
        },
      ]);
      const { results } = await env.DB.prepare("SELECT name FROM apps WHERE project_id = ? AND name = ?")
        .bind(owner.projectId, payload)
        .all();
      expect(results).toEqual([{ name: payload }]);

      // The app is readable, and the same name again is taken: compared exactly, like any name.
      const record = await get(created.app_id, "development");
      expect(record.status).toBe(200);
      expect(await record.json()).toMatchObject({ app_id: created.app_id, name: "development", revision: 0 });
      const again = await expectNoChange(() => post({ app_name: payload }));
      expect(again.status).toBe(409);
      await expectCleanError(again, payload);
    },
  );

  it("compares names exactly, not as LIKE patterns or case-insensitively", async () => {
    for (const name of ["like_x", "like%", "LIKE_X"]) expect((await post({ app_name: name })).status).toBe(200);
    for (const name of ["likeAx", "like-anything", "Like_x"]) expect((await post({ app_name: name })).status).toBe(200);
    expect((await post({ app_name: "like_x" })).status).toBe(409);
  });
});

describe("SQL in project_id, workspace_id and organization_id", () => {
  const fields = ["project_id", "workspace_id", "organization_id"] as const;
  const cases = fields.flatMap((field) => PAYLOADS.map((payload) => [field, JSON.stringify(payload), payload] as const));

  it.each(cases)("%s = %s is refused (422 uuid_parsing), and nothing changes", async (field, _, payload) => {
    const response = await expectNoChange(() => post({ app_name: "never created", [field]: payload }));
    expect(response.status).toBe(422);
    const { detail } = await expectCleanError(response, payload);
    expect(detail).toEqual([{ loc: ["body", field], msg: "Input should be a valid UUID", type: "uuid_parsing" }]);
  });

  it.each(fields)("%s = a real id followed by SQL is refused, and nothing changes", async (field) => {
    const ids = { project_id: team.projectId, workspace_id: team.workspaceId, organization_id: team.organizationId };
    for (const suffix of ["' OR 1=1 --", "'; DROP TABLE apps; --", " OR 1=1", "\u0000"]) {
      const response = await expectNoChange(() => post({ app_name: "never created", [field]: `${ids[field]}${suffix}` }));
      expect(response.status).toBe(422);
      await expectCleanError(response, suffix);
    }
  });
});

describe("SQL in the path", () => {
  it.each(PAYLOADS.map((payload) => [JSON.stringify(payload), payload]))(
    "app_id = %s is refused (422), and nothing changes",
    async (_, payload) => {
      const response = await expectNoChange(() => get(payload, "production"));
      expect(response.status).toBe(422);
      const { detail } = await expectCleanError(response, payload);
      expect(detail).toEqual([{ loc: ["path", "app_id"], msg: "Input should be a valid UUID", type: "uuid_parsing" }]);
    },
  );

  it.each(PAYLOADS.map((payload) => [JSON.stringify(payload), payload]))(
    "environment_name = %s finds no environment (404, or 422 for a control character), and nothing changes",
    async (_, payload) => {
      for (const target of [appId, otherAppId]) {
        const response = await expectNoChange(() => get(target, payload));
        expect(response.status).toBe(/\p{Cc}/u.test(payload) ? 422 : 404);
        await expectCleanError(response, payload);
      }
    },
  );

  it("app_id = a real id followed by SQL is refused, and nothing changes", async () => {
    for (const suffix of ["' OR 1=1 --", "' OR '1'='1", "; DROP TABLE apps", "%27"]) {
      const response = await expectNoChange(() => get(`${appId}${suffix}`, "production"));
      expect(response.status).toBe(422);
      await expectCleanError(response, suffix);
    }
  });

  it("matches environment names exactly, not as LIKE patterns or case-insensitively", async () => {
    for (const name of ["%", "_______", "dev%", "%tion", "PRODUCTION", "production%", "production "]) {
      const response = await get(appId, name);
      expect(response.status, name).toBe(404);
    }
    expect((await get(appId, "production")).status).toBe(200);
  });
});

describe("SQL in headers", () => {
  it.each(PAYLOADS.filter((payload) => !/[^\x20-\xff]/.test(payload)).map((payload) => [payload]))(
    "Authorization: ApiKey %s is a 401, and nothing changes",
    async (payload) => {
      for (const authorization of [`ApiKey ${payload}`, `ApiKey ${owner.key.split(".")[0]}.${payload}`, payload]) {
        const response = await expectNoChange(() =>
          sendDirect("POST", "/apps", {
            headers: { Authorization: authorization, "Content-Type": "application/json" },
            body: '{"app_name":"x"}',
          }),
        );
        expect(response.status).toBe(401);
        await expectCleanError(response, payload);
      }
    },
  );

  it("ignores a D1 bookmark header holding SQL", async () => {
    for (const payload of [
      "' OR 1=1 --",
      "first-primary",
      "first-unconstrained",
      "00000000-00000000-00000000-00000000000000000000000000000000'--",
    ]) {
      const response = await expectNoChange(() =>
        sendDirect("GET", `/apps/${appId}/revisions/production`, { headers: { ...authorization(), "x-d1-bookmark": payload } }),
      );
      expect(response.status).toBe(200);
      expect(response.headers.get("x-d1-bookmark") ?? "").not.toContain(payload);
    }
  });
});

it("leaves the database consistent after all of the above", async () => {
  expect(await databaseProblems()).toEqual([]);
});

// ---------------------------------------------------------------------------------------------------------------
// The static check: how SQL text is built in src/.

/** Every source file of src/, as text (Vite inlines them when the test is built). */
const SOURCES = Object.fromEntries(
  Object.entries(
    import.meta.glob("../../src/**/*.ts", { query: "?raw", import: "default", eager: true }) as Record<string, string>,
  )
    .filter(([path]) => !path.endsWith(".d.ts"))
    .map(([path, text]) => [path.replace("../../", ""), text]),
);

/**
 * The only expressions SQL templates in src/ may interpolate, each a constant made of literals (checked below):
 * the key check CTE (accounts.ts), the visible-environment CTE, the lineage fragments and their table (apps.ts),
 * the writer roles, and the variant / environment sub-selects of deployVariant (local constants of string literals). Adding SQL with another
 * interpolation makes this test fail: add it here only if it, too, is made of constants.
 */
const ALLOWED_INTERPOLATIONS = new Set([
  "CALLER_CTE",
  "VISIBLE_ENVIRONMENT_CTE",
  "LINEAGE_SELECT",
  "MEMBERSHIP",
  "LINEAGE_SQL[kind]",
  "variantId",
  "environmentId",
  "WRITER_ROLES.map((role) => `'${role}'`).join(\", \")",
]);

/** How each allow-listed name must be declared: a constant whose value is written out as literals. */
const CONSTANT_DECLARATIONS: Record<string, RegExp> = {
  CALLER_CTE: /export const CALLER_CTE = `/,
  VISIBLE_ENVIRONMENT_CTE: /const VISIBLE_ENVIRONMENT_CTE = `/,
  LINEAGE_SELECT: /const LINEAGE_SELECT = `/,
  MEMBERSHIP: /const MEMBERSHIP = `/,
  LINEAGE_SQL: /const LINEAGE_SQL: Record<TargetKind \| "key", string> = \{/,
  variantId: /const variantId = "[^"$`]*";/,
  environmentId: /const environmentId = "[^"$`]*";/,
  WRITER_ROLES: /export const WRITER_ROLES: readonly Role\[\] = \[("[a-z]+"(, )?)+\];/,
};

/** Reserved words of SQL statements, as this code base writes them (upper case). */
const LOOKS_LIKE_SQL = /\b(SELECT|INSERT|UPDATE|DELETE|FROM|WHERE|JOIN|VALUES|CREATE|DROP|PRAGMA)\b/;

interface Literal {
  kind: "string" | "template";
  start: number;
  end: number;
  /** The literal's own text, interpolations left out. */
  text: string;
  /** Source text of each `${...}` interpolation (trimmed). */
  expressions: string[];
}

/**
 * A small TypeScript lexer, enough to find string and template literals (with their interpolations, nested
 * templates included) while skipping comments and regular expression literals. Returns the literals, and a mask
 * of which offsets are code (not inside a literal or comment).
 */
function lex(source: string): { literals: Literal[]; isCode: boolean[] } {
  const literals: Literal[] = [];
  const isCode = Array.from({ length: source.length }, () => true);
  const mark = (from: number, to: number) => {
    for (let i = from; i < to; i++) isCode[i] = false;
  };
  let i = 0;

  const regexCanStart = (at: number) => {
    let j = at - 1;
    while (j >= 0 && /\s/.test(source[j])) j--;
    if (j < 0) return true;
    if ("(,=:[!&|?{};+-*%<>~^".includes(source[j])) return true;
    return /\b(return|typeof|case|in|of|void|throw)$/.test(source.slice(Math.max(0, j - 6), j + 1));
  };

  const skipString = (quote: string) => {
    const start = i++;
    while (i < source.length && source[i] !== quote) i += source[i] === "\\" ? 2 : 1;
    i++;
    literals.push({ kind: "string", start, end: i, text: source.slice(start + 1, i - 1), expressions: [] });
    mark(start, i);
  };

  const skipTemplate = () => {
    const start = i++;
    const literal: Literal = { kind: "template", start, end: 0, text: "", expressions: [] };
    literals.push(literal);
    let chunkStart = i;
    while (i < source.length && source[i] !== "`") {
      if (source[i] === "\\") {
        i += 2;
      } else if (source[i] === "$" && source[i + 1] === "{") {
        literal.text += source.slice(chunkStart, i);
        mark(chunkStart - 1, i + 2);
        i += 2;
        const expressionStart = i;
        scanCode(true);
        literal.expressions.push(source.slice(expressionStart, i).trim());
        chunkStart = i + 1;
        i++; // the closing brace
      } else {
        i++;
      }
    }
    literal.text += source.slice(chunkStart, i);
    mark(chunkStart - 1, i + 1);
    i++;
    literal.end = i;
  };

  /** Scans code; with `untilBrace`, stops at the brace closing an interpolation (i then points at it). */
  const scanCode = (untilBrace: boolean) => {
    let depth = 0;
    while (i < source.length) {
      const c = source[i];
      if (c === "/" && source[i + 1] === "/") {
        const end = source.indexOf("\n", i);
        const to = end === -1 ? source.length : end;
        mark(i, to);
        i = to;
      } else if (c === "/" && source[i + 1] === "*") {
        const to = source.indexOf("*/", i + 2) + 2;
        mark(i, to);
        i = to;
      } else if (c === "/" && regexCanStart(i)) {
        const start = i++;
        let inClass = false;
        while (i < source.length && (inClass || source[i] !== "/")) {
          if (source[i] === "\\") i++;
          else if (source[i] === "[") inClass = true;
          else if (source[i] === "]") inClass = false;
          i++;
        }
        i++;
        mark(start, i);
      } else if (c === "'" || c === '"') {
        skipString(c);
      } else if (c === "`") {
        skipTemplate();
      } else if (c === "{") {
        depth++;
        i++;
      } else if (c === "}") {
        if (untilBrace && depth === 0) return;
        depth--;
        i++;
      } else {
        i++;
      }
    }
  };

  scanCode(false);
  return { literals, isCode };
}

/** Each call of `.name(` in code, with the literal that is its whole argument (undefined when it is anything else). */
function callsOf(source: string, name: string, lexed = lex(source)) {
  const calls: { offset: number; argument: Literal | undefined; receiver: string }[] = [];
  for (const match of source.matchAll(new RegExp(`\\.${name}\\(`, "g"))) {
    if (!lexed.isCode[match.index]) continue;
    let at = match.index + match[0].length;
    while (/\s/.test(source[at])) at++;
    const literal = lexed.literals.find((candidate) => candidate.start === at);
    let after = literal ? literal.end : -1;
    if (literal) {
      while (/\s/.test(source[after])) after++;
      if (source[after] === ",") after++;
      while (/\s/.test(source[after])) after++;
    }
    const receiver = /([\w$.]+)\s*$/.exec(source.slice(Math.max(0, match.index - 60), match.index))?.[1] ?? "";
    calls.push({ offset: match.index, argument: literal && source[after] === ")" ? literal : undefined, receiver });
  }
  return calls;
}

const lineOf = (source: string, offset: number) => source.slice(0, offset).split("\n").length;

/**
 * What is wrong with how the given sources build SQL: a prepare( or (D1) exec( whose argument is not one literal,
 * an SQL literal (a prepare/exec argument anywhere, or a template in src/db whose text has SQL keywords) that
 * interpolates anything outside ALLOWED_INTERPOLATIONS, or SQL with interpolations outside src/db.
 */
function sqlProblems(sources: Record<string, string>): { problems: string[]; prepares: number; interpolated: Set<string> } {
  const problems: string[] = [];
  const interpolated = new Set<string>();
  let prepares = 0;
  for (const [path, source] of Object.entries(sources)) {
    const lexed = lex(source);
    const prepareCalls = callsOf(source, "prepare", lexed);
    // RegExp#exec on a constant pattern is not SQL; any other exec( (D1's) must take a literal.
    const execCalls = callsOf(source, "exec", lexed).filter(
      (call) => !new RegExp(`const ${call.receiver.replace(/[$.]/g, "\\$&")} = /`).test(source),
    );
    prepares += prepareCalls.length;
    for (const [name, calls] of [
      ["prepare", prepareCalls],
      ["exec", execCalls],
    ] as const) {
      for (const call of calls) {
        if (!call.argument)
          problems.push(`${path}:${lineOf(source, call.offset)}: ${name}( whose argument is not a single literal`);
      }
    }
    const sqlArguments = new Set([...prepareCalls, ...execCalls].map((call) => call.argument));
    for (const literal of lexed.literals) {
      const inDb = path.startsWith("src/db/");
      if (!sqlArguments.has(literal) && !(inDb && LOOKS_LIKE_SQL.test(literal.text))) continue;
      if (!inDb && literal.expressions.length > 0) {
        problems.push(`${path}:${lineOf(source, literal.start)}: SQL with interpolations outside src/db`);
        continue;
      }
      for (const expression of literal.expressions) {
        interpolated.add(expression.replace(/\s+/g, " "));
        if (!ALLOWED_INTERPOLATIONS.has(expression.replace(/\s+/g, " "))) {
          problems.push(`${path}:${lineOf(source, literal.start)}: SQL interpolates \${${expression}}`);
        }
      }
    }
  }
  return { problems, prepares, interpolated };
}

describe("static check: SQL in src/ is built from literals and constant fragments only", () => {
  it("reads the sources (src/db among them)", () => {
    expect(Object.keys(SOURCES)).toEqual(expect.arrayContaining(["src/db/accounts.ts", "src/db/apps.ts", "src/index.ts"]));
  });

  it("the lexer finds literals, interpolations and code as expected", () => {
    const sample = [
      "const a = /['`\"]/g; // don't `stop` here",
      "const b = `x ${c.map((r) => `'${r}'`).join(\", \")} y` + 'it\\'s' + \"}\";",
      "/* `not a template` */ db.prepare(",
      "  `SELECT ${CALLER_CTE} FROM t`,",
      ");",
      "const d = 4 / 2; const e = `${d}`;",
    ].join("\n");
    const { literals } = lex(sample);
    expect(literals.map((literal) => [literal.kind, literal.text, literal.expressions])).toEqual([
      ["template", "x  y", ["c.map((r) => `'${r}'`).join(\", \")"]],
      ["template", "''", ["r"]],
      ["string", ", ", []],
      ["string", "it\\'s", []],
      ["string", "}", []],
      ["template", "SELECT  FROM t", ["CALLER_CTE"]],
      ["template", "", ["d"]],
    ]);
    expect(callsOf(sample, "prepare").map((call) => call.argument?.expressions)).toEqual([["CALLER_CTE"]]);
    expect(callsOf("db.prepare(sql)", "prepare")[0].argument).toBeUndefined();
    expect(callsOf("db.prepare(`a` + b)", "prepare")[0].argument).toBeUndefined();
  });

  it("every prepare( takes one literal, and every SQL template interpolates only allow-listed constants", () => {
    const { problems, prepares } = sqlProblems(SOURCES);
    expect(problems).toEqual([]);
    expect(prepares).toBeGreaterThan(10); // the scan did find the data-access code
  });

  it("the check catches SQL built from a value, from a variable, or outside src/db", () => {
    const { problems } = sqlProblems({
      "src/db/bad.ts": [
        "const KEY_PATTERN = /x/; KEY_PATTERN.exec(key);",
        "db.prepare(`SELECT * FROM apps WHERE name = '${name}'`).first();",
        "db.prepare(sql).first();",
        'db.prepare("SELECT * FROM apps WHERE name = \'" + name + "\'").first();',
        "db.exec(`DELETE FROM ${table}`);",
        "db.exec(statements);",
        "const fragment = `FROM apps WHERE id = ${id}`;",
        "db.prepare(`WITH ${CALLER_CTE} SELECT 1 FROM caller`).bind(a, b);",
      ].join("\n"),
      "src/apps/elsewhere.ts": "db.prepare(`WITH ${CALLER_CTE} SELECT 1`);",
    });
    expect(problems).toEqual([
      "src/db/bad.ts:3: prepare( whose argument is not a single literal",
      "src/db/bad.ts:4: prepare( whose argument is not a single literal",
      "src/db/bad.ts:6: exec( whose argument is not a single literal",
      "src/db/bad.ts:2: SQL interpolates ${name}",
      "src/db/bad.ts:5: SQL interpolates ${table}",
      "src/db/bad.ts:7: SQL interpolates ${id}",
      "src/apps/elsewhere.ts:1: SQL with interpolations outside src/db",
    ]);
  });

  it("each constant SQL interpolates is written out as literals in src/db, declared once and never reassigned", () => {
    const db = Object.entries(SOURCES).filter(([path]) => path.startsWith("src/db/"));
    const names = new Set(
      [...sqlProblems(SOURCES).interpolated].map((expression) => /^[A-Za-z_$][\w$]*/.exec(expression)?.[0] ?? expression),
    );
    expect(names.size).toBeGreaterThan(3);
    for (const name of names) {
      const declaration = CONSTANT_DECLARATIONS[name];
      expect(declaration, `no declaration pattern for ${name}`).toBeDefined();
      const declaredIn = db.filter(([, source]) => declaration.test(source)).map(([path]) => path);
      expect(declaredIn, name).toHaveLength(1);
      const source = SOURCES[declaredIn[0]];
      expect(source.match(new RegExp(`\\b(const|let|var|function|class)\\s+${name}\\b`, "g")), name).toHaveLength(1);
      // No assignment (`name =`, `name[...] =`, `name +=`) other than the declaration, no mutation of an array.
      const assignments = [...source.matchAll(new RegExp(`(?<![.\\w])${name}\\s*(\\[[^\\]]*\\])?\\s*[+]?=(?![=>])`, "g"))];
      expect(
        assignments.filter((match) => !/const\s+$/.test(source.slice(0, match.index))),
        name,
      ).toEqual([]);
      expect(source, name).not.toMatch(new RegExp(`\\b${name}\\.(push|splice|unshift|pop|shift|fill|copyWithin)\\(`));
    }
    // LINEAGE_SQL's values are templates in src/db, checked above like any SQL there; its keys are the fixed kinds.
  });
});
