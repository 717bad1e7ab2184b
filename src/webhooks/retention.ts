/** How long history is kept, in days: events, and settled deliveries with their attempts. */
export interface Retention {
  eventDays: number;
  deliveryDays: number;
}

/** [vars] EVENT_RETENTION_DAYS and DELIVERY_RETENTION_DAYS when unset. */
const DEFAULT_RETENTION: Retention = { eventDays: 400, deliveryDays: 30 };

/** A positive whole number of days, written plainly ("400"; not "400d", "4e2", "0400" or "-1"). */
const DAYS = /^[1-9]\d*$/;

/** A retention var is not a positive whole number of days: its message names the var and the value. */
export class BadRetentionError extends Error {}

type RetentionVars = Pick<Env, "EVENT_RETENTION_DAYS" | "DELIVERY_RETENTION_DAYS">;

function daysOf(name: keyof RetentionVars, value: unknown, byDefault: number): number {
  if (value === undefined) return byDefault;
  const text = String(value).trim();
  if (DAYS.test(text) && Number.isSafeInteger(Number(text))) return Number(text);
  throw new BadRetentionError(
    `${name} (wrangler.toml [vars]) must be a positive whole number of days; it is ${JSON.stringify(value)}`,
  );
}

let parsed: { key: string; retention: Retention | BadRetentionError } | undefined;

/**
 * The retention the vars say (each var unset: its default), parsed once per isolate (again only if a value differs),
 * or, for a bad value, the error saying why. The caller then prunes nothing rather than guess: a guess (the default,
 * say) could delete for good what an operator meant to keep longer, while pruning nothing only lets rows wait for an
 * hourly run after the value is fixed.
 */
export function retentionOf(env: RetentionVars): Retention | BadRetentionError {
  const key = JSON.stringify([env.EVENT_RETENTION_DAYS, env.DELIVERY_RETENTION_DAYS]);
  if (parsed?.key !== key) {
    try {
      const eventDays = daysOf("EVENT_RETENTION_DAYS", env.EVENT_RETENTION_DAYS, DEFAULT_RETENTION.eventDays);
      parsed = {
        key,
        retention: {
          eventDays,
          deliveryDays: daysOf("DELIVERY_RETENTION_DAYS", env.DELIVERY_RETENTION_DAYS, DEFAULT_RETENTION.deliveryDays),
        },
      };
    } catch (error) {
      if (!(error instanceof BadRetentionError)) throw error;
      parsed = { key, retention: error };
    }
  }
  return parsed.retention;
}
