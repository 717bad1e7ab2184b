import * as z from "zod/mini";
import { EventBody } from "../events/events.schemas";
import { documented, schemaName } from "../http/documentation";
import { storableText, uuid } from "../http/fields";
import { MAX_URL_LENGTH } from "./target-url";

/** Every event type (docs/EVENTS.md); a webhook takes some of them, or "*" for all. */
export const EVENT_TYPES = [
  "app.created",
  "app.renamed",
  "app.deleted",
  "app.archived",
  "app.unarchived",
  "config.added",
  "config.committed",
  "config.forked",
  "config.archived",
  "config.unarchived",
  "config.removed",
  "environment.deployed",
  "environment.reverted",
  "environment.protection_changed",
  "environment.protection_bypassed",
  "environment.split_started",
  "environment.split_changed",
  "environment.split_ended",
  "environment.split_verdict",
  "environment.split_secret_rotated",
  "member.invited",
  "member.joined",
  "member.role_changed",
  "member.removed",
  "api_key.created",
  "api_key.deleted",
  "organization.created",
  "organization.updated",
  "workspace.created",
  "workspace.updated",
  "webhook.created",
  "webhook.updated",
  "webhook.deleted",
  "webhook.secret_rotated",
  "webhook.disabled",
  "change_request.drafted",
  "change_request.opened",
  "change_request.edited",
  "change_request.reviewed",
  "change_request.approved",
  "change_request.rejected",
  "change_request.rebased",
  "change_request.cancelled",
  "change_request.scheduled",
  "change_request.unscheduled",
  "change_request.applied",
  "change_request.failed",
  "change_request.expired",
] as const;

const url = /* @__PURE__ */ z
  .string()
  .check(z.maxLength(MAX_URL_LENGTH))
  .apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description:
          "https:// only, to a host name or a public unicast address: no loopback, private, link-local, documentation or " +
          "other reserved address, nor IPv6 that reaches IPv4 through a translator or relay (NAT64, 6to4, Teredo). " +
          "A service run locally for development also takes http:// and loopback",
      },
    ),
  );
const events = /* @__PURE__ */ z
  .pipe(
    z.array(z.enum([...EVENT_TYPES, "*"])).check(z.minLength(1), z.maxLength(EVENT_TYPES.length + 1)),
    z.transform((types) => (types.includes("*") ? ["*"] : [...new Set(types)])),
  )
  .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: 'Event types, or ["*"] for every type' }));
const appId = /* @__PURE__ */ z
  .nullable(uuid)
  .apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && { description: "Only this app's events (null: every event of the organization)" },
    ),
  );
const description = /* @__PURE__ */ z.nullable(storableText("description").check(z.maxLength(2000)));

export const CreateWebhookBody = /* @__PURE__ */ z.object({
  url,
  events,
  app_id: z.optional(appId),
  description: z.optional(description),
  organization_id: z
    .optional(uuid)
    .apply(
      /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Default: the organization of the key's project" }),
    ),
});

export const UpdateWebhookBody = /* @__PURE__ */ z
  .object({
    url: z.optional(url),
    events: z.optional(events),
    app_id: z.optional(appId),
    description: z.optional(description),
    enabled: z
      .optional(z.boolean())
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "true on a disabled webhook clears its failure count" },
        ),
      ),
  })
  .apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && { description: "The fields to change; those left out keep their value" },
    ),
  );

export const ListWebhooksQuery = /* @__PURE__ */ z.object({
  organization_id: z
    .optional(uuid)
    .apply(
      /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Default: the organization of the key's project" }),
    ),
});

export const WebhookParams = /* @__PURE__ */ z.object({ webhook_id: uuid });

export const DeliveryParams = /* @__PURE__ */ z.object({ webhook_id: uuid, delivery_id: uuid });

