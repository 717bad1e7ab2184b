import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import worker from "../../src/index";
import { BASE_URL } from "./fixtures";

export interface Instruments {
  /** Called before every round trip (statement execution, batch or exec) with its 1-based number; may throw. */
  beforeTrip?: (trip: number) => void;
  /** May change the statements of a batch before it runs (e.g. slip a failing one into the middle). */
  rewriteBatch?: (statements: D1PreparedStatement[], db: D1Database) => D1PreparedStatement[];
}

/**
 * The real D1 binding, instrumented (test code only): every round trip (`batch`, `exec`, and a statement's
 * `first`, `all`, `run` or `raw`, on the binding or on its sessions) is counted, and may be made to fail.
 */
export function instrumentD1(db: D1Database, instruments: Instruments = {}) {
  const counter = { trips: 0 };
  const trip = () => {
    counter.trips += 1;
    instruments.beforeTrip?.(counter.trips);
  };
  const wrap = <T extends object>(target: T, methods: string[]): T => {
    for (const method of methods) {
      const original = (target as Record<string, (...args: unknown[]) => unknown>)[method].bind(target);
      Object.assign(target, {
        [method]: (...args: unknown[]) => {
          if (method === "prepare") return wrapStatement(original(...args) as D1PreparedStatement);
          if (method === "withSession") return wrap(original(...args) as D1DatabaseSession, ["prepare", "batch"]);
          trip();
          if (method === "batch" && instruments.rewriteBatch)
            return original(instruments.rewriteBatch(args[0] as D1PreparedStatement[], db));
          return original(...args);
        },
      });
    }
    return target;
  };
  const wrapStatement = (statement: D1PreparedStatement): D1PreparedStatement => {
    const bind = statement.bind.bind(statement);
    wrap(statement, ["first", "all", "run", "raw"]);
    return Object.assign(statement, { bind: (...values: unknown[]) => wrapStatement(bind(...values)) });
  };
  const database = Object.create(db) as D1Database;
  for (const method of ["prepare", "batch", "exec", "withSession"] as const) {
    Object.assign(database, { [method]: (db[method] as (...args: unknown[]) => unknown).bind(db) });
  }
  return { db: wrap(database, ["prepare", "batch", "exec", "withSession"]), counter };
}

/** A request through the Worker's own fetch handler, with some bindings replaced (e.g. an instrumented D1). */
export async function fetchWithEnv(
  bindings: Partial<Env>,
  method: string,
  path: string,
  key?: string,
  body?: string,
  extraHeaders: Record<string, string> = {},
) {
  const headers: Record<string, string> = { ...extraHeaders, ...(key ? { Authorization: `ApiKey ${key}` } : {}) };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const request = new Request(`${BASE_URL}${path}`, { method, headers, body }) as Request<unknown, IncomingRequestCfProperties>;
  return worker.fetch(request, { ...env, ...bindings }, createExecutionContext());
}

export const fetchWithDb = (db: D1Database, method: string, path: string, key?: string, body?: string) =>
  fetchWithEnv({ DB: db }, method, path, key, body);
