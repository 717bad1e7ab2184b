import type { Caller } from "./db/caller";

/** Hono generics shared by every router: the Worker's bindings and what middleware puts on the context. */
export interface AppEnv {
  Bindings: Env;
  Variables: {
    /** The caller's X-Request-Id when safe, else a new UUID: echoed and logged. */
    requestId: string;
    /** Who is asking, on routes behind `requireApiKey`; its key is checked by the route's own query. */
    caller?: Caller;
  };
}
