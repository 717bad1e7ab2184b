/**
 * What each table of the local D1 takes on disk, from SQLite's `dbstat` virtual table: the pages of the table's
 * b-tree and of each of its indexes, whole (page size times pages: a page's unused space is part of the cost).
 *
 * workerd's SQLite has no `dbstat` and refuses PRAGMAs, and it keeps its writes in the write-ahead log (the .sqlite
 * file itself stays a few pages): so the database and its log are copied while the service is idle, and the copy is
 * read by the `sqlite3` program (Debian's build has `dbstat`: `apt-get install sqlite3`), which replays the log.
 * Every D1 database of the folder is measured and the tables of the same name added up, so that a pool of shards
 * measures as one.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
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

/**
 * The D1 databases in a --persist-to folder: miniflare keeps one .sqlite per database (named by a hash), beside its
 * metadata.
 */
function databaseFiles(persistTo: string): string[] {
  const folder = join(persistTo, "v3", "d1", "miniflare-D1DatabaseObject");
  const files = existsSync(folder) ? readdirSync(folder).filter((file) => /^[0-9a-f]{64}\.sqlite$/.test(file)) : [];
  if (files.length === 0) throw new HarnessError(`no D1 database in ${folder}`);
  return files.sort().map((file) => join(folder, file));
}

/** One database, copied with its write-ahead log into `copy` and measured there. */
async function measureFile(source: string, copy: string): Promise<DatabaseSize> {
  // A log index (-shm) left by an earlier reading of a copy here would hide the frames the log has gained since.
  for (const suffix of ["-wal", "-shm"]) rmSync(`${copy}${suffix}`, { force: true });
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
  const counts =
    names.length === 0
      ? []
      : await sqlite<{ tbl: string; n: number }>(
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

/**
 * Copies every database in `persistTo` (with its write-ahead log) into `into` and measures the copies, adding up
 * tables of the same name (a pool's shards hold the same tables). Only while no write is under way: the copies are
 * then what the service would read.
 */
export async function measureDatabase(persistTo: string, into: string): Promise<DatabaseSize> {
  mkdirSync(into, { recursive: true });
  const sizes = await Promise.all(
    databaseFiles(persistTo).map((source, index) => measureFile(source, join(into, `database-${index}.sqlite`))),
  );
  const tables: Record<string, TableSize> = {};
  for (const size of sizes) {
    for (const [name, table] of Object.entries(size.tables)) {
      const sum = tables[name] ?? { rows: 0, tableBytes: 0, indexBytes: 0 };
      tables[name] = {
        rows: sum.rows + table.rows,
        tableBytes: sum.tableBytes + table.tableBytes,
        indexBytes: sum.indexBytes + table.indexBytes,
      };
    }
  }
  return {
    pageSize: sizes[0].pageSize,
    pageCount: sizes.reduce((pages, size) => pages + size.pageCount, 0),
    freelistCount: sizes.reduce((pages, size) => pages + size.freelistCount, 0),
    tables,
  };
}

/**
 * `SELECT <expression> FROM <table> WHERE <where>` (one number) on every database copied by `measureDatabase` into
 * `into` that has the table, added up.
 */
export async function totalInCopies(into: string, tableName: string, expression: string, where = "1"): Promise<number> {
  const copies = readdirSync(into).filter((file) => /^database-\d+\.sqlite$/.test(file));
  const totals = await Promise.all(
    copies.map(async (copy) => {
      const file = join(into, copy);
      const [{ present }] = await sqlite<{ present: number }>(
        file,
        `SELECT COUNT(*) AS present FROM sqlite_schema WHERE type = 'table' AND name = '${tableName}'`,
      );
      if (present === 0) return 0;
      const [{ n }] = await sqlite<{ n: number | null }>(file, `SELECT ${expression} AS n FROM "${tableName}" WHERE ${where}`);
      return n ?? 0;
    }),
  );
  return totals.reduce((sum, value) => sum + value, 0);
}
