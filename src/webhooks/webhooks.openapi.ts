import type * as z from "zod";
import { WEBHOOKS_PER_ORGANIZATION } from "../db/webhooks";
import { deployedExample } from "../events/events.openapi";
import {
  appNotFound,
  deliveryNotFound,
  forbidden,
  organizationNotFound,
  webhookDisabled,
  webhookNotFound,
  webhooksNotSetUp,
} from "../http/errors";
import {
  arrayOf,
  DEMO_IDS,
  errorResponse,
  jsonRequestBody,
  jsonResponse,
  operationResponses,
  parametersOf,
  type RequestExamples,
  requestHeaders,
  schemaRef,
  tagged,
} from "../http/openapi-parts";
import {
  AttemptBody,
  CreatedWebhookBody,
  CreateWebhookBody,
  DeliveryBody,
  DeliveryPage,
  DeliveryParams,
  DeliveryWithAttempts,
  ListDeliveriesQuery,
  ListWebhooksQuery,
  UpdateWebhookBody,
  WebhookBody,
  WebhookParams,
  WebhookPayload,
  WebhookSecretBody,
} from "./webhooks.schemas";

const WEBHOOK_ID = "01a20c90-1c2b-7d4e-9f60-7a8b9c0d1e2f";
const DELIVERY_ID = "6f1c2d3e-4a5b-4c6d-8e7f-901a2b3c4d5e";
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw1bA7b0Hd7sk=";

const chat = {
  id: WEBHOOK_ID,
  organization_id: DEMO_IDS.organization,
  url: "https://hooks.example.com/app-management",
  events: ["environment.deployed", "environment.reverted"],
  app_id: null,
  description: "Deploys to the team chat",
  enabled: true,
  disabled_reason: null,
  created_at: "2026-11-24T08:00:00.000Z",
  updated_at: "2026-11-24T08:00:00.000Z",
} satisfies z.output<typeof WebhookBody>;

const delivery = {
  id: DELIVERY_ID,
  event_id: "01a20c07-a195-7289-98bf-32e9a14d3e9e",
  event_type: "environment.deployed",
  status: "pending",
  attempts: 1,
  last_attempt_at: "2026-11-24T08:01:00.000Z",
  last_status_code: 502,
  last_error: "HTTP 502",
  next_attempt_at: "2026-11-24T08:01:05.000Z",
} satisfies z.output<typeof DeliveryBody>;

const WHO =
  "Owners and workspace admins of the webhook's organization only: other members (and read-only keys) get 403, anyone else 404.";

const webhookPath = () => parametersOf("path", WebhookParams, { webhook_id: WEBHOOK_ID });
const deliveryPath = () => parametersOf("path", DeliveryParams, { webhook_id: WEBHOOK_ID, delivery_id: DELIVERY_ID });

const refusals = {
  403: errorResponse("The caller's role there is not owner or workspace_admin, or the key is read-only", forbidden()),
  404: errorResponse("No such webhook, or one of an organization the caller is not a member of", webhookNotFound()),
};

