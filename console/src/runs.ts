import { type Api, answer, type Schemas } from "./api";

/*
 * What runs where, in one vocabulary (docs/CONSOLE.md "Daily use" 1): a config's revisions are versions (`main · v3`),
 * an environment's history entries are deploys (`deploy #5`). The API's fields say `revision` for both; only the
 * pages' words change. A history entry names only the config revision it deployed (by id): its config, version and
 * message come from the app's variants' revisions, its change request from the app's applied requests.
 */

/** A config version, as a page names it. */
export const versionName = (config: string | null | undefined, version: number | null | undefined) =>
  config == null ? "nothing" : `${config} · v${version}`;

/** An environment's history entry, as a page names it. */
export const deployName = (deploy: number | null | undefined) => `deploy #${deploy ?? 0}`;

/** A config version of the app, with what its variant is. */
export type Version = Schemas["AppVariantRevision"] & { variant_id: string };

/** The app's variants, and every version of each by its id (one call per variant, as the variant page reads them). */
export async function appVersions(api: Api, appId: string) {
  const variants = await answer(api.GET("/apps/{app_id}/variants", { params: { path: { app_id: appId } } }));
  const lists = await Promise.all(
    variants.map((variant) =>
      answer(api.GET("/variants/{variant_id}/revisions", { params: { path: { variant_id: variant.variant_id } } })),
    ),
  );
  const versions = new Map<string, Version>();
  lists.forEach((list, i) => {
    for (const revision of list) versions.set(revision.id, { ...revision, variant_id: variants[i].variant_id });
  });
  return { variants, lists, versions };
}

/** An applied change request, by the environment and deploy it made (`production#5`). */
export type AppliedRequests = Map<string, Pick<Schemas["ChangeRequestSummary"], "id" | "title">>;

/** The app's applied change requests (the newest 200, the API's largest page), by the deploy each made. */
export async function appliedRequests(api: Api, appId: string, projectId: string): Promise<AppliedRequests> {
  const page = await answer(
    api.GET("/change-requests", { params: { query: { app_id: appId, project_id: projectId, state: "applied", limit: 200 } } }),
  );
  return new Map(
    page.change_requests
      .filter((request) => request.applied?.environment_revision != null)
      .map((request) => [`${request.environment}#${request.applied?.environment_revision}`, request]),
  );
}

/** An environment's protection settings. */
export const protectionOf = (api: Api, projectId: string, environment: string) =>
  answer(
    api.GET("/projects/{project_id}/environments/{environment_name}/protection", {
      params: { path: { project_id: projectId, environment_name: environment } },
    }),
  );

/** When a write is live everywhere (docs/EDGE-DELIVERY.md §3), when the API says so. */
export const liveEverywhereBy = (response: Response) => response.headers.get("Live-Everywhere-By") ?? undefined;
