import { buildService } from "./app";

// BASE_PATH only reaches the Worker with a request, so the service is built on first use (per isolate).
const services = new Map<string, ReturnType<typeof buildService>>();

export default {
  fetch(request, env, ctx) {
    const basePath = (env.BASE_PATH ?? "").replace(/\/+$/, "");
    let service = services.get(basePath);
    if (!service) {
      service = buildService(basePath);
      services.set(basePath, service);
    }
    return service.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<Env>;
