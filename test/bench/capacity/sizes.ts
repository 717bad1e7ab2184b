/**
 * What each table of the local D1 takes on disk, from SQLite's `dbstat` virtual table: the pages of the table's
 * b-tree and of each of its indexes, whole (page size times pages: a page's unused space is part of the cost).
 *
 * workerd's SQLite has no `dbstat` and refuses PRAGMAs, and it keeps its writes in the write-ahead log (the .sqlite
 * file itself stays a few pages): so the database and its log are copied while the service is idle, and the copy is
 * read by the `sqlite3` program (Debian's build has `dbstat`: `apt-get install sqlite3`), which replays the log.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { HarnessError, run } from "../../support/processes";

const SQLITE3 = "sqlite3";

export interface TableSize {
  rows: number;
  /** Bytes of the table's own b-tree (a WITHOUT ROWID table's primary key is that b-tree). */
  tableBytes: number;
  /** Bytes of its indexes, UNIQUE constraints' included. */
  indexBytes: number;
}

export interface DatabaseSize {
  pageSize: number;
  pageCount: number;
  freelistCount: number;
  tables: Record<string, TableSize>;
}

async function sqlite<Row>(file: string, sql: string): Promise<Row[]> {
  const result = await run(SQLITE3, ["-json", file, sql]);
  if (result.code !== 0) throw new HarnessError(`sqlite3 ${file} failed (exit ${result.code}):\n${sql}\n${result.stderr}`);
  return result.stdout.trim() === "" ? [] : (JSON.parse(result.stdout) as Row[]);
}

/** Fails early, with what to install, unless `sqlite3` is there and has `dbstat`. */
export async function checkSqlite(): Promise<string> {
  let version: string;
  try {
    const result = await run(SQLITE3, ["-json", ":memory:", "SELECT sqlite_version() AS v, COUNT(*) AS n FROM dbstat"]);
    if (result.code !== 0) throw new HarnessError(result.stderr);
    version = (JSON.parse(result.stdout) as { v: string }[])[0].v;
  } catch (error) {
    throw new HarnessError(
      `the capacity bench reads table sizes with the sqlite3 program's dbstat table (apt-get install sqlite3): ${
        error instanceof Error ? error.message : String(error)
      }`,
    );
  }
  return version;
}

/** The service's database file in a --persist-to folder (miniflare's D1 keeps one .sqlite per database, and metadata). */
function databaseFile(persistTo: string): string {
  const folder = join(persistTo, "v3", "d1", "miniflare-D1DatabaseObject");
  const files = existsSync(folder) ? readdirSync(folder).filter((file) => /^[0-9a-f]{64}\.sqlite$/.test(file)) : [];
  if (files.length !== 1)
    throw new HarnessError(`expected one D1 database in ${folder}, found ${files.length}: ${files.join(", ") || "none"}`);
  return join(folder, files[0]);
}

/**
 * Copies the database in `persistTo` (with its write-ahead log) into `into` and measures the copy. Only while no
 * write is under way: the copy is then what the service would read.
 */
export async function measureDatabase(persistTo: string, into: string): Promise<DatabaseSize> {
  const source = databaseFile(persistTo);
  mkdirSync(into, { recursive: true });
  const copy = join(into, "shard.sqlite");
  copyFileSync(source, copy);
  if (existsSync(`${source}-wal`)) copyFileSync(`${source}-wal`, `${copy}-wal`);

  const [pages] = await sqlite<{ page_size: number; page_count: number; freelist_count: number }>(
    copy,
    "SELECT * FROM pragma_page_size, pragma_page_count, pragma_freelist_count",
  );
  const btrees = await sqlite<{ tbl: string; type: string; bytes: number }>(
    copy,
    `SELECT m.tbl_name AS tbl, m.type AS type, SUM(s.pgsize) AS bytes
       FROM dbstat s JOIN sqlite_schema m ON m.name = s.name
      WHERE m.tbl_name NOT LIKE 'sqlite_%' AND m.tbl_name NOT LIKE '_cf_%' AND m.tbl_name <> 'd1_migrations'
      GROUP BY m.tbl_name, m.type`,
  );
  const names = [...new Set(btrees.map((btree) => btree.tbl))].sort();
  const counts = await sqlite<{ tbl: string; n: number }>(
    copy,
    names.map((name) => `SELECT '${name}' AS tbl, COUNT(*) AS n FROM "${name}"`).join(" UNION ALL "),
  );
  const tables: Record<string, TableSize> = {};
  for (const name of names) {
    const bytesOf = (type: string) => btrees.find((btree) => btree.tbl === name && btree.type === type)?.bytes ?? 0;
    tables[name] = {
      rows: counts.find((count) => count.tbl === name)?.n ?? 0,
      tableBytes: bytesOf("table"),
      indexBytes: bytesOf("index"),
    };
  }
  return { pageSize: pages.page_size, pageCount: pages.page_count, freelistCount: pages.freelist_count, tables };
}

/** Rows of one query on the latest copy made by `measureDatabase` in `into`. */
export const queryCopy = <Row>(into: string, sql: string) => sqlite<Row>(join(into, "shard.sqlite"), sql);
