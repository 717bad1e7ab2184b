import { newId } from "../db/buckets";
import { CALLER_CTE } from "../db/caller";
import { isUniqueViolation } from "../db/d1";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import { parseJsonExactly } from "../db/exact-json";
import type { CallerDb, CallerWriteDb } from "../db/handles";
import { batchClaimed, type IdempotencyClaim } from "../db/idempotency";
import { type Role, WRITER_ROLES, WRITER_ROLES_SQL } from "../db/roles";
import { type Results, type Statement, type Statements, sql } from "../db/sql";
import { APP_BY_REF_CTE, appRefOrder, refusal } from "../db/visibility";
import { APP_PLACE, REVISION_DATA, revisionEvent } from "./change-events.sql.ts";
import { chooseArm, type SplitChoice } from "./split-bucket";

/** A reference to an app, a variant (revision) or an environment (revision): every part optional. */
export interface Ref {
  slug: string | null;
  version: number | null;
  id: string | null;
}

/** What a config request names; an absent ref is null. */
export interface ConfigRefs {
  application: Ref | null;
  variant: Ref | null;
  environment: Ref | null;
  /** A variant by its own id (its latest revision, unless the variant ref says otherwise). */
  variantId?: string | null;
}

/** The config of one variant revision, and the environment revision it was reached through, if any. */
export interface Config {
  appId: string;
  appName: string;
  projectId: string;
  variantId: string;
  variantCreatedAt: string;
  /** The variant's config name; for a removed variant, the name it had. */
  configName: string;
  revisionId: string;
  revision: number;
  /** The revision's slug (12 hex digits unless its commit named one) and its commit message. */
  revisionSlug: string;
  message: string | null;
  params: Record<string, unknown>;
  url: string;
  revisionCreatedAt: string;
  revisionModifiedById: string;
  revisionModifiedByEmail: string;
  environment: {
    id: string;
    name: string;
    revisionId: string;
    revision: number;
    createdAt: string;
    modifiedById: string;
    modifiedByEmail: string;
  } | null;
  /** The arm a read of a split environment chose (docs/SPLITS.md §2); absent elsewhere. */
  split?: SplitChoice;
}

/**
 * The CTEs `app` (APP_BY_REF_CTE), `environment_revision` (in environment mode: the revision
 * :environment_revision_id, else revision :environment_version or the current one of environment :environment_name,
 * production by default) and `variant_revision` (in variant mode: the revision :variant_revision_id, else revision
 * :variant_version or the latest of variant :variant_id or of config :config_name, or with neither of the app's oldest
 * variant (the current API's app ref alone); in environment mode: what the
 * environment revision deployed). They bind `refValues`. Each must belong to the app, and every part of a ref given must agree. A removed variant is no longer
 * found by its name or its id, but its revisions still are, by their ids and through environment histories. An
 * archived variant is not found by its name; by its id and its revisions' ids it still is.
 */
export const CONFIG_CTES = `${APP_BY_REF_CTE},
environment_revision AS (
  SELECT er.id, er.revision, er.deployed_app_variant_revision_id AS variant_revision_id, er.created_at, er.modified_by,
         e.name, e.id AS environment_id
    FROM environment_revisions er JOIN environments e ON e.id = er.environment_id
   WHERE :ref_mode = 'environment'
     AND er.id = COALESCE(:environment_revision_id, (SELECT er2.id FROM environments e2 JOIN environment_revisions er2 ON er2.environment_id = e2.id
                               WHERE e2.app_id = (SELECT id FROM app) AND e2.name = COALESCE(:environment_name, 'production')
                                 AND er2.revision = COALESCE(:environment_version, e2.revision)))
     AND e.app_id = (SELECT id FROM app) AND (:environment_name IS NULL OR e.name = :environment_name) AND (:environment_version IS NULL OR er.revision = :environment_version)),
variant_revision AS (
  SELECT r.id, r.revision, r.slug, r.message, r.params, r.url, r.created_at, r.modified_by, v.id AS variant_id,
         COALESCE(v.removed_name, v.name) AS config_name, v.created_at AS variant_created_at, v.removed_at, v.archived_at
    FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id
   WHERE r.id = CASE :ref_mode
                  WHEN 'variant' THEN COALESCE(:variant_revision_id, (
                    SELECT r2.id FROM app_variants v2 JOIN app_variant_revisions r2 ON r2.variant_id = v2.id
                     WHERE v2.app_id = (SELECT id FROM app)
                       AND v2.id = COALESCE(:variant_id, CASE WHEN :config_name IS NULL
                         THEN (SELECT id FROM app_variants WHERE app_id = (SELECT id FROM app) AND removed_at IS NULL AND archived_at IS NULL
                                ORDER BY created_at, id LIMIT 1)
                         ELSE (SELECT id FROM app_variants WHERE app_id = (SELECT id FROM app) AND name = :config_name
                                 AND archived_at IS NULL) END)
                       AND r2.revision = COALESCE(:variant_version, (SELECT MAX(revision) FROM app_variant_revisions WHERE variant_id = v2.id))))
                  ELSE (SELECT variant_revision_id FROM environment_revision) END
     AND v.app_id = (SELECT id FROM app)
     AND (:ref_mode <> 'variant' OR ((:config_name IS NULL OR v.name = :config_name) AND (:variant_version IS NULL OR r.revision = :variant_version)
                               AND (:variant_id IS NULL OR (v.id = :variant_id AND v.removed_at IS NULL)))))`;