/** The OpenAPI fragment of src/webhooks/webhooks.routes.ts; built with the document, on its first request. */
export const webhooksOpenApi = () => ({
  paths: {
    "/webhooks": {
      post: {
        operationId: "createWebhook",
        tags: tagged("Webhooks"),
        summary: "Subscribe an HTTPS endpoint to events",
        description:
          "The answer carries the webhook's `secret`: the only time it is shown (it is kept encrypted). `url`: https:// " +
          "only, no credentials, no IP literal of a loopback, private, link-local or metadata range (422 otherwise; " +
          'where the service allows local webhooks, http:// and loopback too). `events`: types, or ["*"]. `app_id`: only ' +
          `that app's events. \`organization_id\` defaults to the key's project's organization. ${WHO} A service set ` +
          "up without a key to encrypt secrets answers 501. No Idempotency-Key: a retry makes another webhook. An " +
          `organization has at most ${WEBHOOKS_PER_ORGANIZATION} webhooks, enabled or not: past that, 422 (delete one first).`,
        parameters: requestHeaders(),
        requestBody: jsonRequestBody(schemaRef("CreateWebhook"), {
          deploys: {
            summary: "Deploys and reverts, to the team chat",
            value: { url: chat.url, events: ["environment.deployed", "environment.reverted"], description: chat.description },
          },
          everything: { summary: "Every event of one app", value: { url: chat.url, events: ["*"], app_id: DEMO_IDS.app } },
        } satisfies RequestExamples<z.input<typeof CreateWebhookBody>>),
        responses: operationResponses(
          jsonResponse("The webhook, with its secret (shown once)", schemaRef("CreatedWebhook"), {
            example: { ...chat, secret: SECRET } satisfies z.output<typeof CreatedWebhookBody>,
          }),
          {
            403: refusals[403],
            404: errorResponse("Not a member of that organization, or `app_id` is not one of its apps", {
              organizationNotFound: organizationNotFound(),
              appNotFound: appNotFound(),
            }),
            501: errorResponse("The service cannot keep secrets: no key to encrypt them is set up", webhooksNotSetUp()),
          },
          { jsonBody: "PayloadTooLarge" },
        ),
      },
      get: {
        operationId: "listWebhooks",
        tags: tagged("Webhooks"),
        summary: "List an organization's webhooks",
        description: `Oldest first, without secrets. \`organization_id\` defaults to the key's project's organization. ${WHO}`,
        parameters: [
          ...requestHeaders(),
          ...parametersOf("query", ListWebhooksQuery, { organization_id: DEMO_IDS.organization }),
        ],
        responses: operationResponses(
          jsonResponse("The webhooks, oldest first", arrayOf(schemaRef("Webhook")), { example: [chat] }),
          {
            403: refusals[403],
            404: errorResponse("Not a member of that organization (or no such organization)", organizationNotFound()),
          },
        ),
      },
    },
    "/webhooks/{webhook_id}": {
      parameters: webhookPath(),
      get: {
        operationId: "getWebhook",
        tags: tagged("Webhooks"),
        summary: "Read a webhook",
        description: `Without its secret. ${WHO}`,
        parameters: requestHeaders(),
        responses: operationResponses(jsonResponse("The webhook", schemaRef("Webhook"), { example: chat }), refusals),
      },
      patch: {
        operationId: "updateWebhook",
        tags: tagged("Webhooks"),
        summary: "Change a webhook",
        description:
          "Changes the fields given (`app_id` and `description` may be null). `enabled: true` on a disabled webhook clears " +
          `its failure count; \`enabled: false\` ends its pending deliveries as failed. Same URL rules as creation. ${WHO}`,
        parameters: requestHeaders(),
        requestBody: jsonRequestBody(schemaRef("UpdateWebhook"), {
          enable: { summary: "Enable it again after it was disabled", value: { enabled: true } },
          everything: { summary: "Every event", value: { events: ["*"] } },
        } satisfies RequestExamples<z.input<typeof UpdateWebhookBody>>),
        responses: operationResponses(
          jsonResponse("The webhook as changed", schemaRef("Webhook"), { example: { ...chat, events: ["*"] } }),
          {
            ...refusals,
            404: errorResponse("No such webhook (or not the caller's to see), or no such app there", {
              webhookNotFound: webhookNotFound(),
              appNotFound: appNotFound(),
            }),
          },
          { jsonBody: "PayloadTooLarge" },
        ),
      },
      delete: {
        operationId: "deleteWebhook",
        tags: tagged("Webhooks"),
        summary: "Delete a webhook, its deliveries and their attempts",
        description: WHO,
        parameters: requestHeaders(),
        responses: operationResponses(jsonResponse("Deleted", { type: "null" }, { example: null }), refusals),
      },
    },
    "/webhooks/{webhook_id}/rotate-secret": {
      parameters: webhookPath(),
      post: {
        operationId: "rotateWebhookSecret",
        tags: tagged("Webhooks"),
        summary: "Rotate a webhook's secret",
        description:
          "Answers a new secret, shown once. For 24 hours the previous one keeps signing too: each request carries two " +
          "signatures (space-separated in `webhook-signature`), so that receivers can switch secrets without losing an " +
          `event. ${WHO}`,
        parameters: requestHeaders(),
        responses: operationResponses(
          jsonResponse("The new secret, shown once", schemaRef("WebhookSecret"), { example: { secret: SECRET } }),
          {
            ...refusals,
            501: errorResponse("The service cannot keep secrets: no key to encrypt them is set up", webhooksNotSetUp()),
          },
        ),
      },
    },
    "/webhooks/{webhook_id}/test": {
      parameters: webhookPath(),
      post: {
        operationId: "testWebhook",
        tags: tagged("Webhooks"),
        summary: "Send a test event to a webhook",
        description:
          "Sends a `webhook.test` event now and answers how the attempt went: signed like any delivery, but not recorded " +
          `as an event or a delivery. \`status_code\` null: no answer (see \`error\`). A URL that cannot be reached ` +
          "(refused, reset, no TLS, no name, no answer within 10 seconds) answers the same, after 10 seconds whatever " +
          `the cause. ${WHO}`,
        parameters: requestHeaders(),
        responses: operationResponses(
          jsonResponse("The attempt", schemaRef("WebhookAttempt"), {
            example: { status_code: 200, duration_ms: 84, response_excerpt: "ok", error: null } satisfies z.output<
              typeof AttemptBody
            >,
          }),
          refusals,
        ),
      },
    },
    "/webhooks/{webhook_id}/deliveries": {
      parameters: webhookPath(),
      get: {
        operationId: "listWebhookDeliveries",
        tags: tagged("Webhooks"),
        summary: "List a webhook's deliveries",
        description: `Newest first, 50 a page (\`limit\` up to 200), continued with \`cursor\`; \`status\` filters. ${WHO}`,
        parameters: [
          ...requestHeaders(),
          ...parametersOf("query", ListDeliveriesQuery, { status: "failed", cursor: DELIVERY_ID, limit: 50 }),
        ],
        responses: operationResponses(
          jsonResponse("A page of deliveries", schemaRef("DeliveryPage"), {
            example: { deliveries: [delivery], next_cursor: null } satisfies z.output<typeof DeliveryPage>,
          }),
          refusals,
        ),
      },
    },
    "/webhooks/{webhook_id}/deliveries/{delivery_id}": {
      parameters: deliveryPath(),
      get: {
        operationId: "getWebhookDelivery",
        tags: tagged("Webhooks"),
        summary: "Read a delivery and its attempts",
        description: `Each attempt: when, the status code, the duration, the first 1 KiB of the response and the error. ${WHO}`,
        parameters: [
          ...requestHeaders(),
          ...parametersOf("path", DeliveryParams, { webhook_id: WEBHOOK_ID, delivery_id: DELIVERY_ID }),
        ],
        responses: operationResponses(
          jsonResponse("The delivery", schemaRef("DeliveryWithAttempts"), {
            example: {
              ...delivery,
              attempt_log: [
                {
                  attempted_at: "2026-11-24T08:01:00.000Z",
                  status_code: 502,
                  duration_ms: 131,
                  response_excerpt: "Bad Gateway",
                  error: "HTTP 502",
                },
              ],
            } satisfies z.output<typeof DeliveryWithAttempts>,
          }),
          {
            ...refusals,
            404: errorResponse("No such webhook or delivery", {
              webhookNotFound: webhookNotFound(),
              deliveryNotFound: deliveryNotFound(),
            }),
          },
        ),
      },
    },
    "/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver": {
      parameters: deliveryPath(),
      post: {
        operationId: "redeliverWebhookDelivery",
        tags: tagged("Webhooks"),
        summary: "Send a delivery's event again",
        description:
          "Makes the delivery pending and due now: one more attempt, under the same `webhook-id`. 409 while the webhook " +
          `is disabled. ${WHO}`,
        parameters: [
          ...requestHeaders(),
          ...parametersOf("path", DeliveryParams, { webhook_id: WEBHOOK_ID, delivery_id: DELIVERY_ID }),
        ],
        responses: operationResponses(
          jsonResponse("The delivery, pending", schemaRef("Delivery"), {
            example: { ...delivery, next_attempt_at: "2026-11-24T09:00:00.000Z" },
          }),
          {
            ...refusals,
            404: errorResponse("No such webhook or delivery", {
              webhookNotFound: webhookNotFound(),
              deliveryNotFound: deliveryNotFound(),
            }),
            409: errorResponse("The webhook is disabled", webhookDisabled()),
          },
        ),
      },
    },
  },
  inputSchemas: { CreateWebhook: CreateWebhookBody, UpdateWebhook: UpdateWebhookBody },
  outputSchemas: {
    Webhook: WebhookBody,
    CreatedWebhook: CreatedWebhookBody,
    WebhookSecret: WebhookSecretBody,
    WebhookAttempt: AttemptBody,
    Delivery: DeliveryBody,
    DeliveryPage,
    DeliveryWithAttempts,
    WebhookPayload,
  },
  responses: {},
});

