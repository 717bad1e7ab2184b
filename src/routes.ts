import { revisionsComponents, revisionsRoutes } from "./applications/revisions.routes";
import { applicationVariantsComponents, applicationVariantsRoutes } from "./applications/variants.routes";
import { appsComponents, appsRoutes } from "./apps/apps.routes";
import { environmentsComponents, environmentsRoutes } from "./apps/environments.routes";
import { basesRoutes, registryComponents, registryRoutes } from "./configs/registry.routes";
import { eventsComponents, eventsRoutes } from "./events/events.routes";
import type { Components, Route } from "./http/route";
import { keysComponents, keysRoutes, profileRoutes } from "./keys/keys.routes";
import { organizationsComponents, organizationsRoutes } from "./organizations/organizations.routes";
import { serviceRoutes } from "./service.routes";
import { simpleApplicationsComponents, simpleApplicationsRoutes } from "./simple/applications.routes";
import { environmentsQueryComponents, environmentsQueryRoutes } from "./simple/environments.routes";
import { configsComponents, configsRoutes } from "./variants/configs.routes";
import { deploymentsComponents, deploymentsRoutes } from "./variants/deployments.routes";
import { appVariantsRoutes, variantsComponents, variantsRoutes } from "./variants/variants.routes";
import { webhooksComponents, webhooksRoutes } from "./webhooks/webhooks.routes";
import { workflowsComponents, workflowsRoutes } from "./workflows/revisions.routes";
import { workspacesComponents, workspacesRoutes } from "./workspaces/workspaces.routes";

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
  ...workspacesRoutes,
  ...eventsRoutes,
  ...webhooksRoutes,
  ...revisionsRoutes,
  ...workflowsRoutes,
  ...environmentsQueryRoutes,
];

/** What the routes name in the OpenAPI document, resource by resource (built with the document, not in the Worker). */
export const COMPONENTS: (() => Components)[] = [
  appsComponents,
  environmentsComponents,
  variantsComponents,
  configsComponents,
  deploymentsComponents,
  registryComponents,
  simpleApplicationsComponents,
  applicationVariantsComponents,
  keysComponents,
  organizationsComponents,
  workspacesComponents,
  eventsComponents,
  webhooksComponents,
  revisionsComponents,
  workflowsComponents,
  environmentsQueryComponents,
];
