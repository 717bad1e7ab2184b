import { createService } from "./app";
import { runSplitCron } from "./apps/split-steps.sql.ts";
import { runChangeRequestCron } from "./change-requests/cron.sql.ts";
import { deleteExpiredClaims } from "./db/idempotency";
import { allShards, shardNamed } from "./db/pool";
import type { DeliveryMessage } from "./http/hand-off";
import { pruneHistory } from "./webhooks/deliveries.sql.ts";
import { deliverQueued, sweepOverdueDeliveries } from "./webhooks/delivery";
import { BadRetentionError, type Retention, retentionOf } from "./webhooks/retention";

/** wrangler.toml [triggers]: the hourly clean-up; every other minute's trigger is the delivery sweep. */
const HOURLY = "23 * * * *";

/** The hourly clean-up of one shard: expired claims, and history past `kept` (none when a retention var is bad). */
const cleanUp = (db: D1Database, kept: Retention | BadRetentionError) =>
  Promise.all([deleteExpiredClaims(db), kept instanceof BadRetentionError ? undefined : pruneHistory(db, kept)]);

// Vars only reach the Worker with a request, so the service is built on first use (per isolate and configuration).
const services = new Map<string, ReturnType<typeof createService>>();

export default {
  fetch(request, env, ctx) {
    const key = JSON.stringify([env.BASE_PATH, env.CORS_ORIGINS]);
    let service = services.get(key);
    if (!service) {
      service = createService({
        basePath: (env.BASE_PATH ?? "").replace(/\/+$/, ""),
        // Comma-separated; an Origin header never ends with a slash, so a configured one is forgiven it.
        corsOrigins: (env.CORS_ORIGINS ?? "")
          .split(",")
          .map((origin) => origin.trim().replace(/\/+$/, ""))
          .filter(Boolean),
      });
      services.set(key, service);
    }
    return service.fetch(request, env, ctx);
  },

  // Hourly, on every shard at once: Idempotency-Key claims past their 24 hours, and events and deliveries past their
  // retention ([vars]; a bad value prunes nothing and logs why), are dropped. Each minute: deliveries a lost hand-off
  // left pending on any shard are attempted (a bounded number) or queued again; due scheduled change requests are
  // applied and expired ones recorded; splits' due steps are applied. That work is awaited, not only waited on, so
  // that wrangler dev's /__scheduled answers once it is done (a read after it sees the steps).
  async scheduled(controller, env, ctx) {
    if (controller.cron === HOURLY) {
      const kept = retentionOf(env);
      if (kept instanceof BadRetentionError) {
        console.error(
          JSON.stringify({ level: "error", message: "history not pruned: a retention var is invalid", reason: kept.message }),
        );
      }
      ctx.waitUntil(Promise.all(allShards(env).map((shard) => cleanUp(shardNamed(env, shard), kept))));
    } else await Promise.all([sweepOverdueDeliveries(env), runChangeRequestCron(env), runSplitCron(env)]);
  },

  // The webhook delivery queue (wrangler.toml [[queues.consumers]]).
  queue(batch, env) {
    return deliverQueued(batch as MessageBatch<DeliveryMessage>, env);
  },
} satisfies ExportedHandler<Env, DeliveryMessage>;
