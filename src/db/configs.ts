import { v7 as uuidv7 } from "uuid";
import { APP_BY_REF_CTE, batchAsCaller, CALLER_CTE, type Caller, refusal } from "./caller";
import { isUniqueViolation, type Queryable } from "./d1";
import { APP_PLACE, EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT, REVISION_DATA, revisionEvent } from "./events";
import { parseJsonExactly } from "./exact-json";
import { batchClaimed, type IdempotencyClaim } from "./idempotency";
import { type Role, WRITER_ROLES, WRITER_ROLES_SQL } from "./roles";

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
}

/*
 * Every config statement binds the same parameters (see `refBindings`): ?1 ?2 the caller; ?3 app id, ?4 app
 * name; ?5 variant revision id, ?6 environment revision id; ?7 config name, ?8 variant version; ?9 environment
 * name, ?10 environment version; ?11 'variant' or 'environment', which ref decides; ?12 variant id. Writes add
 * theirs from ?13.
 */

/**
 * The CTEs `app` (APP_BY_REF_CTE), `environment_revision` (in environment mode: the revision ?6, else revision
 * ?10 or the current one of environment ?9, production by default) and `variant_revision` (in variant mode: the
 * revision ?5, else revision ?8 or the latest of variant ?12 or of config ?7; in environment mode: what the environment revision
 * deployed). Each must belong to the app, and every part of a ref given must agree. A removed variant is no longer
 * found by its name or its id, but its revisions still are, by their ids and through environment histories.
 */
export const CONFIG_CTES = `${APP_BY_REF_CTE},
environment_revision AS (
  SELECT er.id, er.revision, er.deployed_app_variant_revision_id AS variant_revision_id, er.created_at, er.modified_by,
         e.name, e.id AS environment_id
    FROM environment_revisions er JOIN environments e ON e.id = er.environment_id
   WHERE ?11 = 'environment'
     AND er.id = COALESCE(?6, (SELECT er2.id FROM environments e2 JOIN environment_revisions er2 ON er2.environment_id = e2.id
                               WHERE e2.app_id = (SELECT id FROM app) AND e2.name = COALESCE(?9, 'production')
                                 AND er2.revision = COALESCE(?10, e2.revision)))
     AND e.app_id = (SELECT id FROM app) AND (?9 IS NULL OR e.name = ?9) AND (?10 IS NULL OR er.revision = ?10)),
variant_revision AS (
  SELECT r.id, r.revision, r.params, r.url, r.created_at, r.modified_by, v.id AS variant_id,
         COALESCE(v.removed_name, v.name) AS config_name, v.created_at AS variant_created_at, v.removed_at
    FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id
   WHERE r.id = CASE ?11
                  WHEN 'variant' THEN COALESCE(?5, (
                    SELECT r2.id FROM app_variants v2 JOIN app_variant_revisions r2 ON r2.variant_id = v2.id
                     WHERE v2.app_id = (SELECT id FROM app)
                       AND v2.id = COALESCE(?12, (SELECT id FROM app_variants WHERE app_id = (SELECT id FROM app) AND name = ?7))
                       AND r2.revision = COALESCE(?8, (SELECT MAX(revision) FROM app_variant_revisions WHERE variant_id = v2.id))))
                  ELSE (SELECT variant_revision_id FROM environment_revision) END
     AND v.app_id = (SELECT id FROM app)
     AND (?11 <> 'variant' OR ((?7 IS NULL OR v.name = ?7) AND (?8 IS NULL OR r.revision = ?8)
                               AND (?12 IS NULL OR (v.id = ?12 AND v.removed_at IS NULL)))))`;

