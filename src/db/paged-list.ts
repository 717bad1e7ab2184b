/**
 * A list read in pages by keyset (its rows in one order by a column that only grows), so that a long history is never
 * held whole: `first`, read in the request's own batch beside its other statements, with the list's last row fixed
 * there (the bound); then each following page in a query of its own, after the last row read and up to that bound, so
 * that a row written meanwhile is not in the list: the pages make the one list the first batch saw.
 */
export interface PagedList<Row> {
  /** The first page, read in the request's own batch. */
  first: Row[];
  /** Whether `row` is the list's last (the bound fixed with the first page). */
  endsWith(row: Row): boolean;
  /** The page after `row`: one query (the key checked in it, as every batch of a caller). */
  after(row: Row): Promise<Row[]>;
}