/** The columns of a ConfigRow, from the CTEs above (`app`, `vr` and its author `vu`, `er` and its author `eu`). */
export const CONFIG_COLUMNS = `app.id AS appId, app.name AS appName, app.project_id AS projectId, vr.variant_id AS variantId,
       vr.variant_created_at AS variantCreatedAt, vr.config_name AS configName,
       vr.id AS revisionId, vr.revision, vr.slug AS revisionSlug, vr.message, vr.params, vr.url, vr.created_at AS revisionCreatedAt,
       vr.modified_by AS revisionModifiedById, vu.email AS revisionModifiedByEmail,
       er.environment_id AS environmentId, er.name AS environmentName, er.id AS environmentRevisionId, er.revision AS environmentRevision,
       er.created_at AS environmentCreatedAt, er.modified_by AS environmentModifiedById, eu.email AS environmentModifiedByEmail`;

/**
 * A read of an environment's current revision while a split runs there (docs/SPLITS.md §2) reads both arms in the same
 * statement: `split`, its weight and salt, and `candidate`, the candidate revision, as `variant_revision` has it.
 */
const SPLIT_CTES = `split AS (
  SELECT s.weight, s.salt, s.candidate_revision_id FROM environment_splits s JOIN environment_revision er ON er.environment_id = s.environment_id
   WHERE :environment_revision_id IS NULL AND :environment_version IS NULL),
candidate AS (
  SELECT r.id, r.revision, r.slug, r.message, r.params, r.url, r.created_at, r.modified_by, v.id AS variant_id,
         COALESCE(v.removed_name, v.name) AS config_name, v.created_at AS variant_created_at, v.removed_at, v.archived_at
    FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id WHERE r.id = (SELECT candidate_revision_id FROM split))`;

/** The Config rows of the CTEs above (none: nothing found): the revision's, and with a split the candidate's (`arm`). */
const SELECT_CONFIG = `SELECT ${CONFIG_COLUMNS}, split.weight AS splitWeight, split.salt AS splitSalt, vr.arm
  FROM app
  JOIN (SELECT *, 'base' AS arm FROM variant_revision UNION ALL SELECT *, 'candidate' FROM candidate) vr
  JOIN users vu ON vu.id = vr.modified_by
  LEFT JOIN environment_revision er
  LEFT JOIN users eu ON eu.id = er.modified_by
  LEFT JOIN split`;

const CONFIG = sql<ConfigRow>(`WITH ${CALLER_CTE}, ${CONFIG_CTES}, ${SPLIT_CTES} ${SELECT_CONFIG}`);

/** The caller's role in the app the refs name (no row: no such app visible to the caller). */
const ROLE = sql<{ role: Role }>(`WITH ${CALLER_CTE}, ${APP_BY_REF_CTE} SELECT role FROM app`);

/** What APP_BY_REF_CTE, CONFIG_CTES and COMMIT_CTES bind for the refs. */
export function refValues(refs: ConfigRefs) {
  const { application, variant, environment } = refs;
  return {
    app_id: application?.id ?? null,
    app_name: application?.slug ?? null,
    variant_revision_id: variant?.id ?? null,
    environment_revision_id: environment?.id ?? null,
    config_name: variant?.slug ?? null,
    variant_version: variant?.version ?? null,
    environment_name: environment?.slug ?? null,
    environment_version: environment?.version ?? null,
    // A variant ref wins; else an environment ref, or the app's production environment.
    ref_mode: variant || refs.variantId ? "variant" : "environment",
    variant_id: refs.variantId ?? null,
  };
}

/** What the app of the refs is resolved by, in APP_BY_REF_CTE's order (refs not given: null): the request's bucket. */
export const configRefOrder = (refs: Partial<ConfigRefs>) =>
  appRefOrder(refValues({ application: null, variant: null, environment: null, ...refs }));

