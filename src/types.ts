/** Hono generics shared by every router: the Worker's bindings and what middleware puts on every request's context. */
export interface AppEnv {
  Bindings: Env;
  Variables: {
    /** The caller's X-Request-Id when safe, else a new UUID: echoed and logged. */
    requestId: string;
  };
}
