import type { RequestCaller } from "./db/caller";

/** Hono generics shared by every router: the Worker's bindings and what middleware puts on the context. */
export interface AppEnv {
  Bindings: Env;
  Variables: {
    /** The caller's X-Request-Id when safe, else a new UUID: echoed and logged. */
    requestId: string;
    /** Who is asking, on routes behind `requireApiKey` or `optionalApiKey`: the only way to D1 (src/http/d1-session.ts). */
    caller?: RequestCaller;
  };
}
