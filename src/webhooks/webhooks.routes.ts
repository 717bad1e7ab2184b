import { Hono } from "hono";
import { v7 as uuidv7 } from "uuid";
import { requireApiKey } from "../auth/require-api-key";
import type { AdminRefusal } from "../db/roles";
import {
  createWebhook,
  deleteWebhook,
  getDelivery,
  getWebhook,
  listDeliveries,
  listWebhooks,
  redeliver,
  rotateWebhookSecret,
  updateWebhook,
  WEBHOOKS_PER_ORGANIZATION,
  webhookTarget,
} from "../db/webhooks";
import { readAs, writeAs } from "../http/d1-session";
import {
  type ApiError,
  appNotFound,
  deliveryNotFound,
  forbidden,
  organizationNotFound,
  validationFailed,
  webhookDisabled,
  webhookLimitReached,
  webhookNotFound,
  webhooksNotSetUp,
} from "../http/errors";
import { jsonBody, validate } from "../http/validation";
import type { AppEnv } from "../types";
import { sendEvent } from "./delivery";
import { handOff } from "./hand-off";
import { allowsLocalTargets, canSealSecrets, sealSecret } from "./secret-box";
import { newWebhookSecret } from "./signing";
import { webhookUrlProblem } from "./target-url";
import {
  CreateWebhookBody,
  DeliveryParams,
  ListDeliveriesQuery,
  ListWebhooksQuery,
  UpdateWebhookBody,
  WebhookParams,
} from "./webhooks.schemas";

/** 403 for a member who may not manage webhooks; 404 (`notFound`) for anyone else. */
function refused(outcome: AdminRefusal["outcome"], notFound: () => ApiError): never {
  throw outcome === "forbidden" ? forbidden() : notFound();
}

/** The URL rules (target-url.ts), as a 422 on the body's `url`. */
function checkUrl(env: Env, url: string | undefined) {
  const problem = url === undefined ? null : webhookUrlProblem(url, allowsLocalTargets(env));
  if (problem) throw validationFailed([{ loc: ["body", "url"], msg: problem, type: "value_error" }]);
}

