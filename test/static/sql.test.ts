import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/*
 * How SQL text is built in src/, checked on the syntax tree (TypeScript's compiler API): every `sql(text)` (the
 * named-parameter statements of src/db/sql.ts), every `.prepare(text)` and D1's `.exec(text)` takes constant text,
 * so that request values can reach SQL only as bound parameters. The exceptions: src/db/sql.ts's own
 * `.prepare(this.text)`, the text `sql()` compiled from constant text (nothing else makes an `Sql`: `new Sql`), and
 * src/cli/migrations.ts's `.prepare(statement)`, a statement of the repository's migration files, applied locally.
 * Constant text is a string literal, a template whose every interpolation is constant text, or a name (`X`, `X.y`,
 * `X["y"]`) resolving to a `const` whose value is constant text. Objects read through a property must be declared
 * `as const`, so that the compiler refuses any write to them.
 */

const ROOT = path.resolve(import.meta.dirname, "../..");

/** The module whose `Sql` compiles named parameters; its `.prepare(this.text)` prepares only what `sql()` compiled. */
const SQL_MODULE = "src/db/sql.ts";
/** The module applying migrations locally; its `.prepare(statement)` prepares a statement of a migration file. */
const MIGRATIONS_MODULE = "src/cli/migrations.ts";

/** Every src/**\/*.ts but declaration files: absolute path to text. */
function sourcesOfSrc(): Record<string, string> {
  const src = path.join(ROOT, "src");
  return Object.fromEntries(
    readdirSync(src, { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))
      .map((file) => [path.join(src, file), readFileSync(path.join(src, file), "utf8")]),
  );
}

/** A program of exactly these files (no lib, nothing from node_modules): enough to resolve names across imports. */
function programOf(files: Record<string, string>): ts.Program {
  const options: ts.CompilerOptions = {
    noLib: true,
    types: [],
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    noEmit: true,
  };
  const host = ts.createCompilerHost(options);
  host.getSourceFile = (name, language) => (name in files ? ts.createSourceFile(name, files[name], language, true) : undefined);
  host.fileExists = (name) => name in files;
  host.readFile = (name) => files[name];
  host.directoryExists = (directory) => Object.keys(files).some((name) => name.startsWith(`${directory}/`));
  host.getCurrentDirectory = () => ROOT;
  return ts.createProgram(Object.keys(files), options, host);
}

const unwrap = (node: ts.Expression): ts.Expression =>
  ts.isParenthesizedExpression(node) || ts.isAsExpression(node) || ts.isSatisfiesExpression(node) || ts.isNonNullExpression(node)
    ? unwrap(node.expression)
    : node;

const isAsConst = (node: ts.Expression): boolean =>
  ts.isParenthesizedExpression(node)
    ? isAsConst(node.expression)
    : ts.isAsExpression(node) && ts.isTypeReferenceNode(node.type) && node.type.typeName.getText() === "const";

