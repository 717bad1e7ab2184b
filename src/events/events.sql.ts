import { CALLER_CTE } from "../db/caller";
import type { CallerDb } from "../db/handles";
import { ADMIN_ROLES_SQL, type AdminRefusal, adminRefusal } from "../db/roles";
import { sql } from "../db/sql";

export interface Event {
  id: string;
  type: string;
  occurred_at: string;
  organization_id: string;
  workspace_id: string | null;
  project_id: string | null;
  actor: { user_id: string | null; username: string | null; api_key_prefix: string | null };
  data: Record<string, unknown>;
}

export interface EventFilter {
  /** Null: the organization of the key's project. */
  organizationId: string | null;
  appId: string | null;
  /** Types, or families ending with a dot (`environment.`); empty: every type. */
  types: string[];
  actor: string | null;
  since: string | null;
  until: string | null;
  /** The last event of the previous page (its id): this page begins after it. */
  cursor: string | null;
  limit: number;
}

/** The organization a request names (:organization_id, else the key's project's), and the caller's role there. */
export const ORGANIZATION_SCOPE = `scope AS (
  SELECT o.id, (SELECT role FROM membership WHERE organization_id = o.id) AS role,
         (SELECT read_role FROM membership WHERE organization_id = o.id) AS read_role
    FROM organizations o
   WHERE o.id = COALESCE(:organization_id, (SELECT w.organization_id FROM projects p JOIN workspaces w ON w.id = p.workspace_id
                               WHERE p.id = (SELECT project_id FROM caller))))`;

const ORGANIZATION_ROLE = sql(`WITH ${CALLER_CTE}, ${ORGANIZATION_SCOPE} SELECT role FROM scope`);
const ORGANIZATION_READ_ROLE = sql(`WITH ${CALLER_CTE}, ${ORGANIZATION_SCOPE} SELECT read_role AS role FROM scope`);

/** The caller's role in the organization :organization_id names (ORGANIZATION_SCOPE), as a batch's statement for `adminRefusal`. */
export const organizationRole = (db: CallerDb, organizationId: string | null) =>
  db.statement(ORGANIZATION_ROLE, { organization_id: organizationId });

/** The same for a read: the role the caller reads in, their user's even with a read-only key. */
export const organizationReadRole = (db: CallerDb, organizationId: string | null) =>
  db.statement(ORGANIZATION_READ_ROLE, { organization_id: organizationId });

export type StoredEvent = Omit<Event, "actor" | "data"> & {
  actor_user_id: string | null;
  actor_username: string | null;
  actor_api_key_prefix: string | null;
  data: string;
};

/**
 * A page of the audit log, newest first: events after the cursor (older than it), at most `limit`, and whether more
 * follow. The cursor is one bound on the index (organization_id, id): without one, '~' (after every id), not an
 * `:cursor IS NULL OR` that SQLite cannot use, which would make a deep page step past every newer event. Owners and workspace admins read it, with a read-only key too ("forbidden" for other roles); "not_found": not a member there.
 */
export async function listEvents(
  db: CallerDb,
  filter: EventFilter,
): Promise<{ outcome: "done"; events: Event[]; more: boolean } | AdminRefusal> {
  const { scope, rows } = await db.batch({
    scope: organizationReadRole(db, filter.organizationId),
    rows: db.statement(EVENTS_PAGE, {
      organization_id: filter.organizationId,
      app_id: filter.appId,
      actor: filter.actor,
      since: filter.since,
      until: filter.until,
      cursor: filter.cursor,
      types: filter.types.length > 0 ? JSON.stringify(filter.types) : null,
      page_rows: filter.limit + 1,
    }),
  });
  const refused = adminRefusal(scope);
  if (refused) return refused;
  const page = rows.results.slice(0, filter.limit);
  return {
    outcome: "done",
    more: rows.results.length > filter.limit,
    events: page.map(toEvent),
  };
}

const EVENTS_PAGE = sql<StoredEvent>(
  `WITH ${CALLER_CTE}, ${ORGANIZATION_SCOPE}
   SELECT e.id, e.type, e.occurred_at, e.organization_id, e.workspace_id, e.project_id,
          e.actor_user_id, e.actor_username, e.actor_api_key_prefix, e.data
     FROM events e
    WHERE e.organization_id = (SELECT id FROM scope WHERE read_role IN ${ADMIN_ROLES_SQL})
      AND (:app_id IS NULL OR e.app_id = :app_id)
      AND (:actor IS NULL OR e.actor_user_id = :actor)
      AND (:since IS NULL OR e.occurred_at >= :since)
      AND (:until IS NULL OR e.occurred_at <= :until)
      AND e.id < COALESCE(:cursor, '~')
      AND (:types IS NULL OR EXISTS (
            SELECT 1 FROM json_each(:types) t
             WHERE e.type = t.value OR (substr(t.value, -1) = '.' AND substr(e.type, 1, length(t.value)) = t.value)))
    ORDER BY e.id DESC LIMIT :page_rows`,
);

/** An event as clients see it, from its row. */
export const toEvent = ({ actor_user_id, actor_username, actor_api_key_prefix, data, ...event }: StoredEvent): Event => ({
  ...event,
  actor: { user_id: actor_user_id, username: actor_username, api_key_prefix: actor_api_key_prefix },
  data: JSON.parse(data),
});
