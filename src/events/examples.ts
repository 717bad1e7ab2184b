import type * as z from "zod/mini";
import { DEMO_APP_ID, DEMO_ORGANIZATION_ID, DEMO_PROJECT_ID, DEMO_USER_ID, DEMO_WORKSPACE_ID } from "../http/openapi-parts";
import type { EventBody } from "./events.schemas";

/** An environment.deployed event, as the audit log and webhooks show it. */
export const deployedExample = {
  id: "01a20c07-a195-7289-98bf-32e9a14d3e9e",
  type: "environment.deployed",
  occurred_at: "2026-11-23T22:47:53.450Z",
  organization_id: DEMO_ORGANIZATION_ID,
  workspace_id: DEMO_WORKSPACE_ID,
  project_id: DEMO_PROJECT_ID,
  actor: { user_id: DEMO_USER_ID, username: "demo", api_key_prefix: "localdev" },
  data: {
    app_id: DEMO_APP_ID,
    app_name: "demo-app",
    environment: "staging",
    environment_revision: 2,
    environment_revision_id: "01a20c07-a195-7289-98bf-32e9a14d3e9d",
    previous: null,
    current: {
      config_name: "main",
      variant_id: "01a20c07-a116-75ee-b8fe-509449c00884",
      revision: 2,
      revision_id: "01a20c07-a143-7747-b65b-cd00c42b4a25",
    },
  },
} satisfies z.output<typeof EventBody>;