export const ListDeliveriesQuery = /* @__PURE__ */ z.object({
  status: z.optional(z.enum(["pending", "succeeded", "failed"])),
  cursor: z
    .optional(uuid)
    .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "next_cursor of the previous page" })),
  limit: z._default(z.coerce.number().check(z.int(), z.gte(1), z.lte(200)), 50),
});

// Response bodies.

export const WebhookBody = /* @__PURE__ */ z
  .object({
    id: z.uuid(),
    organization_id: z.uuid(),
    url: z.string(),
    events: z.array(z.string()),
    app_id: z.nullable(z.uuid()),
    description: z.nullable(z.string()),
    enabled: z.boolean(),
    disabled_reason: z
      .nullable(z.string())
      .apply(
        /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Why the service disabled it; null otherwise" }),
      ),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "Webhook"));

export const CreatedWebhookBody = /* @__PURE__ */ z
  .extend(WebhookBody, {
    secret: z
      .string()
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "`whsec_` + base64 of 32 random bytes: shown this once" },
        ),
      ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "CreatedWebhook"));

export const WebhookSecretBody = /* @__PURE__ */ z
  .object({
    secret: z
      .string()
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "The new secret, shown this once; the previous one signs too for 24 hours" },
        ),
      ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "WebhookSecret"));

export const AttemptBody = /* @__PURE__ */ z
  .object({
    status_code: z
      .nullable(z.int())
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Null: no answer (see error)" })),
    duration_ms: z
      .int()
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "10000 when the URL could not be reached, whatever the cause" },
        ),
      ),
    response_excerpt: z
      .nullable(z.string())
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The first 1 KiB of the response body" })),
    error: z.nullable(z.string()).apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description:
            'Null on a 2xx; "HTTP <status>"; "could not reach the URL" (refused, no TLS, no answer in time...); "could not sign the event"',
        },
      ),
    ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "WebhookAttempt"));

export const DeliveryBody = /* @__PURE__ */ z
  .object({
    id: z
      .uuid()
      .apply(
        /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Also the `webhook-id` header of every attempt" }),
      ),
    event_id: z.uuid(),
    event_type: z.string(),
    status: z.enum(["pending", "succeeded", "failed"]),
    attempts: z.int(),
    last_attempt_at: z.nullable(z.iso.datetime()),
    last_status_code: z.nullable(z.int()),
    last_error: z.nullable(z.string()),
    next_attempt_at: z
      .nullable(z.iso.datetime())
      .apply(
        /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "When pending: when the next attempt is due" }),
      ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "Delivery"));

export const DeliveryPage = /* @__PURE__ */ z
  .object({
    deliveries: z.array(DeliveryBody),
    next_cursor: z
      .nullable(z.uuid())
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "Pass as `cursor` for the next page; null: no more" },
        ),
      ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "DeliveryPage"));

export const DeliveryWithAttempts = /* @__PURE__ */ z
  .extend(DeliveryBody, {
    attempt_log: z
      .array(z.extend(AttemptBody, { attempted_at: z.iso.datetime() }))
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Oldest first" })),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "DeliveryWithAttempts"));

/** The body a receiver gets: Standard Webhooks' envelope around the event (as GET /events shows it). */
export const WebhookPayload = /* @__PURE__ */ z
  .object({
    type: z
      .enum([...EVENT_TYPES, "webhook.test"])
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "The event's type; `webhook.test` for POST /webhooks/{webhook_id}/test" },
        ),
      ),
    timestamp: z.iso
      .datetime()
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The event's occurred_at" })),
    data: EventBody,
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "WebhookPayload"));

/** DELETE /webhooks/{webhook_id}?dry_run=true: the webhook the delete would remove; nothing was written. */
export const DeleteWebhookDryRun = /* @__PURE__ */ z
  .object({ dry_run: z.literal(true), kind: z.literal("delete"), webhook: WebhookBody })
  .apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description:
          "The answer to `?dry_run=true`: the webhook the delete would remove (its deliveries with it); nothing was written",
      },
    ),
  )
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "DeleteWebhookDryRun"));
