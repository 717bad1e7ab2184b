/**
 * Events (docs/EVENTS.md): each change's statements include the insert of its event, so that the change and its event
 * commit together or not at all. An event statement selects, per change made, the columns of INSERT_EVENT in order:
 * its id, its type, the organization, workspace, project and app it concerns, EVENT_ACTOR, and its data (JSON text).
 * No row selected: nothing changed, no event.
 */
export const INSERT_EVENT = `INSERT INTO events
  (id, type, organization_id, workspace_id, project_id, app_id, actor_user_id, actor_username, actor_api_key_prefix, data)`;

/**
 * Ends every event insert: names the event if its organization has a live webhook, which `CallerWriteDb` collects
 * for the request to hand to the delivery queue after its answer (the deliveries themselves are made by the
 * `events_fan_out` trigger, in the same statement).
 */
export const EVENT_HANDOFF = `RETURNING CASE WHEN EXISTS (SELECT 1 FROM webhooks subscribed
  WHERE subscribed.organization_id = events.organization_id AND subscribed.enabled = 1) THEN id END AS event_to_deliver`;

/** Who made the change, after CALLER_CTE: the caller's user, and the prefix of the key they used (null for the CLI). */
export const EVENT_ACTOR = `(SELECT user_id FROM caller), (SELECT username FROM users WHERE id = (SELECT user_id FROM caller)), :caller_prefix`;
