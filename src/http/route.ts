import type { Handler, Hono, MiddlewareHandler, TypedResponse } from "hono";
import type { StatusCode } from "hono/utils/http-status";
import type { JSONParsed } from "hono/utils/types";
import type * as z from "zod/mini";
import type { IdempotencyClaim } from "../db/idempotency";
import type { AppEnv } from "../types";
import type { Documentation } from "./documentation";
import { conditionalGet, edgeCache } from "./edge-cache";
import { idempotent } from "./idempotency";
import type { TAGS } from "./openapi-parts";
import { protectionBypass } from "./protection-bypass";
import type { RequestCaller } from "./request-caller";
import type { RoundTrips, TestFact } from "./route-facts";
import { jsonBody, noDryRun, validate } from "./validation";

/**
 * One route, declared once: what the router mounts (its middleware chain, in the order below) and what the OpenAPI
 * document says of it (src/openapi.ts) both come from here. Its `doc`, its examples and a body's `documentedAs` are the
 * text a reader sees (Documentation: the Worker has none of it); its `roundTrips` are the tests' (TestFact: nor that);
 * everything else is read by both.
 */
export interface RouteDeclaration<
  Params extends z.ZodMiniObject | undefined = z.ZodMiniObject | undefined,
  Query extends z.ZodMiniObject | undefined = z.ZodMiniObject | undefined,
  Body extends z.ZodMiniType | undefined = z.ZodMiniType | undefined,
  Answer extends z.ZodMiniType | undefined = z.ZodMiniType | undefined,
> {
  method: "get" | "post" | "put" | "patch" | "delete";
  /** The full path as OpenAPI writes it (`/apps/{app_id}`), under BASE_PATH. */
  path: `/${string}`;
  /** Its D1 round trips, case by case (src/http/route-facts.ts): a fact for the tests, none in the Worker. */
  roundTrips: TestFact<RoundTrips>;
  /** Who may call it: an API key (401 without one), nobody in particular, or either (the key checked when sent). */
  auth: "key" | "none" | "optional";
  /** The role rule of a write (owner, workspace_admin or editor; deploys also deployment_manager): others get a 403. */
  write?: boolean;
  /** Path parameters, with the example of each. */
  params?: { schema: NonNullable<Params>; examples: Documentation<Required<z.input<NonNullable<Params>>>> };
  /**
   * Query parameters, with the example of each (an optional one's goes in its schema, see parametersOf). A write whose
   * query declares `dry_run` answers `?dry_run=true` with what it would do, writing nothing; every other write refuses
   * `dry_run` (422), so that none ignores it and writes (`takesDryRun`).
   */
  query?: { schema: NonNullable<Query>; examples: Documentation<Required<z.input<NonNullable<Query>>>> };
  /**
   * A JSON body: the schema it is validated with, which the document names `id` (or `component` under that name, where
   * the validated schema wraps it, with the body `documentedAs`); named examples; the size limit.
   */
  body?: {
    schema: NonNullable<Body>;
    id: string;
    component?: z.ZodMiniType;
    documentedAs?: Documentation<object>;
    examples: Documentation<Record<string, { summary: string; value: z.input<NonNullable<Body>> }>>;
    maxBytes?: number;
    /** Signed (a split's verdict): its handler checks the signature, then the body (validation.ts `signedBody`). */
    signed?: boolean;
  };
  /** Takes an Idempotency-Key: a write "replays" its first answer; one that writes nothing only "validates" the key. */
  idempotencyKey?: "replays" | "validates";
  /** Takes If-Match (the handler compares it in its write: 412). */
  ifMatch?: boolean;
  /** Takes Protection-Bypass (a write to a protected environment, docs/CHANGE-REQUESTS.md §2): `c.var.bypassReason`. */
  protectionBypass?: boolean;
  /**
   * A start-up read, answered from the isolate's memory while fresh, with an ETag, and 304 to If-None-Match naming it
   * (src/http/edge-cache.ts, docs/EDGE-DELIVERY.md).
   */
  cached?: boolean;
  /** A config read that answers a running split's arm by the request's Targeting-Key, saying which in Config-Split. */
  targeted?: boolean;
  doc: Documentation<{
    operationId: string;
    tag: (typeof TAGS)[number]["name"];
    summary: string;
    description: string;
    /** The 200. */
    ok: Ok<Answer>;
    /** The operation's own errors by status (its middleware's are added from the fields above). */
    errors?: Record<number, object>;
  }>;
}

/** An answer as the code may write it (a handler or an example): with readonly arrays and objects too. */
type AsWritten<T> = T extends readonly (infer Item)[]
  ? readonly AsWritten<Item>[]
  : T extends object
    ? { readonly [K in keyof T]: AsWritten<T[K]> }
    : T;

/**
 * The 200 of a route: the schema of its JSON body, which types the handler's answer (the document refers to it by its
 * name, src/http/documentation.ts `named`, or shows it whole); its description, example(s) and headers.
 */
