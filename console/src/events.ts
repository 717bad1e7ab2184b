import type { Schemas } from "./api";

/*
 * The audit log's events read as sentences ("ada deployed main · v3 to production"), from each type's data as
 * docs/EVENTS.md lists it. The record has every type the API subscribes webhooks to (the OpenAPI document's list, so
 * that a type the API adds fails the type check here until it is worded), which the webhook form offers.
 */

type AuditEvent = Schemas["EventPage"]["events"][number];
export type EventType = Exclude<Schemas["CreateWebhook"]["events"][number], "*">;
type Data = Record<string, unknown>;

const text = (value: unknown) => (typeof value === "string" || typeof value === "number" ? String(value) : "?");
/** A config and its version, as the console names them everywhere: `main · v3`. */
const version = (name: unknown, revision: unknown) => `${text(name)} · v${text(revision)}`;
const running = (side: unknown) => {
  const deployed = side as { config_name?: unknown; revision?: unknown } | null;
  return deployed ? version(deployed.config_name, deployed.revision) : "nothing";
};
const request = (data: Data) => `the change request “${text(data.title)}”`;
/** A split's weight, in basis points, as a share. */
const share = (weight: unknown) => (typeof weight === "number" ? `${weight / 100}%` : "?");
const change = (data: Data) => (data.change ?? {}) as { from?: unknown; to?: unknown };
const role = (value: unknown) => text(value).replace("_", " ");

const SENTENCES: Record<EventType, (data: Data) => string> = {
  "app.created": (d) => `created the app ${text(d.app_name)}`,
  "app.renamed": (d) => `renamed the app ${text(d.previous_app_name)} to ${text(d.app_name)}`,
  "app.deleted": (d) => `deleted the app ${text(d.app_name)}`,
  "app.archived": (d) => `archived the app ${text(d.app_name)}`,
  "app.unarchived": (d) => `unarchived the app ${text(d.app_name)}`,
  "config.added": (d) => `added the config ${version(d.config_name, d.revision)}`,
  "config.committed": (d) =>
    `committed ${version(d.config_name, d.revision)}${typeof d.message === "string" ? `: “${d.message}”` : ""}`,
  "config.forked": (d) => `forked ${version(d.source_config_name, d.source_revision)} into ${version(d.config_name, d.revision)}`,
  "config.archived": (d) => `archived the config ${text(d.config_name)}`,
  "config.unarchived": (d) => `unarchived the config ${text(d.config_name)}`,
  "config.removed": (d) => `removed the config ${text(d.config_name)}`,
  "environment.deployed": (d) => `deployed ${running(d.current)} to ${text(d.environment)}`,
  "environment.reverted": (d) => `reverted ${text(d.environment)} to ${running(d.current)}`,
  "environment.protection_changed": (d) => `changed the protection of ${text(d.environment)}`,
  "environment.protection_bypassed": (d) => `bypassed the protection of ${text(d.environment)}: “${text(d.reason)}”`,
  "environment.split_started": (d) => `started a split of ${text(d.environment)}, ${share(change(d).to)} to the candidate`,
  "environment.split_changed": (d) =>
    `changed the split of ${text(d.environment)} from ${share(change(d).from)} to ${share(change(d).to)}`,
  "environment.split_ended": (d) =>
    `ended the split of ${text(d.environment)}: ${d.outcome === "promote" ? "the candidate promoted" : "back to the base"}`,
  "environment.split_verdict": (d) => `received the verdict “${text(d.verdict)}” on the split of ${text(d.environment)}`,
  "environment.split_secret_rotated": (d) => `rotated the verdict secret of the split of ${text(d.environment)}`,
  "member.invited": (d) => `invited ${text(d.email)} as ${role(d.role)}`,
  "member.joined": (d) => `joined as ${role(d.role)} (${text(d.email)})`,
  "member.role_changed": (d) => `changed the role of ${text(d.email)} from ${role(d.previous_role)} to ${role(d.role)}`,
  "member.removed": (d) => `removed ${text(d.email)}`,
  "api_key.created": (d) => `created the API key ${text(d.prefix)}`,
  "api_key.deleted": (d) => `deleted the API key ${text(d.prefix)}`,
  "organization.created": () => "created the organization",
  "organization.updated": () => "changed the organization",
  "workspace.created": () => "created a workspace",
  "workspace.updated": () => "changed a workspace",
  "webhook.created": (d) => `created the webhook to ${text(d.url)}`,
  "webhook.updated": (d) => `changed the webhook to ${text(d.url)}`,
  "webhook.deleted": (d) => `deleted the webhook to ${text(d.url)}`,
  "webhook.secret_rotated": (d) => `rotated the secret of the webhook to ${text(d.url)}`,
  "webhook.disabled": (d) => `disabled the webhook to ${text(d.url)}: ${text(d.reason)}`,
  "change_request.drafted": (d) => `drafted ${request(d)} for ${text(d.environment)}`,
  "change_request.opened": (d) => `opened ${request(d)} for ${text(d.environment)}`,
  "change_request.edited": (d) => `edited ${request(d)}`,
  "change_request.reviewed": (d) => `reviewed ${request(d)}: ${text(d.kind)}`,
  "change_request.approved": (d) => `approved ${request(d)}`,
  "change_request.rejected": (d) => `rejected ${request(d)}`,
  "change_request.rebased": (d) => `rebased ${request(d)}`,
  "change_request.cancelled": (d) => `cancelled ${request(d)}`,
  "change_request.scheduled": (d) => `scheduled ${request(d)} for ${text(d.scheduled_at)}`,
  "change_request.unscheduled": (d) => `unscheduled ${request(d)}`,
  "change_request.applied": (d) => `applied ${request(d)} to ${text(d.environment)}`,
  "change_request.failed": (d) => `could not apply ${request(d)}: ${text(d.reason)}`,
  "change_request.expired": (d) => `let ${request(d)} expire`,
};

/** Every event type, in docs/EVENTS.md's order. */
export const EVENT_TYPES = Object.keys(SENTENCES) as EventType[];

/** Who did it: a member's name, a key's prefix, or the service (the scheduler, an expiry, an automatic disable). */
const actorOf = (event: AuditEvent) => event.actor.username ?? event.actor.api_key_prefix ?? "the service";

/** The event as a sentence; a type this console does not know yet is named as it is. */
export function sentenceOf(event: AuditEvent): string {
  const sentence = SENTENCES[event.type as EventType];
  return `${actorOf(event)} ${sentence ? sentence(event.data) : `recorded ${event.type}`}`;
}