/** What a receiver gets (OpenAPI 3.1 `webhooks`): one POST per event and subscribed webhook, per Standard Webhooks. */
export const webhookPayloadsOpenApi = () => ({
  event: {
    post: {
      operationId: "receiveEvent",
      tags: tagged("Webhooks"),
      summary: "An event, as a subscribed endpoint receives it",
      description:
        "Headers per Standard Webhooks: `webhook-id` (the delivery's id, the same for every attempt), `webhook-timestamp` " +
        "(Unix seconds of this attempt) and `webhook-signature` (`v1,` + base64 HMAC-SHA256 of " +
        '"{webhook-id}.{webhook-timestamp}.{body}" keyed with the secret\'s decoded bytes; two, space-separated, for 24 ' +
        "hours after a rotation). Any standardwebhooks library verifies it. A 2xx within 10 s is success; otherwise it " +
        "is retried after about 5 s, 1 min, 10 min, 1 h, 6 h and 12 h (with jitter), then failed. Redirects are not followed.",
      security: [],
      parameters: ["webhook-id", "webhook-timestamp", "webhook-signature"].map((name) => ({
        name,
        in: "header",
        required: true,
        schema: { type: "string" },
      })),
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: schemaRef("WebhookPayload"),
            example: {
              type: deployedExample.type,
              timestamp: deployedExample.occurred_at,
              data: deployedExample,
            } satisfies z.output<typeof WebhookPayload>,
          },
        },
      },
      responses: { 200: { description: "Any 2xx: delivered" } },
    },
  },
});