/** Routes under /webhooks: an organization's subscriptions, for its owners and workspace admins. */
export const webhooksRoutes = new Hono<AppEnv>()
  .post("/", requireApiKey, ...jsonBody(), validate("json", CreateWebhookBody), async (c) => {
    const body = c.req.valid("json");
    checkUrl(c.env, body.url);
    if (!canSealSecrets(c.env)) throw webhooksNotSetUp();
    const secret = newWebhookSecret();
    const hook = {
      organizationId: body.organization_id ?? null,
      url: body.url,
      events: body.events,
      appId: body.app_id ?? null,
      description: body.description ?? null,
      secret: await sealSecret(c.env, secret),
    };
    const created = await writeAs(c, (db) => createWebhook(db, hook));
    if (created.outcome === "app_not_found") throw appNotFound();
    if (created.outcome === "webhook_limit_reached") throw webhookLimitReached(WEBHOOKS_PER_ORGANIZATION);
    if (created.outcome !== "done") refused(created.outcome, organizationNotFound);
    return c.json({ ...created.webhook, secret }, 200);
  })
  .get("/", requireApiKey, validate("query", ListWebhooksQuery), async (c) => {
    const organizationId = c.req.valid("query").organization_id ?? null;
    const found = await readAs(c, (db) => listWebhooks(db, organizationId));
    if (found.outcome !== "done") refused(found.outcome, organizationNotFound);
    return c.json(found.webhooks, 200);
  })
  .get("/:webhook_id", requireApiKey, validate("param", WebhookParams), async (c) => {
    const found = await readAs(c, (db) => getWebhook(db, c.req.valid("param").webhook_id));
    if (found.outcome !== "done") refused(found.outcome, webhookNotFound);
    return c.json(found.webhook, 200);
  })
  .patch(
    "/:webhook_id",
    requireApiKey,
    validate("param", WebhookParams),
    ...jsonBody(),
    validate("json", UpdateWebhookBody),
    async (c) => {
      const changes = c.req.valid("json");
      checkUrl(c.env, changes.url);
      const updated = await writeAs(c, (db) => updateWebhook(db, c.req.valid("param").webhook_id, changes));
      if (updated.outcome === "app_not_found") throw appNotFound();
      if (updated.outcome !== "done") refused(updated.outcome, webhookNotFound);
      return c.json(updated.webhook, 200);
    },
  )
  .delete("/:webhook_id", requireApiKey, validate("param", WebhookParams), async (c) => {
    const deleted = await writeAs(c, (db) => deleteWebhook(db, c.req.valid("param").webhook_id));
    if (deleted.outcome !== "done") refused(deleted.outcome, webhookNotFound);
    return c.json(null, 200);
  })
  .post("/:webhook_id/rotate-secret", requireApiKey, validate("param", WebhookParams), async (c) => {
    if (!canSealSecrets(c.env)) throw webhooksNotSetUp();
    const secret = newWebhookSecret();
    const sealed = await sealSecret(c.env, secret);
    const rotated = await writeAs(c, (db) => rotateWebhookSecret(db, c.req.valid("param").webhook_id, sealed));
    if (rotated.outcome !== "done") refused(rotated.outcome, webhookNotFound);
    return c.json({ secret }, 200);
  })
  .post("/:webhook_id/test", requireApiKey, validate("param", WebhookParams), async (c) => {
    const { webhook_id } = c.req.valid("param");
    const found = await readAs(c, (db) => webhookTarget(db, webhook_id));
    if (found.outcome !== "done") refused(found.outcome, webhookNotFound);
    if (!canSealSecrets(c.env)) throw webhooksNotSetUp();
    const caller = c.var.caller;
    const event = {
      id: uuidv7(),
      type: "webhook.test",
      occurred_at: new Date().toISOString(),
      organization_id: found.organizationId,
      workspace_id: null,
      project_id: null,
      actor: { user_id: caller.userId, username: found.username, api_key_prefix: caller.caller.prefix },
      data: { webhook_id, url: found.target.url },
    };
    return c.json(await sendEvent(c.env, found.target, event.id, event), 200);
  })
  .get(
    "/:webhook_id/deliveries",
    requireApiKey,
    validate("param", WebhookParams),
    validate("query", ListDeliveriesQuery),
    async (c) => {
      const { status, cursor, limit } = c.req.valid("query");
      const filter = { status: status ?? null, cursor: cursor ?? null, limit };
      const page = await readAs(c, (db) => listDeliveries(db, c.req.valid("param").webhook_id, filter));
      if (page.outcome !== "done") refused(page.outcome, webhookNotFound);
      return c.json({ deliveries: page.deliveries, next_cursor: page.more ? (page.deliveries.at(-1)?.id ?? null) : null }, 200);
    },
  )
  .get("/:webhook_id/deliveries/:delivery_id", requireApiKey, validate("param", DeliveryParams), async (c) => {
    const { webhook_id, delivery_id } = c.req.valid("param");
    const found = await readAs(c, (db) => getDelivery(db, webhook_id, delivery_id));
    if (found.outcome === "delivery_not_found") throw deliveryNotFound();
    if (found.outcome !== "done") refused(found.outcome, webhookNotFound);
    return c.json(found.delivery, 200);
  })
  .post("/:webhook_id/deliveries/:delivery_id/redeliver", requireApiKey, validate("param", DeliveryParams), async (c) => {
    const { webhook_id, delivery_id } = c.req.valid("param");
    const queued = await writeAs(c, (db) => redeliver(db, webhook_id, delivery_id));
    if (queued.outcome === "delivery_not_found") throw deliveryNotFound();
    if (queued.outcome === "disabled") throw webhookDisabled();
    if (queued.outcome !== "done") refused(queued.outcome, webhookNotFound);
    handOff(c, { deliveries: [delivery_id] });
    return c.json(queued.delivery, 200);
  });