/** The Config row of the CTEs above (no row: nothing found). */
const SELECT_CONFIG = `SELECT app.id AS appId, app.name AS appName, app.project_id AS projectId, vr.variant_id AS variantId,
       vr.variant_created_at AS variantCreatedAt, vr.config_name AS configName,
       vr.id AS revisionId, vr.revision, vr.params, vr.url, vr.created_at AS revisionCreatedAt,
       vr.modified_by AS revisionModifiedById, vu.email AS revisionModifiedByEmail,
       er.environment_id AS environmentId, er.name AS environmentName, er.id AS environmentRevisionId, er.revision AS environmentRevision,
       er.created_at AS environmentCreatedAt, er.modified_by AS environmentModifiedById, eu.email AS environmentModifiedByEmail
  FROM app
  JOIN variant_revision vr
  JOIN users vu ON vu.id = vr.modified_by
  LEFT JOIN environment_revision er
  LEFT JOIN users eu ON eu.id = er.modified_by`;

const CONFIG_SQL = `WITH ${CALLER_CTE}, ${CONFIG_CTES} ${SELECT_CONFIG}`;

/** The caller's role in the app the refs name (no row: no such app visible to the caller). */
const ROLE_SQL = `WITH ${CALLER_CTE}, ${APP_BY_REF_CTE} SELECT role FROM app`;

export function refBindings(caller: Caller, refs: ConfigRefs) {
  const { application, variant, environment } = refs;
  return [
    ...caller.credentials,
    application?.id ?? null,
    application?.slug ?? null,
    variant?.id ?? null,
    environment?.id ?? null,
    variant?.slug ?? null,
    variant?.version ?? null,
    environment?.slug ?? null,
    environment?.version ?? null,
    // A variant ref wins; else an environment ref, or the app's production environment.
    variant || refs.variantId ? "variant" : "environment",
    refs.variantId ?? null,
  ];
}

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

