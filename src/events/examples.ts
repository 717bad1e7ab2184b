import type * as z from "zod/mini";
import { DEMO_IDS } from "../http/openapi-parts";
import type { EventBody } from "./events.schemas";

/** An environment.deployed event, as the audit log and webhooks show it. */
export const deployedExample = {
  id: "01a20c07-a195-7289-98bf-32e9a14d3e9e",
  type: "environment.deployed",
  occurred_at: "2026-11-23T22:47:53.450Z",
  organization_id: DEMO_IDS.organization,
  workspace_id: DEMO_IDS.workspace,
  project_id: DEMO_IDS.project,
  actor: { user_id: DEMO_IDS.user, username: "demo", api_key_prefix: "localdev" },
  data: {
    app_id: DEMO_IDS.app,
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
