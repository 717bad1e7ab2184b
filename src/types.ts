import type { Caller } from "./auth/require-api-key";
import type { KeyCredentials } from "./db/accounts";

/** Hono generics shared by every router: the Worker's bindings and what middleware puts on the context. */
export interface AppEnv {
  Bindings: Env;
  Variables: {
    /** The presented key, parsed and hashed; not yet checked. */
    credentials: KeyCredentials;
    /** Set once the key has been checked (by the route's own query, or on an error path). */
    caller?: Caller;
    /** The caller's X-Request-Id when safe, else a new UUID: echoed and logged. */
    requestId: string;
  };
}
