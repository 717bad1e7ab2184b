import * as z from "zod/mini";
import { newId } from "../db/buckets";
import type { AdminRefusal } from "../db/roles";
import { deployedExample } from "../events/examples";
import { appNotFound } from "../http/core-errors";
import { readAs, writeAs } from "../http/d1-session";
import { dryRunQueryOf } from "../http/dry-run";
import { type ApiError, forbidden, validationFailed } from "../http/errors";
import { handOff } from "../http/hand-off";
import { DEMO_APP_ID, DEMO_ORGANIZATION_ID, errorResponse, schemaRef, tagged } from "../http/openapi-parts";
import { requestBucket } from "../http/request-bucket";
import { route } from "../http/route";
import { organizationNotFound } from "../organizations/errors";
import { sendTestEvent } from "./delivery";
import { deliveryNotFound, webhookDisabled, webhookLimitReached, webhookNotFound, webhooksNotSetUp } from "./errors";
import { allowsLocalTargets, canSealSecrets, sealSecret } from "./secret-box";
import { newWebhookSecret } from "./signing";
import { webhookUrl } from "./target-url";
import {
  AttemptBody,
  CreatedWebhookBody,
  CreateWebhookBody,
  DeleteWebhookDryRun,
  DeliveryBody,
  DeliveryPage,
  DeliveryParams,
  DeliveryWithAttempts,
  ListDeliveriesQuery,
  ListWebhooksQuery,
  UpdateWebhookBody,
  WebhookBody,
  WebhookParams,
  type WebhookPayload,
  WebhookSecretBody,
} from "./webhooks.schemas";
import {
  createWebhook,
  deleteWebhook,
  getDelivery,
  getWebhook,
  listDeliveries,
  listWebhooks,
  previewWebhookDeletion,
  redeliver,
  rotateWebhookSecret,
  updateWebhook,
  WEBHOOKS_PER_ORGANIZATION,
  webhookTarget,
} from "./webhooks.sql.ts";

const WEBHOOK_ID = "01a20c90-1c2b-7d4e-9f60-7a8b9c0d1e2f";
const DELIVERY_ID = "6f1c2d3e-4a5b-4c6d-8e7f-901a2b3c4d5e";
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw1bA7b0Hd7sk=";

