import { revisionsComponents, revisionsRoutes } from "./applications/revisions.routes";
import { appsComponents, appsRoutes } from "./apps/apps.routes";
import { configsComponents, configsRoutes } from "./configs/configs.routes";
import { deploymentsComponents, deploymentsRoutes } from "./deployments/deployments.routes";
import { environmentsComponents, environmentsRoutes } from "./environments/environments.routes";
import { eventsComponents, eventsRoutes } from "./events/events.routes";
import type { Components, Route } from "./http/route";
import { keysComponents, keysRoutes, profileRoutes } from "./keys/keys.routes";
import { organizationsComponents, organizationsRoutes } from "./organizations/organizations.routes";
import { basesRoutes, registryComponents, registryRoutes } from "./registry/registry.routes";
import { serviceRoutes } from "./service.routes";
import { environmentsQueryComponents, environmentsQueryRoutes } from "./simple/environments.routes";
import { appVariantsRoutes, variantsComponents, variantsRoutes } from "./variants/variants.routes";
import { webhooksComponents, webhooksRoutes } from "./webhooks/webhooks.routes";
import { workflowsComponents, workflowsRoutes } from "./workflows/revisions.routes";
import { workspacesComponents, workspacesRoutes } from "./workspaces/workspaces.routes";

/**
 * Every route of the service, in the order the router tries them: where two paths could match one URL (GET
 * /variants/configs/... and /variants/{variant_id}), the fixed one comes first. Deployments live under three
 * prefixes (/variants/configs/deploy, /environments/deploy, /configs/deployment/.../revert); variants under /apps too.
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
  keysComponents,
  organizationsComponents,
  workspacesComponents,
  eventsComponents,
  webhooksComponents,
  revisionsComponents,
  workflowsComponents,
  environmentsQueryComponents,
];
