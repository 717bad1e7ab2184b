import { createService } from "./app";
import { deleteExpiredClaims } from "./db/idempotency";

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

  // wrangler.toml [triggers]: Idempotency-Key claims past their 24 hours are dropped.
  scheduled(_controller, env, ctx) {
    ctx.waitUntil(deleteExpiredClaims(env.DB));
  },
} satisfies ExportedHandler<Env>;