/** The refs that name the config an environment revision deployed, reached through that revision. */
export const environmentRevisionRefs = (environmentRevisionId: string): ConfigRefs => ({
  application: null,
  variant: null,
  environment: { slug: null, version: null, id: environmentRevisionId },
});

/** The refs that name exactly one variant revision. */
const revisionRefs = (revisionId: string): ConfigRefs => ({
  application: null,
  variant: { slug: null, version: null, id: revisionId },
  environment: null,
});

export interface ConfigRow extends Omit<Config, "params" | "environment" | "split"> {
  params: string;
  /** A split's, on a read of the environment's current revision while one runs there; else null. */
  splitWeight?: number | null;
  splitSalt?: string | null;
  arm?: "base" | "candidate";
  environmentId: string;
  environmentName: string | null;
  environmentRevisionId: string;
  environmentRevision: number;
  environmentCreatedAt: string;
  environmentModifiedById: string;
  environmentModifiedByEmail: string;
}

export function toConfig(row: ConfigRow | undefined): Config | null {
  if (!row) return null;
  const {
    splitWeight,
    splitSalt,
    arm,
    params,
    environmentId,
    environmentName,
    environmentRevisionId,
    environmentRevision,
    environmentCreatedAt,
    environmentModifiedById,
    environmentModifiedByEmail,
    ...config
  } = row;
  return {
    ...config,
    params: parseJsonExactly(params) as Record<string, unknown>,
    environment:
      environmentName === null
        ? null
        : {
            id: environmentId,
            name: environmentName,
            revisionId: environmentRevisionId,
            revision: environmentRevision,
            createdAt: environmentCreatedAt,
            modifiedById: environmentModifiedById,
            modifiedByEmail: environmentModifiedByEmail,
          },
  };
}

/** The statement of the config the refs name (CONFIG_CTES), as the caller may see it: with a split, a row per arm. */
export const configStatement = (db: CallerDb, refs: ConfigRefs) => db.statement(CONFIG, refValues(refs));

/**
 * The config of `configStatement`'s rows, for a read with this targeting key: while a split runs, the arm the key's
 * bucket chooses (none: the base), which `split` says.
 */
export function toChosenConfig(rows: ConfigRow[], targetingKey: string | null = null): Config | null {
  const base = rows.find((row) => row.arm !== "candidate");
  if (base?.splitWeight == null || base.splitSalt == null) return toConfig(base);
  const split = chooseArm({ weight: base.splitWeight, salt: base.splitSalt }, targetingKey);
  const chosen = split.arm === "candidate" ? rows.find((row) => row.arm === "candidate") : base;
  const config = toConfig(chosen);
  return config && { ...config, split };
}

/** The config the refs name, as the caller may see it (a split's arm for the targeting key): one round trip; null when there is none. */
export async function fetchConfig(db: CallerDb, refs: ConfigRefs, targetingKey: string | null = null): Promise<Config | null> {
  const { config } = await db.batch({ config: configStatement(db, refs) });
  return toChosenConfig(config.results, targetingKey);
}

/** What a config write did: the config it made (or, replaying a retry, had made), or why it made none. */
export type ConfigWrite =
  | { outcome: "done"; config: Config; replayed: boolean }
  | { outcome: "not_found" | "forbidden" | "exists" }
  | { outcome: "key_reused" }
  | { outcome: "stale"; latest: number };

/** The outcome of a write batch from the caller's role (no row: nothing visible) and the config it made. */
function written(role: D1Result<unknown>, made: D1Result<unknown>): ConfigWrite {
  const config = toConfig(made.results[0] as ConfigRow | undefined);
  return config ? { outcome: "done", config, replayed: false } : { outcome: refusal(role) };
}

/** A config write's statements: `role` first, `made` (the config it made) last, and its own between. */
type ConfigWriteStatements = { role: Statement<unknown> } & Statements & { made: Statement<ConfigRow> };

/**
 * Runs a config write's statements with the request's claim: the write's outcome, or for a retry of a request
 * that already made its config, that config read back (`refsOfResult` names it by the id the first request
 * recorded).
 */
async function claimedConfigWrite<S extends ConfigWriteStatements>(
  db: CallerWriteDb,
  claim: IdempotencyClaim | null,
  resultId: string,
  statements: S,
  refsOfResult: (resultId: string) => ConfigRefs,
  outcome: (results: Results<S>) => ConfigWrite = ({ role, made }) => written(role, made),
): Promise<ConfigWrite> {
  const batch = await batchClaimed(db, claim, resultId, statements);
  if ("reused" in batch) return { outcome: "key_reused" };
  if ("ran" in batch) return outcome(batch.ran);
  const config = await fetchConfig(db, refsOfResult(batch.replayOf));
  return config ? { outcome: "done", config, replayed: true } : { outcome: "not_found" };
}

