import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/*
 * Every schema a src/ module declares at its top level is marked `/* @__PURE__ *\/`, and so is each `documented(...)`
 * and `schemaName(...)` call inside it (src/http/documentation.ts says why: without the marks, the Worker's bundle
 * keeps the schemas only the OpenAPI document uses). A schema is a `const` whose type is one of zod's (it has zod's
 * `_zod` property), as the compiler sees it with the Worker's tsconfig.json.
 */

const ROOT = path.resolve(import.meta.dirname, "../..");
const PURE = "/* @__PURE__ */";
/** The functions of src/http/documentation.ts a schema calls for the document's text. */
const DOCUMENTATION_CALLS = new Set(["documented", "schemaName"]);

/** The Worker's sources as tsconfig.json compiles them, with these extra files (absolute path to text) as if they were in src/. */
function workerProgram(planted: Record<string, string> = {}): ts.Program {
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(ROOT, "tsconfig.json"),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
      },
    },
  );
  if (!config) throw new Error("tsconfig.json did not parse");
  // Neither the standard library nor the Workers runtime's types: zod's types are enough to tell a schema, and faster.
  const options = { ...config.options, noLib: true, types: [] };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, language, ...rest) =>
    name in planted ? ts.createSourceFile(name, planted[name], language, true) : getSourceFile(name, language, ...rest);
  host.fileExists = (name) => name in planted || fileExists(name);
  host.readFile = (name) => planted[name] ?? readFile(name);
  return ts.createProgram([...config.fileNames, ...Object.keys(planted)], options, host);
}

const unwrap = (node: ts.Expression): ts.Expression =>
  ts.isParenthesizedExpression(node) || ts.isAsExpression(node) || ts.isSatisfiesExpression(node)
    ? unwrap(node.expression)
    : node;

/**
 * Whether an initializer visibly makes a schema: it calls zod (`z.x`) or a documentation function outside any function
 * it defines. Asking the compiler only about the others keeps the test fast: typing zod's chains takes seconds.
 */
function buildsWithZod(initializer: ts.Expression): boolean {
  const found = (node: ts.Node): boolean =>
    !ts.isFunctionLike(node) &&
    ((ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === "z") ||
      (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && DOCUMENTATION_CALLS.has(node.expression.text)) ||
      ts.forEachChild(node, found) === true);
  return found(initializer);
}

/** Whether the comments before a node carry the mark. */
const marked = (file: ts.SourceFile, node: ts.Node) => file.text.slice(node.pos, node.getStart(file)).includes(PURE);

/** The top-level schemas of src/ (file:line name) without the mark, or with a documentation call inside without it. */
function unmarkedSchemas(program: ts.Program): string[] {
  const checker = program.getTypeChecker();
  const problems: string[] = [];
  for (const file of program.getSourceFiles()) {
    if (file.isDeclarationFile || !file.fileName.startsWith(path.join(ROOT, "src"))) continue;
    const where = (node: ts.Node) =>
      `${path.relative(ROOT, file.fileName)}:${file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1}`;
    for (const statement of file.statements) {
      if (!ts.isVariableStatement(statement)) continue;
      for (const declaration of statement.declarationList.declarations) {
        const initializer = declaration.initializer && unwrap(declaration.initializer);
        if (!initializer || !ts.isCallExpression(initializer)) continue;
        if (!buildsWithZod(initializer) && !checker.getTypeAtLocation(declaration.name).getProperty("_zod")) continue;
        const name = declaration.name.getText(file);
        if (!marked(file, initializer)) problems.push(`${where(initializer)} ${name}`);
        const visit = (node: ts.Node): void => {
          if (
            ts.isCallExpression(node) &&
            ts.isIdentifier(node.expression) &&
            DOCUMENTATION_CALLS.has(node.expression.text) &&
            !marked(file, node)
          ) {
            problems.push(`${where(node)} ${name}: ${node.expression.text}(...)`);
          }
          ts.forEachChild(node, visit);
        };
        visit(initializer);
      }
    }
  }
  return problems;
}

describe("top-level schemas (src/http/documentation.ts)", () => {
  // One program for both: building it reads zod's and the Workers runtime's type declarations.
  const planted = path.join(ROOT, "src", "http", "planted.ts");
  const program = workerProgram({
    [planted]: [
      'import * as z from "zod/mini";',
      'import { documented } from "./documentation";',
      "export const Unmarked = z.object({ id: z.string() });",
      `export const InnerUnmarked = ${PURE} z.string().apply(documented(globalThis.DOCUMENTATION && { description: "x" }));`,
      `export const Marked = ${PURE} z.string().apply(${PURE} documented(globalThis.DOCUMENTATION && { description: "x" }));`,
      "export const notASchema = Math.max(1, 2);",
    ].join("\n"),
  });

  it("are each marked pure, and so is each documentation call inside them", () => {
    expect(unmarkedSchemas(program).filter((problem) => !problem.startsWith("src/http/planted.ts"))).toEqual([]);
  });

  it("would see a schema without the mark, and a documentation call without it", () => {
    expect(unmarkedSchemas(program).filter((problem) => problem.startsWith("src/http/planted.ts"))).toEqual([
      "src/http/planted.ts:3 Unmarked",
      "src/http/planted.ts:4 InnerUnmarked: documented(...)",
    ]);
  });
});