export type Ok<Answer extends z.ZodMiniType | undefined> = {
  description: string;
  headers?: Record<string, object>;
  /** The JSON Schema the document shows in place of the schema's own, where zod would write it otherwise. */
  documentedAs?: object;
} & (Answer extends z.ZodMiniType
  ? {
      schema: Answer;
      example?: AsWritten<z.output<Answer>>;
      examples?: Record<string, { summary: string; value: AsWritten<z.output<Answer>> }>;
    }
  : { schema?: undefined; example?: unknown; examples?: undefined });

/** What the handler of a route with this answer returns: c.json of the answer's output (or a Response, without one). */
type AnswerOf<Answer> = Answer extends z.ZodMiniType
  ? TypedResponse<AsWritten<JSONParsed<z.output<Answer>>>, StatusCode, "json">
  : Response;

type Output<Key extends string, Schema> = Schema extends z.ZodMiniType ? { [K in Key]: z.output<Schema> } : object;
type InputOf<Key extends string, Schema> = Schema extends z.ZodMiniType ? { [K in Key]: z.input<Schema> } : object;

/**
 * What the handler of a route reads from `c.var`: the caller (src/http/d1-session.ts's way to D1) on a route that
 * takes a key, none on one with `auth: "none"`.
 */
export type RouteEnv<Auth extends RouteDeclaration["auth"] = RouteDeclaration["auth"]> = AppEnv & {
  Variables: ([Auth] extends ["none"] ? object : { caller: RequestCaller }) & {
    claim: IdempotencyClaim | null;
    bypassReason?: string | null;
  };
};
type RouteInput<Params, Query, Body> = {
  in: InputOf<"param", Params> & InputOf<"query", Query> & InputOf<"json", Body>;
  out: Output<"param", Params> & Output<"query", Query> & Output<"json", Body>;
};

/** The responses a resource's routes share in the document (components/responses), by name. */
export type SharedResponses = Record<string, object>;

export interface Route {
  declaration: RouteDeclaration;
  handler: Handler<AppEnv>;
}

/** A route: its declaration and the handler that answers it. */
export function route<
  Params extends z.ZodMiniObject | undefined = undefined,
  Query extends z.ZodMiniObject | undefined = undefined,
  Body extends z.ZodMiniType | undefined = undefined,
  Answer extends z.ZodMiniType | undefined = undefined,
  Auth extends RouteDeclaration["auth"] = RouteDeclaration["auth"],
>(
  declaration: RouteDeclaration<Params, Query, Body, Answer> & { auth: Auth },
  handler: Handler<RouteEnv<Auth>, string, RouteInput<Params, Query, Body>, AnswerOf<Answer> | Promise<AnswerOf<Answer>>>,
): Route {
  return { declaration: declaration as RouteDeclaration, handler: handler as unknown as Handler<AppEnv> };
}

/**
 * The middleware that lets a caller in, by the routes' `auth`: src/auth/'s, which src/app.ts passes (it sits above
 * http/, whose D1 sessions it uses).
 */
export type AuthMiddleware = Record<RouteDeclaration["auth"], MiddlewareHandler[]>;

/** Whether the route answers `?dry_run=true` with what it would do: its query declares `dry_run`. */
export const takesDryRun = ({ query }: RouteDeclaration) => query !== undefined && "dry_run" in query.schema.shape;

/**
 * The route's middleware: the key, a write's refusal of a `dry_run` it does not take, the body guard, the
 * Idempotency-Key, the validators (Protection-Bypass's last; a signed body's is its handler's, after the signature).
 * A cached read's If-None-Match and cache go before its body's validation (a hit answers the very bytes validated when
 * it was read), the cache inside If-None-Match (a hit is answered 304 too).
 */
function middlewareOf(declaration: RouteDeclaration, authMiddleware: AuthMiddleware): MiddlewareHandler[] {
  const { method, auth, body, idempotencyKey, params, query, protectionBypass: bypass, cached } = declaration;
  return [
    ...authMiddleware[auth],
    ...(method !== "get" && !takesDryRun(declaration) ? [noDryRun] : []),
    ...(body ? jsonBody(body.maxBytes, body.signed) : []),
    ...(idempotencyKey ? [idempotent] : []),
    ...(params ? [validate("param", params.schema)] : []),
    ...(query ? [validate("query", query.schema)] : []),
    ...(cached ? [conditionalGet, edgeCache] : []),
    ...(body && !body.signed ? [validate("json", body.schema)] : []),
    ...(bypass ? [protectionBypass] : []),
  ] as MiddlewareHandler[];
}

/** The path as Hono matches it: `{name}` becomes `:name`. */
export const routerPath = (path: string) => path.replace(/\{(\w+)\}/g, ":$1");

/** Mounts the routes on `app`, in their order (the first that matches a request answers it). */
export function mountRoutes(app: Hono<AppEnv>, routes: readonly Route[], auth: AuthMiddleware) {
  for (const { declaration, handler } of routes) {
    app.on([declaration.method.toUpperCase()], [routerPath(declaration.path)], ...middlewareOf(declaration, auth), handler);
  }
  return app;
}
