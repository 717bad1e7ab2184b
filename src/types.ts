import type { Caller } from "./auth/require-api-key";

/** Hono generics shared by every router: the Worker's bindings and what middleware puts on the context. */
export interface AppEnv {
  Bindings: Env;
  Variables: { caller: Caller };
}
