import type { Queryable } from "./d1";

/** What D1 binds. `undefined` is not one: a name without a value is a mistake, refused when binding. */
export type SqlValue = string | number | boolean | null | ArrayBuffer | ArrayBufferView;

/** A statement's values, by the names its text uses (`:name`). */
export type Values = Readonly<Record<string, SqlValue | undefined>>;

/** A `:name` outside quotes; quoted text ('…', "…") is skipped whole, so `'%H:%M'` names nothing. */
const TOKEN = /'(?:[^']|'')*'|"(?:[^"]|"")*"|:([a-z_][a-z0-9_]*)|\?/g;

/**
 * SQL text with named parameters (`:app_id`), compiled once, when its module loads, into the `?N` text D1 takes
 * (D1 binds by position only) and the names in their order: a name used twice binds one value, and a fragment
 * embedded in several statements binds the same name in each. `Row` is the type of the rows it answers.
 */
export class Sql<Row = Record<string, unknown>> {
  /** The text with `?N` placeholders, as D1 prepares it. */
  readonly text: string;
  /** The name each `?N` binds, N - 1 its index. */
  readonly names: readonly string[];
  declare readonly row?: Row;

  constructor(named: string) {
    const names: string[] = [];
    this.text = named.replace(TOKEN, (token: string, name: string | undefined) => {
      if (token === "?") throw new Error(`SQL with a positional parameter; name it instead: ${named}`);
      if (name === undefined) return token;
      const index = names.indexOf(name);
      return `?${index === -1 ? names.push(name) : index + 1}`;
    });
    this.names = names;
  }

  /** The statement with its values: each name from `values`, else from `fallback` (a caller's, say). */
  bind(db: Queryable, values: Values, fallback: Values = NONE): Statement<Row> {
    const prepared = db.prepare(this.text);
    if (this.names.length === 0) return prepared;
    return prepared.bind(
      ...this.names.map((name) => {
        const value = values[name] !== undefined ? values[name] : fallback[name];
        if (value === undefined) throw new Error(`no value bound for :${name}`);
        return value;
      }),
    );
  }
}

const NONE: Values = {};

/** SQL text with `:name` parameters (see `Sql`); its argument must be constant text (test/static/sql.test.ts). */
export const sql = <Row = Record<string, unknown>>(text: string) => new Sql<Row>(text);

/** A bound statement, remembering the type of its rows. */
export type Statement<Row = Record<string, unknown>> = D1PreparedStatement & { readonly row?: Row };

/** Statements of one batch by name, in the order they run. */
export type Statements = Record<string, Statement<unknown>>;

/** A batch's results, by the names of its statements. */
export type Results<S extends Statements> = { [K in keyof S]: D1Result<S[K] extends Statement<infer Row> ? Row : never> };

/** Names the results of a batch by its statements' names. */
export function named<S extends Statements>(statements: S, results: D1Result[], from = 0): Results<S> {
  const byName: Record<string, D1Result> = {};
  let index = from;
  for (const name in statements) byName[name] = results[index++];
  return byName as Results<S>;
}

/** Runs the statements in one batch (one round trip, one transaction): their results by name. */
export async function batch<S extends Statements>(db: Queryable, statements: S): Promise<Results<S>> {
  return named(statements, await db.batch(Object.values(statements)));
}
