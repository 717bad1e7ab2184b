import { type ConfigDocument, storedConfigDocument } from "../core/diff";
import { CALLER_CTE } from "../db/caller";
import type { CallerDb } from "../db/handles";
import { type Sql, sql } from "../db/sql";

/** The two revisions a diff names, by side. */
const SIDES = `side (name, id) AS (VALUES ('from', :from_id), ('to', :to_id))`;

/** The app `a`'s organization, joined only where the caller is a member of it (`membership`, CALLER_CTE). */
const APP_ORGANIZATION = `JOIN projects p ON p.id = a.project_id
  JOIN workspaces w ON w.id = p.workspace_id
  JOIN membership m ON m.organization_id = w.organization_id`;

/** A side's config revision `r`, by LEFT JOIN or JOIN. */
const REVISION_COLUMNS = `r.id AS revisionId, r.revision, COALESCE(v.removed_name, v.name) AS configName, r.params, r.url,
  w.organization_id AS organizationId`;

/** A side's row: which side, its config revision (a LEFT JOIN's nulls: nothing deployed), its organization. */
interface SideRow {
  side: "from" | "to";
  revisionId: string | null;
  revision: number | null;
  configName: string | null;
  params: string | null;
  url: string | null;
  organizationId: string;
}

interface ConfigRevisionRow extends SideRow {
  revisionId: string;
  revision: number;
  configName: string;
  params: string;
  url: string;
}

interface EnvironmentRevisionRow extends SideRow {
  environmentRevisionId: string;
  environment: string;
  environmentRevision: number;
}

/** The config revisions :from_id and :to_id the caller can see (a row each). */
const CONFIG_SIDES = sql<ConfigRevisionRow>(
  `WITH ${CALLER_CTE}, ${SIDES}
   SELECT side.name AS side, ${REVISION_COLUMNS}
     FROM side JOIN app_variant_revisions r ON r.id = side.id
     JOIN app_variants v ON v.id = r.variant_id
     JOIN apps a ON a.id = v.app_id ${APP_ORGANIZATION}`,
);

/** The environment revisions :from_id and :to_id the caller can see (a row each), with what each deployed. */
const ENVIRONMENT_SIDES = sql<EnvironmentRevisionRow>(
  `WITH ${CALLER_CTE}, ${SIDES}
   SELECT side.name AS side, er.id AS environmentRevisionId, e.name AS environment, er.revision AS environmentRevision,
          ${REVISION_COLUMNS}
     FROM side JOIN environment_revisions er ON er.id = side.id
     JOIN environments e ON e.id = er.environment_id
     JOIN apps a ON a.id = e.app_id ${APP_ORGANIZATION}
     LEFT JOIN app_variant_revisions r ON r.id = er.deployed_app_variant_revision_id
     LEFT JOIN app_variants v ON v.id = r.variant_id`,
);

/** A side: its row, and its document (null: nothing deployed). */
export interface DiffSide<Row> {
  row: Row;
  document: ConfigDocument | null;
}

/** Both sides, when the caller sees both and they are of one organization; else null (not told apart). */
async function readSides<Row extends SideRow>(
  db: CallerDb,
  query: Sql<Row>,
  fromId: string,
  toId: string,
): Promise<{ from: DiffSide<Row>; to: DiffSide<Row> } | null> {
  const { sides } = await db.batch({ sides: db.statement(query, { from_id: fromId, to_id: toId }) });
  const from = sides.results.find((row) => row.side === "from");
  const to = sides.results.find((row) => row.side === "to");
  if (!from || !to || from.organizationId !== to.organizationId) return null;
  return { from: side(from), to: side(to) };
}

const side = <Row extends SideRow>(row: Row): DiffSide<Row> => ({ row, document: storedConfigDocument(row) });

/** The config revisions of a diff, one round trip. */
export const readConfigSides = (db: CallerDb, fromId: string, toId: string) => readSides(db, CONFIG_SIDES, fromId, toId);

/** The environment revisions of a diff, one round trip. */
export const readEnvironmentSides = (db: CallerDb, fromId: string, toId: string) =>
  readSides(db, ENVIRONMENT_SIDES, fromId, toId);