const ADD_VARIANT = sql(
  `WITH ${CALLER_CTE}, ${APP_BY_REF_CTE}
   INSERT INTO app_variants (id, app_id, name) SELECT :new_variant_id, id, :new_config_name FROM app WHERE role IN ${WRITER_ROLES_SQL}`,
);

const ADD_FIRST_REVISION = sql(
  `WITH ${CALLER_CTE}
   INSERT INTO app_variant_revisions (id, variant_id, revision, modified_by, params)
   SELECT :revision_id, id, 1, (SELECT user_id FROM caller), :params FROM app_variants WHERE id = :new_variant_id`,
);

/**
 * Adds config `configName` to the app the ref names, with revision 1 holding `params` ({} unless given) and url "":
 * one batch. "exists" when the app already has a config of that name (its UNIQUE constraint, which only a writer
 * reaches).
 */
export async function addConfig(
  db: CallerWriteDb,
  application: Ref,
  configName: string,
  claim: IdempotencyClaim | null = null,
  params: Record<string, unknown> = {},
): Promise<ConfigWrite> {
  const [variantId, revisionId] = [newId(db.bucket), newId(db.bucket)];
  const app = refValues({ application, variant: null, environment: null });
  const made = { new_variant_id: variantId, new_config_name: configName, revision_id: revisionId };
  try {
    return await claimedConfigWrite(
      db,
      claim,
      revisionId,
      {
        role: db.statement(ROLE, app),
        variant: db.statement(ADD_VARIANT, { ...app, ...made }),
        revision: db.statement(ADD_FIRST_REVISION, { ...made, params: JSON.stringify(params) }),
        event: revisionEvent(db, revisionId, variantId),
        made: configStatement(db, revisionRefs(revisionId)),
      },
      revisionRefs,
    );
  } catch (error) {
    if (isUniqueViolation(error, "app_variants")) return { outcome: "exists" };
    throw error;
  }
}

/**
 * The CTEs of a commit (binding `refValues`): `app` (APP_BY_REF_CTE), `variant` (the variant of revision
 * :variant_revision_id, none when no revision has that id, else variant :variant_id, else config :config_name of the
 * app; all given must agree, and so must the revision and :variant_version; never a removed one, nor an archived one by
 * its name), `latest` (its latest revision) and `expected` (the revision the committer saw: :variant_version, else the
 * revision's; null: none said).
 */
export const COMMIT_CTES = `${APP_BY_REF_CTE},
variant AS (
  SELECT v.id FROM app_variants v
   WHERE v.id = CASE WHEN :variant_revision_id IS NOT NULL
                     THEN (SELECT variant_id FROM app_variant_revisions WHERE id = :variant_revision_id)
                     ELSE COALESCE(:variant_id, (SELECT id FROM app_variants
                                                  WHERE app_id = (SELECT id FROM app) AND name = :config_name AND archived_at IS NULL)) END
     AND v.app_id = (SELECT id FROM app) AND v.removed_at IS NULL AND (:config_name IS NULL OR v.name = :config_name)
     AND (:variant_id IS NULL OR v.id = :variant_id)
     AND (:variant_revision_id IS NULL OR :variant_version IS NULL OR :variant_version = (SELECT revision FROM app_variant_revisions WHERE id = :variant_revision_id))),
latest AS (
  SELECT revision, url, params FROM app_variant_revisions WHERE variant_id = (SELECT id FROM variant)
   ORDER BY revision DESC LIMIT 1),
expected AS (SELECT COALESCE(:variant_version, (SELECT revision FROM app_variant_revisions WHERE id = :variant_revision_id)) AS revision)`;

const mayWrite = (row: { role: Role | null }) => row.role !== null && WRITER_ROLES.includes(row.role);

const COMMIT_FACTS = sql<{ role: Role | null; variantId: string | null; latest: number; expected: number | null }>(
  `WITH ${CALLER_CTE}, ${COMMIT_CTES}
   SELECT app.role, variant.id AS variantId, latest.revision AS latest, expected.revision AS expected
     FROM app LEFT JOIN variant LEFT JOIN latest LEFT JOIN expected`,
);

