import { type RequestOptions, send } from "./fixtures";

/*
 * The worker's routes as the tests call them, one typed helper per route, grouped by family, each a request through
 * fixtures.ts's `send`. Path parameters are percent-encoded (an id may be a payload of injection-payloads.ts), query
 * values too (URLSearchParams would send a space as "+"). Bodies are `unknown`: the tests send malformed ones on purpose.
 */

/** Who a request is sent as: a key, sent as `ApiKey <key>`, or the Authorization header as written. */
export type Credentials = Pick<RequestOptions, "key" | "authorization">;

/** The bare key in Authorization, as the platform's clients send it (docs/LEGACY-API.md). */
export const bareKey = (key: string): Credentials => ({ authorization: key });

/** What else a request may carry: headers (Idempotency-Key, If-Match, ...), bindings in place of the real ones. */
type Extras = Pick<RequestOptions, "headers" | "bindings">;

const enc = encodeURIComponent;

/** `path` with a query string of the `params` given, every value percent-encoded (none: no "?"). */
const withQuery = (path: string, params: Record<string, string | undefined>) => {
  const query = Object.entries(params).flatMap(([name, value]) => (value === undefined ? [] : [`${name}=${enc(value)}`]));
  return query.length === 0 ? path : `${path}?${query.join("&")}`;
};

/** GET /configs: the app (base), and the environment or the config whose revision is answered. */
type ConfigQuery = {
  base_id?: string;
  config_name?: string;
  environment_name?: string;
};

/** GET /bases: the app, and optionally the base's name. */
type BasesQuery = {
  app_id?: string;
  base_name?: string;
};

const get = (path: string, as: Credentials, extras: Extras = {}) => send("GET", path, { ...extras, ...as });
const post = (path: string, as: Credentials, body: unknown, extras: Extras = {}) =>
  send("POST", path, { ...extras, ...as, body });

/** The registry of the platform's older SDK: GET and POST /configs, /configs/deployment/{id}, /bases, /variants/... */
export const registry = {
  getConfig: (as: Credentials, query: ConfigQuery, extras?: Extras) => get(withQuery("/configs", query), as, extras),
  saveConfig: (as: Credentials, body: unknown, extras?: Extras) => post("/configs", as, body, extras),
  /** GET /configs/deployment/{id}: what one environment revision deployed. */
  deploymentConfig: (as: Credentials, environmentRevisionId: string, extras?: Extras) =>
    get(`/configs/deployment/${enc(environmentRevisionId)}`, as, extras),
  getBases: (as: Credentials, query: BasesQuery, extras?: Extras) => get(withQuery("/bases", query), as, extras),
  fromBase: (as: Credentials, body: unknown, extras?: Extras) => post("/variants/from-base", as, body, extras),
  putParameters: (as: Credentials, variantId: string, parameters: unknown, extras: Extras = {}) =>
    send("PUT", `/variants/${enc(variantId)}/parameters`, { ...extras, ...as, body: { parameters } }),
  removeVariant: (as: Credentials, variantId: string, extras: Extras = {}) =>
    send("DELETE", `/variants/${enc(variantId)}`, { ...extras, ...as }),
};

/** The config registry: POST /variants/configs/{add, commit, fetch, ...}. */
export const configs = {
  call: (as: Credentials, action: string, body: unknown, extras?: Extras) =>
    post(`/variants/configs/${action}`, as, body, extras),
};

/** Deploying and reverting: POST /variants/configs/deploy, /environments/deploy, /configs/deployment/{id}/revert. */
export const deployments = {
  deployConfig: (as: Credentials, body: unknown, extras?: Extras) => post("/variants/configs/deploy", as, body, extras),
  deployEnvironment: (as: Credentials, body: unknown, extras?: Extras) => post("/environments/deploy", as, body, extras),
  revert: (as: Credentials, environmentRevisionId: string, extras?: Extras) =>
    post(`/configs/deployment/${enc(environmentRevisionId)}/revert`, as, undefined, extras),
};

/** The app reads: the list, an app's variants and environments, an environment's record (GET /apps/{app_id}/revisions/{environment}). */
export const apps = {
  list: (as: Credentials, query: { app_name?: string; workspace_id?: string } = {}, extras?: Extras) =>
    get(withQuery("/apps", query), as, extras),
  variants: (as: Credentials, appId: string, extras?: Extras) => get(`/apps/${enc(appId)}/variants`, as, extras),
  environments: (as: Credentials, appId: string, extras?: Extras) => get(`/apps/${enc(appId)}/environments`, as, extras),
  revisions: (as: Credentials, appId: string, environment: string, extras?: Extras) =>
    get(`/apps/${enc(appId)}/revisions/${enc(environment)}`, as, extras),
};

/** A variant's reads: GET /variants/{id}, its revisions, one revision. */
export const variants = {
  get: (as: Credentials, variantId: string, extras?: Extras) => get(`/variants/${enc(variantId)}`, as, extras),
  revisions: (as: Credentials, variantId: string, extras?: Extras) => get(`/variants/${enc(variantId)}/revisions`, as, extras),
  revision: (as: Credentials, variantId: string, revision: number, extras?: Extras) =>
    get(`/variants/${enc(variantId)}/revisions/${revision}`, as, extras),
};

