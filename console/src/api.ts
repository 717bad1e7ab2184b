import createClient from "openapi-fetch";
import type { components, paths } from "./openapi";

/*
 * The console's one way to the API: openapi-fetch typed by the service's own OpenAPI document (src/openapi.d.ts,
 * generated at build), so that a call the API no longer answers, or an answer read wrongly, fails the type check.
 */

export type Schemas = components["schemas"];
export type Api = ReturnType<typeof createApi>;

/** Where the console is mounted, from the page's <base href> (the Worker's BASE_PATH + "/console/"). */
export const CONSOLE_ROOT = new URL(document.baseURI).pathname;
/** The API's prefix: BASE_PATH, "" at the root. */
export const API_ROOT = CONSOLE_ROOT.slice(0, -"/console/".length);

/** A client of the API calling with `key`; without one, for what needs none (an invitation accepted by a new person). */
export function createApi(key?: string) {
  const headers = key ? { Authorization: `ApiKey ${key}` } : {};
  return createClient<paths>({ baseUrl: `${location.origin}${API_ROOT}`, headers });
}

/** A refused or failed call, with the API's own message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** A 422's issues: where each points (`loc`) and what is wrong. */
    readonly issues: Schemas["ValidationIssue"][] = [],
  ) {
    super(message);
  }
}

/** The API's message in an error body: `detail` as a string, a 422's issues, or the status alone. */
function errorOf(status: number, body: unknown): ApiError {
  const detail = (body as { detail?: unknown } | undefined)?.detail;
  if (typeof detail === "string") return new ApiError(status, detail);
  if (typeof detail === "object" && detail !== null && "message" in detail) return new ApiError(status, String(detail.message));
  if (Array.isArray(detail)) {
    const issues = detail as Schemas["ValidationIssue"][];
    return new ApiError(status, issues.map((issue) => `${issue.loc.join(".")}: ${issue.msg}`).join("; "), issues);
  }
  return new ApiError(status, `The service answered ${status}`);
}

type Call<T> = Promise<{ data?: T; error?: unknown; response: Response }>;

/** The answer's data and response (for its headers), or its error thrown as an ApiError: every call goes through here. */
export async function answered<T>(call: Call<T>): Promise<{ data: T; response: Response }> {
  const { data, error, response } = await call;
  if (!response.ok) throw errorOf(response.status, error);
  return { data: data as T, response };
}

/** The answer's data, or its error thrown as an ApiError. */
export const answer = async <T>(call: Call<T>): Promise<T> => (await answered(call)).data;

/** An API key's prefix, the part before the dot, as GET /keys lists it. */
export const keyPrefix = (key: string) => key.split(".")[0];