/** What each SQL call of the files gets wrong (file:line: reason), and how many calls there were. */
function sqlProblems(files: Record<string, string>): { problems: string[]; calls: number } {
  const program = programOf(files);
  const checker = program.getTypeChecker();
  const problems: string[] = [];
  let calls = 0;

  const symbolOf = (node: ts.Node) => {
    const symbol = checker.getSymbolAtLocation(node);
    return symbol && symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  };

  /** The value a name stands for; `frozen` when it cannot be written to (a const, or inside an `as const`). */
  type Resolved = { value: ts.Expression; frozen: boolean } | { reason: string };
  const resolve = (reference: ts.Expression): Resolved => {
    const node = unwrap(reference);
    const text = node.getText();
    const ofDeclaration = (declaration: ts.Declaration | undefined): Resolved =>
      declaration &&
      ts.isVariableDeclaration(declaration) &&
      declaration.initializer &&
      ts.getCombinedNodeFlags(declaration) & ts.NodeFlags.Const
        ? { value: declaration.initializer, frozen: isAsConst(declaration.initializer) }
        : { reason: `${text} is not a const` };
    if (ts.isIdentifier(node)) return ofDeclaration(symbolOf(node)?.valueDeclaration);
    const key = ts.isPropertyAccessExpression(node)
      ? node.name.text
      : ts.isElementAccessExpression(node) &&
          (ts.isStringLiteralLike(node.argumentExpression) || ts.isNumericLiteral(node.argumentExpression))
        ? node.argumentExpression.text
        : undefined;
    if (key === undefined) return { reason: `${text} is not a name, a property or an element with a literal key` };
    const access = node as ts.PropertyAccessExpression | ts.ElementAccessExpression;
    const base = unwrap(access.expression);
    if (ts.isIdentifier(base) && (symbolOf(base)?.flags ?? 0) & ts.SymbolFlags.ValueModule) {
      // A namespace import (`import * as fragments`): the member is the module's exported declaration.
      return ofDeclaration(
        symbolOf(ts.isPropertyAccessExpression(access) ? access.name : access.argumentExpression)?.valueDeclaration,
      );
    }
    const container = resolve(base);
    if ("reason" in container) return container;
    if (!container.frozen) return { reason: `${text} is read from an object not declared as const` };
    const literal = unwrap(container.value);
    const member = ts.isObjectLiteralExpression(literal)
      ? literal.properties.find(
          (property): property is ts.PropertyAssignment =>
            ts.isPropertyAssignment(property) && !ts.isComputedPropertyName(property.name) && property.name.text === key,
        )?.initializer
      : ts.isArrayLiteralExpression(literal)
        ? literal.elements[Number(key)]
        : undefined;
    return member ? { value: member, frozen: true } : { reason: `${text} is not a literal member` };
  };

  /** Why an expression is not constant text (undefined: it is). */
  const whyNotConstant = (expression: ts.Expression, seen: ReadonlySet<ts.Node>): string | undefined => {
    const node = unwrap(expression);
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return undefined;
    if (ts.isTemplateExpression(node)) {
      for (const span of node.templateSpans) {
        const reason = whyNotConstant(span.expression, seen);
        if (reason) return reason;
      }
      return undefined;
    }
    const resolved = resolve(node);
    if ("reason" in resolved) return resolved.reason;
    if (seen.has(resolved.value)) return `${node.getText()} refers to itself`;
    return whyNotConstant(resolved.value, new Set([...seen, resolved.value]));
  };

  const isRegExp = (receiver: ts.Expression): boolean => {
    const node = unwrap(receiver);
    if (ts.isRegularExpressionLiteral(node)) return true;
    if (ts.isNewExpression(node)) return node.expression.getText() === "RegExp";
    const resolved = ts.isIdentifier(node) ? resolve(node) : undefined;
    return resolved !== undefined && "value" in resolved && isRegExp(resolved.value);
  };

  const visit = (node: ts.Node) => {
    const file = node.getSourceFile();
    const where = () => `${path.relative(ROOT, file.fileName)}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
    const inSqlModule = path.relative(ROOT, file.fileName) === SQL_MODULE;
    if (ts.isNewExpression(node) && node.expression.getText() === "Sql" && !inSqlModule) {
      problems.push(`${where()}: new Sql(): only sql() makes statements`);
    }
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const method = ts.isPropertyAccessExpression(callee) ? callee.name.text : ts.isIdentifier(callee) ? callee.text : "";
      const isSqlCall =
        (ts.isIdentifier(callee) && method === "sql") ||
        (ts.isPropertyAccessExpression(callee) && (method === "prepare" || (method === "exec" && !isRegExp(callee.expression))));
      if (isSqlCall) {
        calls += 1;
        const [argument, ...more] = node.arguments;
        const compiled =
          (inSqlModule && method === "prepare" && argument?.getText() === "this.text") ||
          (path.relative(ROOT, file.fileName) === MIGRATIONS_MODULE &&
            method === "prepare" &&
            argument?.getText() === "statement");
        const reason =
          argument === undefined || more.length > 0 || ts.isSpreadElement(argument)
            ? "not exactly one argument"
            : compiled
              ? undefined
              : whyNotConstant(argument, new Set());
        if (reason) problems.push(`${where()}: ${ts.isIdentifier(callee) ? "" : "."}${method}(): ${reason}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  for (const file of Object.keys(files)) {
    const source = program.getSourceFile(file);
    if (source) visit(source);
  }
  return { problems, calls };
}

/** In-memory sources under src/ (the check's own test cases). */
const snippets = (files: Record<string, string>) =>
  Object.fromEntries(Object.entries(files).map(([file, text]) => [path.join(ROOT, file), text]));

describe("static check: SQL in src/ is built from constants only, values go through .bind()", () => {
  it("holds for every sql(), .prepare() and .exec() of src/", () => {
    const sources = sourcesOfSrc();
    expect(Object.keys(sources).length).toBeGreaterThan(10);
    const { problems, calls } = sqlProblems(sources);
    expect(problems).toEqual([]);
    expect(calls).toBeGreaterThan(100); // the scan did find the data-access code
  });

  it("catches sql() text built from a request value, a second argument, and Sql made or prepared elsewhere", () => {
    const { problems, calls } = sqlProblems(
      snippets({
        "src/db/sql.ts": `export class Sql { constructor(readonly text: string) {}
  bind(db: any) { return db.prepare(this.text); } }
export const sql = (text: string) => new Sql(text);`,
        "src/db/apps.ts": `import { Sql, sql } from "./sql";
const APPS = sql("SELECT id FROM apps WHERE name = :name");
export function bad(db: any, name: string, query: { text: string }) {
  sql(\`SELECT id FROM apps WHERE name = '\${name}'\`);
  sql("SELECT 1", name);
  new Sql(name);
  db.prepare(query.text);
  return APPS.bind(db);
}`,
      }),
    );
    expect(problems).toEqual([
      "src/db/apps.ts:4: sql(): name is not a const",
      "src/db/apps.ts:5: sql(): not exactly one argument",
      "src/db/apps.ts:6: new Sql(): only sql() makes statements",
      "src/db/apps.ts:7: .prepare(): query is not a const",
    ]);
    expect(calls).toBe(5);
  });

  it("accepts literals and constant fragments, imported, nested, local or read from an `as const` object", () => {
    const { problems, calls } = sqlProblems(
      snippets({
        "src/db/fragments.ts": "export const CALLER_CTE = `caller AS (SELECT user_id FROM api_keys WHERE key_hash = ?1)`;",
        "src/db/apps.ts": `
          import { CALLER_CTE } from "./fragments";
          import * as fragments from "./fragments";
          const ROLES = "('owner', 'admin')";
          const MEMBER = \`EXISTS (SELECT 1 FROM organization_members WHERE role IN \${ROLES})\`;
          const TABLES = { apps: "apps", all: ["apps", "users"] } as const;
          const PATTERN = /x/;
          export function read(db: any, name: string) {
            const VARIANT = "(SELECT id FROM app_variants WHERE app_id = ?1)";
            db.prepare("SELECT 1").bind(name);
            db.prepare(\`WITH \${CALLER_CTE} SELECT \${VARIANT} FROM caller WHERE \${MEMBER}\`);
            db.prepare(\`SELECT * FROM \${TABLES.apps}, \${TABLES["all"][1]}, \${(fragments.CALLER_CTE)}\`);
            db.prepare(MEMBER);
            db.exec("PRAGMA foreign_keys = ON");
            PATTERN.exec(name);
            /y/.exec(name);
          }`,
      }),
    );
    expect(problems).toEqual([]);
    expect(calls).toBe(5);
  });

  it("catches SQL built from a parameter, a let, a function call, a mutable object, a non-literal key or itself", () => {
    const { problems } = sqlProblems(
      snippets({
        "src/db/bad.ts": `let table = "apps";
const ROLES = ["owner", "admin"];
const LOOSE = { table: "apps" };
const FROM_LET = \`FROM \${table}\`;
export function bad(db: any, name: string, kind: string, sql: string) {
  db.prepare(\`SELECT * FROM apps WHERE name = '\${name}'\`);
  db.prepare(\`SELECT * FROM \${table}\`);
  db.prepare(\`SELECT 1 \${FROM_LET}\`);
  db.prepare(\`SELECT * FROM apps WHERE role IN (\${ROLES.map((role) => \`'\${role}'\`).join(", ")})\`);
  db.prepare(\`SELECT * FROM \${LOOSE.table}\`);
  db.prepare(\`SELECT * FROM \${{ apps: "apps" }[kind]}\`);
  db.prepare(sql);
  db.prepare("SELECT * FROM apps WHERE name = " + name);
  db.prepare(...[sql]);
  db.exec(\`DELETE FROM \${name}\`);
  db.prepare(LOOP);
}
const LOOP = \`SELECT \${LOOP}\`;`,
      }),
    );
    expect(problems).toEqual([
      "src/db/bad.ts:6: .prepare(): name is not a const",
      "src/db/bad.ts:7: .prepare(): table is not a const",
      "src/db/bad.ts:8: .prepare(): table is not a const",
      `src/db/bad.ts:9: .prepare(): ROLES.map((role) => \`'\${role}'\`).join(", ") is not a name, a property or an element with a literal key`,
      "src/db/bad.ts:10: .prepare(): LOOSE.table is read from an object not declared as const",
      'src/db/bad.ts:11: .prepare(): { apps: "apps" }[kind] is not a name, a property or an element with a literal key',
      "src/db/bad.ts:12: .prepare(): sql is not a const",
      'src/db/bad.ts:13: .prepare(): "SELECT * FROM apps WHERE name = " + name is not a name, a property or an element with a literal key',
      "src/db/bad.ts:14: .prepare(): not exactly one argument",
      "src/db/bad.ts:15: .exec(): name is not a const",
      "src/db/bad.ts:16: .prepare(): LOOP refers to itself",
    ]);
  });
});

describe("static check: the SQL modules are imported as TypeScript", () => {
  it("no import in src/ ends in .sql, which wrangler's default module rules would ship as a text module", () => {
    const imports = Object.entries(sourcesOfSrc()).flatMap(([file, text]) =>
      [...text.matchAll(/\bfrom\s+"([^"]+)"/g)].map((match) => `${path.relative(ROOT, file)}: ${match[1]}`),
    );
    expect(imports.some((line) => line.endsWith(".sql.ts"))).toBe(true);
    expect(imports.filter((line) => line.endsWith(".sql"))).toEqual([]);
  });
});
