import { demoRevision } from "../applications/examples";
import {
  RetrieveWorkflowRevisionBody,
  RetrieveWorkflowRevisionShape,
  toWorkflowRevision,
  type WorkflowRevision,
  WorkflowRevisionAnswer,
} from "../applications/revisions.schemas";
import { retrieveRevision } from "../applications/revisions.sql.ts";
import { configRefOrder } from "../core/configs.sql.ts";
import { readAs } from "../http/d1-session";
import { DEMO_APP_ID, EXAMPLE_VARIANT_ID } from "../http/openapi-parts";
import { route } from "../http/route";
import { answerSplit, targetingKey } from "../http/targeting-key";

const { application_id, application_slug, application_variant_id, application_variant_slug, ...shared } = demoRevision;

const demoWorkflowRevision = {
  ...shared,
  workflow_id: application_id,
  workflow_slug: application_slug,
  workflow_variant_id: application_variant_id,
  workflow_variant_slug: application_variant_slug,
} satisfies WorkflowRevision;

/** POST /workflows/revisions/retrieve: the SDK's fallback when the application read found no parameters. */
export const workflowsRoutes = [
  route(
    {
      method: "post",
      path: "/workflows/revisions/retrieve",
      cached: true,
      targeted: true,
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "workflows retrieve",
            path: "/workflows/revisions/retrieve",
            body: { workflow_ref: { id: "{appId}" }, workflow_variant_ref: { id: "{variantId}" } },
            trips: 1,
          },
        ],
      },
      auth: "key",
      body: {
        schema: RetrieveWorkflowRevisionBody,
        id: "RetrieveWorkflowRevision",
        component: RetrieveWorkflowRevisionShape,
        examples: globalThis.DOCUMENTATION && {
          byVariant: {
            summary: "A variant's latest revision",
            value: { resolve: true, workflow_ref: { id: DEMO_APP_ID }, workflow_variant_ref: { id: EXAMPLE_VARIANT_ID } },
          },
        },
      },
      idempotencyKey: "validates",
      doc: globalThis.DOCUMENTATION && {
        operationId: "retrieveWorkflowRevision",
        tag: "Workflow revisions",
        summary: "Read a config revision, in workflow names",
        description:
          "The lookup of POST /applications/revisions/retrieve with `workflow_ref`, `workflow_variant_ref` and " +
          '`workflow_revision_ref`; answers 200 whatever it finds: `{"count": 0}` where that call would answer 404 too.',
        ok: {
          schema: WorkflowRevisionAnswer,
          description: 'The revision, or `{"count": 0}`',
          examples: {
            found: { summary: "Found", value: { count: 1, workflow_revision: demoWorkflowRevision } },
            none: { summary: "Nothing matches", value: { count: 0 } },
          },
        },
      },
    },
    async (c) => {
      const lookup = c.req.valid("json");
      const key = targetingKey(c);
      const config = await readAs(c, configRefOrder(lookup.refs), (db) => retrieveRevision(db, lookup, key));
      if (typeof config === "object") answerSplit(c, config);
      return c.json(typeof config === "object" ? { count: 1, workflow_revision: toWorkflowRevision(config) } : { count: 0 }, 200);
    },
  ),
];
