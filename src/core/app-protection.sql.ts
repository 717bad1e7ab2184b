import { newId } from "../db/buckets";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import type { CallerWriteDb } from "../db/handles";
import { type Role, WRITER_ROLES, WRITER_ROLES_SQL } from "../db/roles";
import type { Sql } from "../db/sql";
import { type WriteOutcome, writeOutcome } from "../db/visibility";
import { APP_PLACE } from "./change-events.sql.ts";
import type { ProtectionRefusal } from "./protection.sql.ts";

/*
 * A write to an app as a whole (rename, archive, unarchive, delete) changes what each environment of it answers: the
 * app's name is every fetch's `application_ref.slug`, and a lookup by name finds neither an archived app nor an app
 * under its old name. Where such an environment is protected and runs a config, the write is held to a deploy's rule
 * (docs/CHANGE-REQUESTS.md §2) inside its own batch: no extra round trip.
 */

/**
 * After CALLER_CTE, APP_BY_ID_CTE and a CTE `change` (one row, `changes`: whether the write changes the app; a write
 * that changes nothing passes, as on an unprotected environment): `guarded`, the app's protected environments that
 * run a config, with their current revision, when the write changes something; and `app_gate`, one row: `refusal`
 * null when the write may go on, else `protected` (no :bypass_reason) or `bypass_forbidden` (the caller's role is not
 * in every such environment's `bypass_roles`), and `environment`, the first such environment's name.
 */
export const APP_GATE_CTES = `guarded AS (
  SELECT e.name, er.id AS environment_revision_id, ep.bypass_roles
    FROM environments e
    JOIN environment_protections ep ON ep.project_id = (SELECT project_id FROM app) AND ep.environment = e.name AND ep.protected = 1
    JOIN environment_revisions er ON er.environment_id = e.id AND er.revision = e.revision
   WHERE e.app_id = (SELECT id FROM app) AND e.deployed_app_variant_revision_id IS NOT NULL AND (SELECT changes FROM change)),
app_gate AS (
  SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM guarded) THEN NULL
              WHEN :bypass_reason IS NULL THEN 'protected'
              WHEN EXISTS (SELECT 1 FROM guarded WHERE (SELECT role FROM app) NOT IN (SELECT value FROM json_each(guarded.bypass_roles)))
              THEN 'bypass_forbidden' END AS refusal,
         (SELECT name FROM guarded ORDER BY name LIMIT 1) AS environment)`;

/** Whether a gated write may go on (after APP_GATE_CTES): the caller may write to the app, and `app_gate` lets it. */
export const MAY_WRITE_APP = `(SELECT role FROM app) IN ${WRITER_ROLES_SQL} AND (SELECT refusal FROM app_gate) IS NULL`;

/** The facts of a gated write (after APP_GATE_CTES), for `gatedOutcome`: the caller's role, and the gate's refusal. */
export const SELECT_GATE_FACTS = "SELECT app.role, app_gate.refusal, app_gate.environment FROM app, app_gate";

export interface GateFacts {
  role: Role;
  refusal: ProtectionRefusal | null;
  environment: string | null;
}

/**
 * A bypassed write's events (after APP_GATE_CTES): one `environment.protection_bypassed` per environment in
 * `guarded`, naming the revision it was at, its id bound for each name an app's environment has. Before the write,
 * which it is conditioned like.
 */
export const INSERT_BYPASS_EVENTS = `${INSERT_EVENT}
   SELECT CASE guarded.name WHEN 'development' THEN :development_event_id WHEN 'staging' THEN :staging_event_id
                            ELSE :production_event_id END,
          'environment.protection_bypassed', w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR},
          json_object('app_id', a.id, 'app_name', a.name, 'environment', guarded.name,
                      'environment_revision_id', guarded.environment_revision_id, 'reason', :bypass_reason)
     FROM app JOIN apps a ON a.id = app.id ${APP_PLACE} JOIN guarded WHERE ${MAY_WRITE_APP} ${EVENT_HANDOFF}`;

/**
 * A gated write's `facts` (SELECT_GATE_FACTS) and, with a bypass reason, its `bypassed` events (INSERT_BYPASS_EVENTS;
 * without one there is nothing to record, so no statement), bound with `values` (:app_id, :bypass_reason and what the
 * write's `change` CTE binds). To place before the write.
 */
export function gateStatements(
  db: CallerWriteDb,
  { facts, bypassed }: { facts: Sql<GateFacts>; bypassed: Sql },
  values: { app_id: string; bypass_reason: string | null } & Record<string, string | number | null>,
) {
  const statements = { facts: db.statement(facts, values) };
  if (values.bypass_reason === null) return statements;
  const ids = {
    development_event_id: newId(db.bucket),
    staging_event_id: newId(db.bucket),
    production_event_id: newId(db.bucket),
  };
  return { ...statements, bypassed: db.statement(bypassed, { ...values, ...ids }) };
}

/** What a gated write did, or why it did nothing: as WriteOutcome, or a protected environment's refusal. */
export type GatedOutcome = WriteOutcome | { refusal: ProtectionRefusal; appId: string; environment: string };

/** The outcome of a gated write's batch, from its `facts` and the write's RETURNING rows. */
export function gatedOutcome(facts: D1Result<GateFacts>, written: D1Result<unknown>, appId: string): GatedOutcome {
  const found = facts.results[0];
  if (written.results.length === 0 && found?.refusal && found.environment && WRITER_ROLES.includes(found.role)) {
    return { refusal: found.refusal, appId, environment: found.environment };
  }
  return writeOutcome(facts, written);
}