export interface ConfigRow extends Omit<Config, "params" | "environment"> {
  params: string;
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

export const configStatement = (db: Queryable, caller: Caller, refs: ConfigRefs) =>
  db.prepare(CONFIG_SQL).bind(...refBindings(caller, refs));

/** The config the refs name, as the caller may see it: one round trip; null when there is none. */
export async function fetchConfig(db: Queryable, caller: Caller, refs: ConfigRefs): Promise<Config | null> {
  const [config] = await batchAsCaller<ConfigRow>(db, caller, [configStatement(db, caller, refs)]);
  return toConfig(config.results[0]);
}

/** What a config write did: the config it made (or, replaying a retry, had made), or why it made none. */
export type ConfigWrite =
  | { outcome: "done"; config: Config; replayed: boolean }
  | { outcome: "not_found" | "forbidden" | "exists" }
  | { outcome: "key_reused" }
  | { outcome: "stale"; latest: number };

/** The outcome of a write batch from the caller's role (no row: nothing visible) and the config it made. */
function written(role: D1Result, made: D1Result): ConfigWrite {
  const config = toConfig(made.results[0] as ConfigRow | undefined);
  return config ? { outcome: "done", config, replayed: false } : { outcome: refusal(role) };
}

/**
 * Runs a config write's statements (the role first, the config made last) with the request's claim: the write's
 * outcome, or for a retry of a request that already made its config, that config read back (`refsOfResult` names
 * it by the id the first request recorded).
 */
async function claimedConfigWrite(
  db: Queryable,
  caller: Caller,
  claim: IdempotencyClaim | null,
  resultId: string,
  statements: D1PreparedStatement[],
  refsOfResult: (resultId: string) => ConfigRefs,
  outcome: (results: D1Result[]) => ConfigWrite = (results) => written(results[0], results[results.length - 1]),
): Promise<ConfigWrite> {
  const batch = await batchClaimed(db, caller, claim, resultId, statements);
  if ("reused" in batch) return { outcome: "key_reused" };
  if ("ran" in batch) return outcome(batch.ran);
  const config = await fetchConfig(db, caller, refsOfResult(batch.replayOf));
  return config ? { outcome: "done", config, replayed: true } : { outcome: "not_found" };
}

/**
 * Adds config `configName` to the app the ref names, with revision 1 holding `params` ({} unless given) and url "":
 * one batch. "exists" when the app already has a config of that name (its UNIQUE constraint, which only a writer
 * reaches).
 */
export async function addConfig(
  db: Queryable,
  caller: Caller,
  application: Ref,
  configName: string,
  claim: IdempotencyClaim | null = null,
  params: Record<string, unknown> = {},
): Promise<ConfigWrite> {
  const [variantId, revisionId] = [uuidv7(), uuidv7()];
  const app = refBindings(caller, { application, variant: null, environment: null });
  try {
    return await claimedConfigWrite(
      db,
      caller,
      claim,
      revisionId,
      [
        db.prepare(ROLE_SQL).bind(...app),
        db
          .prepare(
            `WITH ${CALLER_CTE}, ${APP_BY_REF_CTE}
             INSERT INTO app_variants (id, app_id, name) SELECT ?13, id, ?14 FROM app WHERE role IN ${WRITER_ROLES_SQL}`,
          )
          .bind(...app, variantId, configName),
        db
          .prepare(
            `WITH ${CALLER_CTE}
             INSERT INTO app_variant_revisions (id, variant_id, revision, modified_by, params)
             SELECT ?4, id, 1, (SELECT user_id FROM caller), ?5 FROM app_variants WHERE id = ?3`,
          )
          .bind(...caller.credentials, variantId, revisionId, JSON.stringify(params)),
        revisionEvent(db, caller, revisionId),
        configStatement(db, caller, revisionRefs(revisionId)),
      ],
      revisionRefs,
    );
  } catch (error) {
    if (isUniqueViolation(error, "app_variants")) return { outcome: "exists" };
    throw error;
  }
}

/**
 * The CTEs of a commit: `app` (APP_BY_REF_CTE), `variant` (the variant of revision ?5, else variant ?12, else
 * config ?7 of the app; all given must agree, and so must ?5 and version ?8; never a removed one), `latest` (its
 * latest revision) and `expected` (the revision the committer saw: ?8, else ?5's; null: none said).
 */
export const COMMIT_CTES = `${APP_BY_REF_CTE},
variant AS (
  SELECT v.id FROM app_variants v
   WHERE v.id = COALESCE((SELECT variant_id FROM app_variant_revisions WHERE id = ?5), ?12,
                         (SELECT id FROM app_variants WHERE app_id = (SELECT id FROM app) AND name = ?7))
     AND v.app_id = (SELECT id FROM app) AND v.removed_at IS NULL AND (?7 IS NULL OR v.name = ?7)
     AND (?12 IS NULL OR v.id = ?12)
     AND (?5 IS NULL OR ?8 IS NULL OR ?8 = (SELECT revision FROM app_variant_revisions WHERE id = ?5))),
latest AS (
  SELECT revision, url, params FROM app_variant_revisions WHERE variant_id = (SELECT id FROM variant)
   ORDER BY revision DESC LIMIT 1),
expected AS (SELECT COALESCE(?8, (SELECT revision FROM app_variant_revisions WHERE id = ?5)) AS revision)`;

const mayWrite = (row: { role: Role | null }) => row.role !== null && WRITER_ROLES.includes(row.role);

/**
 * Commits a new revision of the config the refs name: `params` replace the latest's (they are not merged), and
 * `url` too when given (else the latest's is kept). When the refs name a version (or a revision id), it must be
 * the latest, else "stale": nobody commits on top of a config they did not see. One batch; the revision number
 * is the latest + 1, decided inside the transaction and guarded by UNIQUE (variant_id, revision).
 */
export async function commitConfig(
  db: Queryable,
  caller: Caller,
  refs: Omit<ConfigRefs, "environment">,
  change: { params: Record<string, unknown>; url: string | null },
  claim: IdempotencyClaim | null = null,
): Promise<ConfigWrite> {
  const revisionId = uuidv7();
  const bindings = refBindings(caller, { ...refs, environment: null });
  return claimedConfigWrite(
    db,
    caller,
    claim,
    revisionId,
    [
      db
        .prepare(
          `WITH ${CALLER_CTE}, ${COMMIT_CTES}
           SELECT app.role, variant.id AS variantId, latest.revision AS latest, expected.revision AS expected
             FROM app LEFT JOIN variant LEFT JOIN latest LEFT JOIN expected`,
        )
        .bind(...bindings),
      db
        .prepare(
          `WITH ${CALLER_CTE}, ${COMMIT_CTES}
           INSERT INTO app_variant_revisions (id, variant_id, revision, modified_by, params, url)
           SELECT ?13, variant.id, latest.revision + 1, (SELECT user_id FROM caller), ?14, COALESCE(?15, latest.url)
             FROM variant, latest, expected
            WHERE (SELECT role FROM app) IN ${WRITER_ROLES_SQL} AND COALESCE(expected.revision, latest.revision) = latest.revision`,
        )
        .bind(...bindings, revisionId, JSON.stringify(change.params), change.url),
      revisionEvent(db, caller, revisionId),
      configStatement(db, caller, revisionRefs(revisionId)),
    ],
    revisionRefs,
    ([facts, , , made]) => {
      const found = facts.results[0] as { role: Role | null; variantId: string | null; latest: number; expected: number | null };
      if (found?.variantId && mayWrite(found) && found.expected !== null && found.expected !== found.latest) {
        return { outcome: "stale", latest: found.latest };
      }
      return written(facts, made);
    },
  );
}

/**
 * Forks the config the refs name (as `fetchConfig` finds it) into a new config of the same app,
 * `<config name>_<8 hex>`, whose revision 1 holds the source's params and url: one batch.
 */
export async function forkConfig(
  db: Queryable,
  caller: Caller,
  refs: ConfigRefs,
  claim: IdempotencyClaim | null = null,
): Promise<ConfigWrite> {
  const [variantId, revisionId] = [uuidv7(), uuidv7()];
  const bindings = refBindings(caller, refs);
  return claimedConfigWrite(
    db,
    caller,
    claim,
    revisionId,
    [
      db.prepare(`WITH ${CALLER_CTE}, ${CONFIG_CTES} SELECT app.role FROM app JOIN variant_revision`).bind(...bindings),
      db
        .prepare(
          `WITH ${CALLER_CTE}, ${CONFIG_CTES}
           INSERT INTO app_variants (id, app_id, name)
           SELECT ?13, app.id, substr(vr.config_name, 1, 246) || '_' || lower(hex(randomblob(4))) FROM app JOIN variant_revision vr
            WHERE app.role IN ${WRITER_ROLES_SQL}`,
        )
        .bind(...bindings, variantId),
      db
        .prepare(
          `WITH ${CALLER_CTE}, ${CONFIG_CTES}
           INSERT INTO app_variant_revisions (id, variant_id, revision, modified_by, params, url)
           SELECT ?13, ?14, 1, (SELECT user_id FROM caller), params, url FROM variant_revision
            WHERE EXISTS (SELECT 1 FROM app_variants WHERE id = ?14)`,
        )
        .bind(...bindings, revisionId, variantId),
      db
        .prepare(
          `WITH ${CALLER_CTE}, ${CONFIG_CTES} ${INSERT_EVENT}
           SELECT ?14, 'config.forked', w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR},
                  json_object(${REVISION_DATA}, 'source_config_name', source.config_name, 'source_revision', source.revision)
             FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id JOIN apps a ON a.id = v.app_id ${APP_PLACE}
             JOIN variant_revision source
            WHERE r.id = ?13 ${EVENT_HANDOFF}`,
        )
        .bind(...bindings, revisionId, uuidv7()),
      configStatement(db, caller, revisionRefs(revisionId)),
    ],
    revisionRefs,
  );
}