const COMMIT = sql(
  `WITH ${CALLER_CTE}, ${COMMIT_CTES}
   INSERT INTO app_variant_revisions (id, variant_id, revision, modified_by, params, url, slug, message)
   SELECT :revision_id, variant.id, COALESCE(latest.revision, 0) + 1, (SELECT user_id FROM caller), :params,
          COALESCE(:url, latest.url, ''), :slug, :message
     FROM variant LEFT JOIN latest, expected
    WHERE (SELECT role FROM app) IN ${WRITER_ROLES_SQL} AND COALESCE(expected.revision, latest.revision) IS latest.revision`,
);

/**
 * Commits a new revision of the config the refs name: `params` replace the latest's (they are not merged), and
 * `url` too when given (else the latest's is kept). When the refs name a version (or a revision id), it must be
 * the latest, else "stale": nobody commits on top of a config they did not see. One batch; the revision number
 * is the latest + 1 (1 for a variant that has none yet), decided inside the transaction and guarded by UNIQUE
 * (variant_id, revision). The commit message and the revision's slug are stored as given (no slug: the database
 * makes one, migrations/0010; a slug taken in the project breaks UNIQUE (project_id, slug)).
 */
export async function commitConfig(
  db: CallerWriteDb,
  refs: Omit<ConfigRefs, "environment">,
  change: { params: Record<string, unknown>; url: string | null; message?: string | null; slug?: string | null },
  claim: IdempotencyClaim | null = null,
): Promise<ConfigWrite> {
  const revisionId = newId(db.bucket);
  const values = refValues({ ...refs, environment: null });
  return claimedConfigWrite(
    db,
    claim,
    revisionId,
    {
      role: db.statement(COMMIT_FACTS, values),
      revision: db.statement(COMMIT, {
        ...values,
        revision_id: revisionId,
        params: JSON.stringify(change.params),
        url: change.url,
        slug: change.slug ?? null,
        message: change.message ?? null,
      }),
      event: revisionEvent(db, revisionId, null),
      made: configStatement(db, revisionRefs(revisionId)),
    },
    revisionRefs,
    ({ role, made }) => {
      const found = role.results[0];
      if (found?.variantId && mayWrite(found) && found.expected !== null && found.expected !== found.latest) {
        return { outcome: "stale", latest: found.latest };
      }
      return written(role, made);
    },
  );
}

const FORK_SOURCE_ROLE = sql(`WITH ${CALLER_CTE}, ${CONFIG_CTES} SELECT app.role FROM app JOIN variant_revision`);

const FORK_VARIANT = sql(
  `WITH ${CALLER_CTE}, ${CONFIG_CTES}
   INSERT INTO app_variants (id, app_id, name)
   SELECT :new_variant_id, app.id, substr(vr.config_name, 1, 246) || '_' || lower(hex(randomblob(4))) FROM app JOIN variant_revision vr
    WHERE app.role IN ${WRITER_ROLES_SQL}`,
);

const FORK_REVISION = sql(
  `WITH ${CALLER_CTE}, ${CONFIG_CTES}
   INSERT INTO app_variant_revisions (id, variant_id, revision, modified_by, params, url)
   SELECT :revision_id, :new_variant_id, 1, (SELECT user_id FROM caller), params, url FROM variant_revision
    WHERE EXISTS (SELECT 1 FROM app_variants WHERE id = :new_variant_id)`,
);

const FORK_EVENT = sql(
  `WITH ${CALLER_CTE}, ${CONFIG_CTES} ${INSERT_EVENT}
   SELECT :event_id, 'config.forked', w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR},
          json_object(${REVISION_DATA}, 'source_config_name', source.config_name, 'source_revision', source.revision)
     FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id JOIN apps a ON a.id = v.app_id ${APP_PLACE}
     JOIN variant_revision source
    WHERE r.id = :revision_id ${EVENT_HANDOFF}`,
);

/**
 * Forks the config the refs name (as `fetchConfig` finds it) into a new config of the same app,
 * `<config name>_<8 hex>`, whose revision 1 holds the source's params and url: one batch.
 */
export async function forkConfig(
  db: CallerWriteDb,
  refs: ConfigRefs,
  claim: IdempotencyClaim | null = null,
): Promise<ConfigWrite> {
  const [variantId, revisionId] = [newId(db.bucket), newId(db.bucket)];
  const values = { ...refValues(refs), new_variant_id: variantId, revision_id: revisionId };
  return claimedConfigWrite(
    db,
    claim,
    revisionId,
    {
      role: db.statement(FORK_SOURCE_ROLE, values),
      variant: db.statement(FORK_VARIANT, values),
      revision: db.statement(FORK_REVISION, values),
      event: db.statement(FORK_EVENT, { ...values, event_id: newId(db.bucket) }),
      made: configStatement(db, revisionRefs(revisionId)),
    },
    revisionRefs,
  );
}