/** Today's SDK's apps (docs/CURRENT-SDK-API.md, calls 1 to 5): /simple/applications/... */
export const simpleApplications = {
  create: (as: Credentials, body: unknown, extras?: Extras) => post("/simple/applications/", as, body, extras),
  query: (as: Credentials, body: unknown, extras?: Extras) => post("/simple/applications/query", as, body, extras),
  get: (as: Credentials, appId: string, extras?: Extras) => get(`/simple/applications/${enc(appId)}`, as, extras),
  edit: (as: Credentials, appId: string, body: unknown, extras: Extras = {}) =>
    send("PUT", `/simple/applications/${enc(appId)}`, { ...extras, ...as, body }),
  archive: (as: Credentials, appId: string, extras?: Extras) =>
    post(`/simple/applications/${enc(appId)}/archive`, as, undefined, extras),
  unarchive: (as: Credentials, appId: string, extras?: Extras) =>
    post(`/simple/applications/${enc(appId)}/unarchive`, as, undefined, extras),
};

/** Today's SDK's variants (calls 6 to 9): /applications/variants/... */
export const applicationVariants = {
  add: (as: Credentials, body: unknown, extras?: Extras) => post("/applications/variants/", as, body, extras),
  query: (as: Credentials, body: unknown, extras?: Extras) => post("/applications/variants/query", as, body, extras),
  get: (as: Credentials, variantId: string, extras?: Extras) => get(`/applications/variants/${enc(variantId)}`, as, extras),
  archive: (as: Credentials, variantId: string, extras?: Extras) =>
    post(`/applications/variants/${enc(variantId)}/archive`, as, undefined, extras),
  unarchive: (as: Credentials, variantId: string, extras?: Extras) =>
    post(`/applications/variants/${enc(variantId)}/unarchive`, as, undefined, extras),
};

/** Today's SDK's config calls (docs/CURRENT-SDK-API.md, calls 10 to 15). */
export const current = {
  retrieve: (as: Credentials, body: unknown, extras?: Extras) => post("/applications/revisions/retrieve", as, body, extras),
  retrieveWorkflow: (as: Credentials, body: unknown, extras?: Extras) => post("/workflows/revisions/retrieve", as, body, extras),
  commit: (as: Credentials, body: unknown, extras?: Extras) => post("/applications/revisions/commit", as, body, extras),
  log: (as: Credentials, body: unknown, extras?: Extras) => post("/applications/revisions/log", as, body, extras),
  deploy: (as: Credentials, body: unknown, extras?: Extras) => post("/applications/revisions/deploy", as, body, extras),
  queryEnvironments: (as: Credentials, body: unknown, extras?: Extras) => post("/simple/environments/query", as, body, extras),
};

/** GET /change-requests's filters; `state` repeated once per state. */
type ChangeRequestsQuery = {
  app_id?: string;
  environment?: string;
  state?: string[];
  author?: string;
  project_id?: string;
  cursor?: string;
  awaiting_my_review?: string;
  limit?: string;
};

/** Change requests (docs/CHANGE-REQUESTS.md §3): /change-requests/... */
export const changeRequests = {
  create: (as: Credentials, body: unknown, extras?: Extras) => post("/change-requests", as, body, extras),
  list: (as: Credentials, { state = [], ...query }: ChangeRequestsQuery = {}, extras?: Extras) => {
    const path = withQuery("/change-requests", query);
    const states = state.map((one) => `state=${enc(one)}`).join("&");
    return get(states === "" ? path : `${path}${path.includes("?") ? "&" : "?"}${states}`, as, extras);
  },
  get: (as: Credentials, id: string, extras?: Extras) => get(`/change-requests/${enc(id)}`, as, extras),
  edit: (as: Credentials, id: string, body: unknown, extras: Extras = {}) =>
    send("PATCH", `/change-requests/${enc(id)}`, { ...extras, ...as, body }),
  review: (as: Credentials, id: string, body: unknown, extras?: Extras) =>
    post(`/change-requests/${enc(id)}/reviews`, as, body, extras),
  /** POST /change-requests/{id}/<action> (submit, rebase, cancel, apply, schedule, unschedule). */
  act: (as: Credentials, id: string, action: string, body?: unknown, extras?: Extras) =>
    post(`/change-requests/${enc(id)}/${action}`, as, body, extras),
  diff: (as: Credentials, id: string, extras?: Extras) => get(`/change-requests/${enc(id)}/diff`, as, extras),
};

/** Protection settings (docs/CHANGE-REQUESTS.md §1): /projects/{project_id}/environments/{environment_name}/protection. */
export const protection = {
  get: (as: Credentials, projectId: string, environment: string, extras?: Extras) =>
    get(`/projects/${enc(projectId)}/environments/${enc(environment)}/protection`, as, extras),
  put: (as: Credentials, projectId: string, environment: string, body: unknown, extras: Extras = {}) =>
    send("PUT", `/projects/${enc(projectId)}/environments/${enc(environment)}/protection`, { ...extras, ...as, body }),
};

/** Diffs (docs/CHANGE-REQUESTS.md §5): GET /diff/configs (config revision ids), /diff/environments (environment revision ids). */
export const diffs = {
  configs: (as: Credentials, query: { from?: string; to?: string }, extras?: Extras) =>
    get(withQuery("/diff/configs", query), as, extras),
  environments: (as: Credentials, query: { from?: string; to?: string }, extras?: Extras) =>
    get(withQuery("/diff/environments", query), as, extras),
};

/** One environment of the key's project, and guarding it (docs/CHANGE-REQUESTS.md §8): /simple/environments/{id}. */
export const simpleEnvironments = {
  get: (as: Credentials, environmentId: string, extras?: Extras) => get(`/simple/environments/${enc(environmentId)}`, as, extras),
  guard: (as: Credentials, environmentId: string, extras?: Extras) =>
    post(`/simple/environments/${enc(environmentId)}/guard`, as, undefined, extras),
  unguard: (as: Credentials, environmentId: string, extras?: Extras) =>
    post(`/simple/environments/${enc(environmentId)}/unguard`, as, undefined, extras),
};