const chat = {
  id: WEBHOOK_ID,
  organization_id: DEMO_ORGANIZATION_ID,
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

const refusals = {
  403: /* @__PURE__ */ errorResponse(
    "The caller's role there is not owner or workspace_admin, or the key is read-only",
    /* @__PURE__ */ forbidden(),
  ),
  404: /* @__PURE__ */ errorResponse(
    "No such webhook, or one of an organization the caller is not a member of",
    /* @__PURE__ */ webhookNotFound(),
  ),
};

/** 403 for a member who may not manage webhooks; 404 (`notFound`) for anyone else. */
function refused(outcome: AdminRefusal["outcome"], notFound: () => ApiError): never {
  throw outcome === "forbidden" ? forbidden() : notFound();
}

/** The body's `url` normalized (target-url.ts), to be stored; a URL the rules refuse is a 422 on it. */
function checkedUrl<Url extends string | undefined>(env: Env, url: Url): Url {
  if (url === undefined) return url;
  const checked = webhookUrl(url, allowsLocalTargets(env));
  if ("problem" in checked) throw validationFailed([{ loc: ["body", "url"], msg: checked.problem, type: "value_error" }]);
  return checked.href as Url;
}

/** The path parameter of the /webhooks/{webhook_id} routes below, with its documented example. */
const webhookPath = { schema: WebhookParams, examples: globalThis.DOCUMENTATION && { webhook_id: WEBHOOK_ID } };

/** Routes under /webhooks: an organization's subscriptions, for its owners and workspace admins. */
export const webhooksRoutes = [
  route(
    {
      method: "post",
      path: "/webhooks",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "POST /webhooks",
            path: "/webhooks",
            key: "owner",
            body: { url: "{newInbox}", events: ["app.created"] },
            trips: 1,
          },
        ],
      },
      auth: "key",
      body: {
        schema: CreateWebhookBody,
        id: "CreateWebhook",
        examples: globalThis.DOCUMENTATION && {
          deploys: {
            summary: "Deploys and reverts, to the team chat",
            value: { url: chat.url, events: ["environment.deployed", "environment.reverted"], description: chat.description },
          },
          everything: { summary: "Every event of one app", value: { url: chat.url, events: ["*"], app_id: DEMO_APP_ID } },
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "createWebhook",
        tag: "Webhooks",
        summary: "Subscribe an HTTPS endpoint to events",
        description:
          "The answer carries the webhook's `secret`: the only time it is shown (it is kept encrypted). `url`: https:// " +
          "only, no credentials, no IP literal of a loopback, private, link-local or metadata range (422 otherwise; " +
          'where the service allows local webhooks, http:// and loopback too). `events`: types, or ["*"]. `app_id`: only ' +
          `that app's events. \`organization_id\` defaults to the key's project's organization. ${WHO} A service set ` +
          "up without a key to encrypt secrets answers 501. No Idempotency-Key: a retry makes another webhook. An " +
          `organization has at most ${WEBHOOKS_PER_ORGANIZATION} webhooks, enabled or not: past that, 422 (delete one first).`,
        ok: {
          schema: CreatedWebhookBody,
          description: "The webhook, with its secret (shown once)",
          example: { ...chat, secret: SECRET } satisfies z.output<typeof CreatedWebhookBody>,
        },
        errors: {
          403: refusals[403],
          404: errorResponse("Not a member of that organization, or `app_id` is not one of its apps", {
            organizationNotFound: organizationNotFound(),
            appNotFound: appNotFound(),
          }),
          501: errorResponse("The service cannot keep secrets: no key to encrypt them is set up", webhooksNotSetUp()),
        },
      },
    },
    async (c) => {
      const body = c.req.valid("json");
      const url = checkedUrl(c.env, body.url);
      if (!canSealSecrets(c.env)) throw webhooksNotSetUp();
      const secret = newWebhookSecret();
      const hook = {
        organizationId: body.organization_id ?? null,
        url,
        events: body.events,
        appId: body.app_id ?? null,
        description: body.description ?? null,
        secret: await sealSecret(c.env, secret),
      };
      // ORGANIZATION_SCOPE: the organization named, else the key's.
      const created = await writeAs(c, [hook.organizationId], (db) => createWebhook(db, hook));
      if (created.outcome === "app_not_found") throw appNotFound();
      if (created.outcome === "webhook_limit_reached") throw webhookLimitReached(WEBHOOKS_PER_ORGANIZATION);
      if (created.outcome !== "done") refused(created.outcome, organizationNotFound);
      return c.json({ ...created.webhook, secret }, 200);
    },
  ),
  route(
    {
      method: "get",
      path: "/webhooks",
      roundTrips: globalThis.ROUTE_FACTS && { cases: [{ name: "GET /webhooks", path: "/webhooks", key: "owner", trips: 1 }] },
      auth: "key",
      query: { schema: ListWebhooksQuery, examples: globalThis.DOCUMENTATION && { organization_id: DEMO_ORGANIZATION_ID } },
      doc: globalThis.DOCUMENTATION && {
        operationId: "listWebhooks",
        tag: "Webhooks",
        summary: "List an organization's webhooks",
        description: `Oldest first, without secrets. \`organization_id\` defaults to the key's project's organization. ${WHO}`,
        ok: { schema: z.array(WebhookBody), description: "The webhooks, oldest first", example: [chat] },
        errors: {
          403: refusals[403],
          404: errorResponse("Not a member of that organization (or no such organization)", organizationNotFound()),
        },
      },
    },
    async (c) => {
      const organizationId = c.req.valid("query").organization_id ?? null;
      const found = await readAs(c, [organizationId], (db) => listWebhooks(db, organizationId));
      if (found.outcome !== "done") refused(found.outcome, organizationNotFound);
      return c.json(found.webhooks, 200);
    },
  ),
  route(
    {
      method: "get",
      path: "/webhooks/{webhook_id}",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "GET /webhooks/{id}", path: "/webhooks/{hookId}", key: "owner", trips: 1 }],
      },
      auth: "key",
      params: webhookPath,
      doc: globalThis.DOCUMENTATION && {
        operationId: "getWebhook",
        tag: "Webhooks",
        summary: "Read a webhook",
        description: `Without its secret. ${WHO}`,
        ok: { schema: WebhookBody, description: "The webhook", example: chat },
        errors: refusals,
      },
    },
    async (c) => {
      const found = await readAs(c, [c.req.valid("param").webhook_id], (db) => getWebhook(db, c.req.valid("param").webhook_id));
      if (found.outcome !== "done") refused(found.outcome, webhookNotFound);
      return c.json(found.webhook, 200);
    },
  ),
  route(
    {
      method: "patch",
      path: "/webhooks/{webhook_id}",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "PATCH /webhooks/{id}", path: "/webhooks/{hookId}", key: "owner", body: { description: "patched" }, trips: 1 },
        ],
      },
      auth: "key",
      params: webhookPath,
      body: {
        schema: UpdateWebhookBody,
        id: "UpdateWebhook",
        examples: globalThis.DOCUMENTATION && {
          enable: { summary: "Enable it again after it was disabled", value: { enabled: true } },
          everything: { summary: "Every event", value: { events: ["*"] } },
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "updateWebhook",
        tag: "Webhooks",
        summary: "Change a webhook",
        description:
          "Changes the fields given (`app_id` and `description` may be null). `enabled: true` on a disabled webhook clears " +
          `its failure count; \`enabled: false\` ends its pending deliveries as failed. Same URL rules as creation. ${WHO}`,
        ok: { schema: WebhookBody, description: "The webhook as changed", example: { ...chat, events: ["*"] } },
        errors: {
          ...refusals,
          404: errorResponse("No such webhook (or not the caller's to see), or no such app there", {
            webhookNotFound: webhookNotFound(),
            appNotFound: appNotFound(),
          }),
        },
      },
    },
    async (c) => {
      const body = c.req.valid("json");
      const changes = { ...body, url: checkedUrl(c.env, body.url) };
      const { webhook_id } = c.req.valid("param");
      const updated = await writeAs(c, [webhook_id], (db) => updateWebhook(db, webhook_id, changes));
      if (updated.outcome === "app_not_found") throw appNotFound();
      if (updated.outcome !== "done") refused(updated.outcome, webhookNotFound);
      return c.json(updated.webhook, 200);
    },
  ),
  route(
    {
      method: "delete",
      path: "/webhooks/{webhook_id}",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "DELETE /webhooks/{id}", path: "/webhooks/{spareHookId}", key: "owner", trips: 1 }],
      },
      auth: "key",
      params: webhookPath,
      query: dryRunQueryOf("answer the webhook the delete would remove"),
      doc: globalThis.DOCUMENTATION && {
        operationId: "deleteWebhook",
        tag: "Webhooks",
        summary: "Delete a webhook, its deliveries and their attempts",
        description: WHO,
        ok: {
          schema: z.union([z.null(), DeleteWebhookDryRun]),
          description: "Deleted; with `?dry_run=true`, the webhook the delete would remove",
          examples: {
            deleted: { summary: "Deleted", value: null },
            dryRun: { summary: "?dry_run=true", value: { dry_run: true, kind: "delete", webhook: chat } },
          },
        },
        errors: refusals,
      },
    },
    async (c) => {
      const { webhook_id } = c.req.valid("param");
      if (c.req.valid("query").dry_run) {
        const preview = await writeAs(c, [webhook_id], (db) => previewWebhookDeletion(db, webhook_id));
        if (preview.outcome !== "preview") refused(preview.outcome, webhookNotFound);
        return c.json({ dry_run: true, kind: "delete", webhook: preview.webhook } as const, 200);
      }
      const deleted = await writeAs(c, [webhook_id], (db) => deleteWebhook(db, webhook_id));
      if (deleted.outcome !== "done") refused(deleted.outcome, webhookNotFound);
      return c.json(null, 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/webhooks/{webhook_id}/rotate-secret",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "POST /webhooks/{id}/rotate-secret", path: "/webhooks/{hookId}/rotate-secret", key: "owner", trips: 1 }],
      },
      auth: "key",
      params: webhookPath,
      doc: globalThis.DOCUMENTATION && {
        operationId: "rotateWebhookSecret",
        tag: "Webhooks",
        summary: "Rotate a webhook's secret",
        description:
          "Answers a new secret, shown once. For 24 hours the previous one keeps signing too: each request carries two " +
          "signatures (space-separated in `webhook-signature`), so that receivers can switch secrets without losing an " +
          `event. ${WHO}`,
        ok: { schema: WebhookSecretBody, description: "The new secret, shown once", example: { secret: SECRET } },
        errors: {
          ...refusals,
          501: errorResponse("The service cannot keep secrets: no key to encrypt them is set up", webhooksNotSetUp()),
        },
      },
    },
    async (c) => {
      if (!canSealSecrets(c.env)) throw webhooksNotSetUp();
      const secret = newWebhookSecret();
      const sealed = await sealSecret(c.env, secret);
      const { webhook_id } = c.req.valid("param");
      const rotated = await writeAs(c, [webhook_id], (db) => rotateWebhookSecret(db, webhook_id, sealed));
      if (rotated.outcome !== "done") refused(rotated.outcome, webhookNotFound);
      return c.json({ secret }, 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/webhooks/{webhook_id}/test",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "POST /webhooks/{id}/test", path: "/webhooks/{hookId}/test", key: "owner", trips: 1 }],
      },
      auth: "key",
      params: webhookPath,
      doc: globalThis.DOCUMENTATION && {
        operationId: "testWebhook",
        tag: "Webhooks",
        summary: "Send a test event to a webhook",
        description:
          "Sends a `webhook.test` event now and answers how the attempt went: signed like any delivery, but not recorded " +
          `as an event or a delivery. \`status_code\` null: no answer (see \`error\`). A URL that cannot be reached ` +
          "(refused, reset, no TLS, no name, no answer within 10 seconds) answers the same, after 10 seconds whatever " +
          `the cause. ${WHO}`,
        ok: {
          schema: AttemptBody,
          description: "The attempt",
          example: { status_code: 200, duration_ms: 84, response_excerpt: "ok", error: null } satisfies z.output<
            typeof AttemptBody
          >,
        },
        errors: refusals,
      },
    },
    async (c) => {
      const { webhook_id } = c.req.valid("param");
      const found = await readAs(c, [webhook_id], (db) => webhookTarget(db, webhook_id));
      if (found.outcome !== "done") refused(found.outcome, webhookNotFound);
      if (!canSealSecrets(c.env)) throw webhooksNotSetUp();
      const caller = c.var.caller;
      const event = {
        // Recorded nowhere, but an event id all the same: in its organization's bucket.
        id: newId(requestBucket(c, [webhook_id])),
        type: "webhook.test",
        occurred_at: new Date().toISOString(),
        organization_id: found.organizationId,
        workspace_id: null,
        project_id: null,
        actor: { user_id: caller.userId, username: found.username, api_key_prefix: caller.caller.prefix },
        data: { webhook_id, url: found.target.url },
      };
      return c.json(await sendTestEvent(c.env, found.target, event.id, event), 200);
    },
  ),
  route(
    {
      method: "get",
      path: "/webhooks/{webhook_id}/deliveries",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "GET /webhooks/{id}/deliveries", path: "/webhooks/{hookId}/deliveries", key: "owner", trips: 1 }],
      },
      auth: "key",
      params: webhookPath,
      query: {
        schema: ListDeliveriesQuery,
        examples: globalThis.DOCUMENTATION && { status: "failed", cursor: DELIVERY_ID, limit: 50 },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "listWebhookDeliveries",
        tag: "Webhooks",
        summary: "List a webhook's deliveries",
        description: `Newest first, 50 a page (\`limit\` up to 200), continued with \`cursor\`; \`status\` filters. ${WHO}`,
        ok: {
          schema: DeliveryPage,
          description: "A page of deliveries",
          example: { deliveries: [delivery], next_cursor: null } satisfies z.output<typeof DeliveryPage>,
        },
        errors: refusals,
      },
    },
    async (c) => {
      const { status, cursor, limit } = c.req.valid("query");
      const filter = { status: status ?? null, cursor: cursor ?? null, limit };
      const page = await readAs(c, [c.req.valid("param").webhook_id], (db) =>
        listDeliveries(db, c.req.valid("param").webhook_id, filter),
      );
      if (page.outcome !== "done") refused(page.outcome, webhookNotFound);
      return c.json({ deliveries: page.deliveries, next_cursor: page.more ? (page.deliveries.at(-1)?.id ?? null) : null }, 200);
    },
  ),
  route(
    {
      method: "get",
      path: "/webhooks/{webhook_id}/deliveries/{delivery_id}",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "GET /webhooks/{id}/deliveries/{id}",
            path: "/webhooks/{hookId}/deliveries/{deliveryId}",
            key: "owner",
            trips: 1,
          },
        ],
      },
      auth: "key",
      params: {
        schema: DeliveryParams,
        examples: globalThis.DOCUMENTATION && { webhook_id: WEBHOOK_ID, delivery_id: DELIVERY_ID },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "getWebhookDelivery",
        tag: "Webhooks",
        summary: "Read a delivery and its attempts",
        description: `Each attempt: when, the status code, the duration, the first 1 KiB of the response and the error. ${WHO}`,
        ok: {
          schema: DeliveryWithAttempts,
          description: "The delivery",
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
        },
        errors: {
          ...refusals,
          404: errorResponse("No such webhook or delivery", {
            webhookNotFound: webhookNotFound(),
            deliveryNotFound: deliveryNotFound(),
          }),
        },
      },
    },
    async (c) => {
      const { webhook_id, delivery_id } = c.req.valid("param");
      const found = await readAs(c, [webhook_id], (db) => getDelivery(db, webhook_id, delivery_id));
      if (found.outcome === "delivery_not_found") throw deliveryNotFound();
      if (found.outcome !== "done") refused(found.outcome, webhookNotFound);
      return c.json(found.delivery, 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "POST /webhooks/{id}/deliveries/{id}/redeliver",
            path: "/webhooks/{hookId}/deliveries/{deliveryId}/redeliver",
            key: "owner",
            trips: 1,
          },
        ],
      },
      auth: "key",
      params: {
        schema: DeliveryParams,
        examples: globalThis.DOCUMENTATION && { webhook_id: WEBHOOK_ID, delivery_id: DELIVERY_ID },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "redeliverWebhookDelivery",
        tag: "Webhooks",
        summary: "Send a delivery's event again",
        description:
          "Makes the delivery pending and due now: one more attempt, under the same `webhook-id`. 409 while the webhook " +
          `is disabled. ${WHO}`,
        ok: {
          schema: DeliveryBody,
          description: "The delivery, pending",
          example: { ...delivery, next_attempt_at: "2026-11-24T09:00:00.000Z" },
        },
        errors: {
          ...refusals,
          404: errorResponse("No such webhook or delivery", {
            webhookNotFound: webhookNotFound(),
            deliveryNotFound: deliveryNotFound(),
          }),
          409: errorResponse("The webhook is disabled", webhookDisabled()),
        },
      },
    },
    async (c) => {
      const { webhook_id, delivery_id } = c.req.valid("param");
      const queued = await writeAs(c, [webhook_id], (db) => redeliver(db, webhook_id, delivery_id));
      if (queued.outcome === "delivery_not_found") throw deliveryNotFound();
      if (queued.outcome === "disabled") throw webhookDisabled();
      if (queued.outcome !== "done") refused(queued.outcome, webhookNotFound);
      handOff(c, { deliveries: [delivery_id] });
      return c.json(queued.delivery, 200);
    },
  ),
];

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
              type: "environment.deployed",
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
