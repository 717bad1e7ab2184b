import { newId } from "../db/buckets";
import { CALLER_CTE } from "../db/caller";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import type { CallerWriteDb } from "../db/handles";
import { sql } from "../db/sql";
import type { ProtectionPass } from "./protection.sql.ts";

/** Where an app (aliased `a`) lives, for an event about it: its project `p` and workspace `w`. */
export const APP_PLACE = "JOIN projects p ON p.id = a.project_id JOIN workspaces w ON w.id = p.workspace_id";

/** What an event says of variant `v` of app `a` (`config.archived`, `config.unarchived`, `config.removed`). */
export const VARIANT_DATA = `'app_id', a.id, 'app_name', a.name, 'config_name', COALESCE(v.removed_name, v.name), 'variant_id', v.id`;

/** What an event says of a config revision `r` of variant `v` of app `a`, with its commit message (or null). */
export const REVISION_DATA = `'app_id', a.id, 'app_name', a.name, 'config_name', COALESCE(v.removed_name, v.name), 'variant_id', v.id,
  'revision', r.revision, 'revision_id', r.id, 'message', r.message`;

/**
 * The event of config revision `revisionId`, which the batch makes (a new id: it exists only if made): `config.added`
 * when its variant is `newVariantId`, the one the batch may make with it (null: none), else `config.committed`. A
 * variant made without a revision (today's SDK, POST /applications/variants/) had its `config.added` then: its
 * revision 1 is committed. To place after the revision's insert.
 */
export const revisionEvent = (db: CallerWriteDb, revisionId: string, newVariantId: string | null) =>
  db.statement(REVISION_EVENT, { event_id: newId(db.bucket), revision_id: revisionId, new_variant_id: newVariantId });

const REVISION_EVENT = sql(
  `WITH ${CALLER_CTE} ${INSERT_EVENT}
   SELECT :event_id, CASE WHEN v.id = :new_variant_id THEN 'config.added' ELSE 'config.committed' END,
          w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR}, json_object(${REVISION_DATA})
     FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id JOIN apps a ON a.id = v.app_id ${APP_PLACE}
    WHERE r.id = :revision_id ${EVENT_HANDOFF}`,
);

/**
 * When the change the batch commits is live everywhere (docs/EDGE-DELIVERY.md §3): the statement's time (inside the
 * batch's transaction, so before anything reads the change) plus the writer's `liveAfter`.
 */
export const LIVE_EVERYWHERE_BY = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', :live_after)";

/** A deployed config revision, by revision id (an SQL expression's value): `{config_name, variant_id, revision, revision_id}`. */
const DEPLOYED = `SELECT json_object('config_name', COALESCE(v.removed_name, v.name), 'variant_id', v.id, 'revision', r.revision,
                         'revision_id', r.id)
    FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id`;

/**
 * The event of environment revision `environmentRevisionId`, which the batch makes: `environment.deployed`, or with
 * `revertedTo` (the environment revision whose deployment was made again) `environment.reverted`; what the
 * environment ran before (`previous`, null at first) and runs now (`current`); and `change_request_id`, the change
 * request whose apply made it (only then: a direct write's event has no such key, as a deploy's has no
 * `reverted_to_revision_id`; an apply's revert is the request's). To place after the revision's insert.
 */
export const deploymentEvent = (
  db: CallerWriteDb,
  environmentRevisionId: string,
  revertedTo: string | null,
  changeRequestId: string | null,
) =>
  db.statement(DEPLOYMENT_EVENT, {
    event_id: newId(db.bucket),
    environment_revision_id: environmentRevisionId,
    reverted_to: revertedTo,
    change_request_id: changeRequestId,
    live_after: db.liveAfter,
  });

/** The environment revision a revert deploys again: :reverted_to, or the one change request :change_request_id reverts to. */
const REVERTED_TO = "COALESCE(:reverted_to, (SELECT revert_to_revision_id FROM change_requests WHERE id = :change_request_id))";

const DEPLOYMENT_EVENT = sql(
  `WITH ${CALLER_CTE}, reverted AS (SELECT ${REVERTED_TO} AS id) ${INSERT_EVENT}
       SELECT :event_id, CASE WHEN (SELECT id FROM reverted) IS NULL THEN 'environment.deployed' ELSE 'environment.reverted' END,
              w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR},
              json_patch(
                json_object('app_id', a.id, 'app_name', a.name, 'environment', e.name, 'environment_revision', er.revision,
                            'environment_revision_id', er.id,
                            'previous', json((${DEPLOYED} JOIN environment_revisions before ON before.deployed_app_variant_revision_id = r.id
                                               WHERE before.environment_id = er.environment_id AND before.revision = er.revision - 1)),
                            'current', json((${DEPLOYED} WHERE r.id = er.deployed_app_variant_revision_id)),
                            'live_everywhere_by', ${LIVE_EVERYWHERE_BY}),
                json_patch(CASE WHEN (SELECT id FROM reverted) IS NULL THEN '{}' ELSE json_object('reverted_to_revision_id', (SELECT id FROM reverted)) END,
                           CASE WHEN :change_request_id IS NULL THEN '{}' ELSE json_object('change_request_id', :change_request_id) END))
         FROM environment_revisions er JOIN environments e ON e.id = er.environment_id JOIN apps a ON a.id = e.app_id ${APP_PLACE}
        WHERE er.id = :environment_revision_id ${EVENT_HANDOFF}`,
);

/**
 * `environment.protection_bypassed`, when environment revision `environmentRevisionId`, which the batch makes, was
 * made with `bypassReason` in a protected environment (its insert let it through only from a role in `bypass_roles`);
 * nothing where the environment is not protected (a bypass is ignored there). To place after the revision's insert.
 */
export const bypassEvent = (db: CallerWriteDb, environmentRevisionId: string, { bypassReason = null }: ProtectionPass) =>
  db.statement(BYPASS_EVENT, {
    event_id: newId(db.bucket),
    environment_revision_id: environmentRevisionId,
    bypass_reason: bypassReason,
  });

const BYPASS_EVENT = sql(
  `WITH ${CALLER_CTE} ${INSERT_EVENT}
       SELECT :event_id, 'environment.protection_bypassed', w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR},
              json_object('app_id', a.id, 'app_name', a.name, 'environment', e.name, 'environment_revision_id', er.id,
                          'reason', :bypass_reason)
         FROM environment_revisions er JOIN environments e ON e.id = er.environment_id JOIN apps a ON a.id = e.app_id ${APP_PLACE}
         JOIN environment_protections ep ON ep.project_id = a.project_id AND ep.environment = e.name AND ep.protected = 1
        WHERE er.id = :environment_revision_id AND :bypass_reason IS NOT NULL ${EVENT_HANDOFF}`,
);
