import { revisionsRoutes } from "./applications/revisions.routes";
import { applicationVariantsRoutes } from "./applications/variants.routes";
import { appsResponses, appsRoutes } from "./apps/apps.routes";
import { environmentsResponses, environmentsRoutes } from "./apps/environments.routes";
import { splitsRoutes } from "./apps/splits.routes";
import { applyRoutes } from "./change-requests/apply.routes";
import { changeRequestsRoutes } from "./change-requests/change-requests.routes";
import { basesRoutes, registryResponses, registryRoutes } from "./configs/registry.routes";
import { diffRoutes } from "./diff/diff.routes";
import { eventsRoutes } from "./events/events.routes";
import type { Route, SharedResponses } from "./http/route";
import { keysRoutes, profileRoutes } from "./keys/keys.routes";
import { invitationsRoutes } from "./organizations/invitations.routes";
import { organizationsResponses, organizationsRoutes } from "./organizations/organizations.routes";
import { protectionRoutes } from "./projects/protection.routes";
import { serviceRoutes } from "./service.routes";
import { simpleApplicationsRoutes } from "./simple/applications.routes";
import { environmentRoutes, environmentsQueryRoutes } from "./simple/environments.routes";
import { configsResponses, configsRoutes } from "./variants/configs.routes";
import { deploymentsResponses, deploymentsRoutes } from "./variants/deployments.routes";
import { appVariantsRoutes, variantsResponses, variantsRoutes } from "./variants/variants.routes";
import { webhooksRoutes } from "./webhooks/webhooks.routes";
import { workflowsRoutes } from "./workflows/revisions.routes";
import { workspacesResponses, workspacesRoutes } from "./workspaces/workspaces.routes";

/**
 * Where a URL's code lives: its first segment names the folder (`/apps/...` in src/apps/, its tests in
 * test/worker/apps/), holding the routes, schemas (`*.schemas.ts`) and SQL (`*.sql.ts`). The platform's paths put
 * a few resources under several prefixes; each lives whole in one folder, and this is the one list of them:
 *
 * | URL                                                        | lives in                           |
 * |------------------------------------------------------------|------------------------------------|
 * | /apps/{app_id}/variants, /apps/get_variant_by_env          | src/variants/variants.routes.ts    |
 * | /environments/deploy, /configs/deployment/{id}/revert      | src/variants/deployments.routes.ts |
 * | /bases                                                     | src/configs/registry.routes.ts     |
 * | /profile                                                   | src/keys/keys.routes.ts            |
 * | /health, /openapi.json                                     | src/service.routes.ts              |
 *
 * Routes are tried in this order: where two paths could match one URL (POST /variants/configs/deploy and
 * /variants/{variant_id}), the fixed one comes first.
 */
export const ROUTES: readonly Route[] = [
  ...serviceRoutes,
  ...deploymentsRoutes,
  ...appVariantsRoutes,
  ...appsRoutes,
  ...environmentsRoutes,
  ...configsRoutes,
  ...variantsRoutes,
  ...registryRoutes,
  ...basesRoutes,
  ...simpleApplicationsRoutes,
  ...applicationVariantsRoutes,
  ...keysRoutes,
  ...profileRoutes,
  ...organizationsRoutes,
  ...invitationsRoutes,
  ...workspacesRoutes,
  ...protectionRoutes,
  ...eventsRoutes,
  ...webhooksRoutes,
  ...revisionsRoutes,
  ...workflowsRoutes,
  ...environmentsQueryRoutes,
  ...environmentRoutes,
  ...changeRequestsRoutes,
  ...applyRoutes,
  ...diffRoutes,
  ...splitsRoutes,
];

/**
 * The responses the routes share in the OpenAPI document, resource by resource (built with the document, not in the
 * Worker); their answers' schemas come from the declarations.
 */
export const SHARED_RESPONSES: (() => SharedResponses)[] = [
  appsResponses,
  environmentsResponses,
  variantsResponses,
  configsResponses,
  deploymentsResponses,
  registryResponses,
  organizationsResponses,
  workspacesResponses,
];
