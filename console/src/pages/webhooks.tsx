import { useState } from "preact/hooks";
import { answer, type Schemas } from "../api";
import { Link, type PageProps } from "../router";
import { type Permission, usePermissions, useSession } from "../session";
import { ActionButton, ErrorNote, Loading, Time, useAction, useLoad } from "../ui";

/**
 * 7. Webhooks: an organization's, each with its deliveries (status, attempts, last error), a delivery sent again on
 * request. The API shows them to owners and workspace admins only: anyone else reads its refusal here.
 */
export const path = "/organizations/:orgId/webhooks";

export default function Webhooks({ params: { orgId } }: PageProps) {
  const { api } = useSession();
  const may = usePermissions(orgId);
  const webhooks = useLoad(() => answer(api.GET("/webhooks", { params: { query: { organization_id: orgId } } })), [orgId]);
  return (
    <>
      <nav aria-label="Breadcrumb">
        <Link to={`/organizations/${orgId}/activity`}>Activity</Link>
      </nav>
      <h1>Webhooks</h1>
      {webhooks.loading && <Loading label="Loading the webhooks" />}
      {webhooks.error && <ErrorNote error={webhooks.error} />}
      {webhooks.data?.length === 0 && (
        <p class="empty">No webhook yet: subscribe an endpoint with POST /webhooks (docs/events-and-webhooks.md).</p>
      )}
      {webhooks.data?.map((webhook) => (
        <WebhookCard key={webhook.id} webhook={webhook} permission={may?.("manage") ?? { state: "hidden" }} />
      ))}
    </>
  );
}

function WebhookCard({ webhook, permission }: { webhook: Schemas["Webhook"]; permission: Permission }) {
  const [open, setOpen] = useState(false);
  const id = `webhook-${webhook.id}`;
  return (
    <section class="card" aria-labelledby={id}>
      <h2 id={id}>{webhook.url}</h2>
      <dl>
        <dt>Events</dt>
        <dd>{webhook.events.join(", ")}</dd>
        <dt>State</dt>
        <dd>{webhook.enabled ? "enabled" : `disabled${webhook.disabled_reason ? `: ${webhook.disabled_reason}` : ""}`}</dd>
        {webhook.description && (
          <>
            <dt>Description</dt>
            <dd>{webhook.description}</dd>
          </>
        )}
      </dl>
      <button type="button" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? "Hide the deliveries" : "Show the deliveries"}
      </button>
      {open && <Deliveries webhookId={webhook.id} permission={permission} />}
    </section>
  );
}

function Deliveries({ webhookId, permission }: { webhookId: string; permission: Permission }) {
  const { api } = useSession();
  const webhook = { webhook_id: webhookId };
  const page = useLoad(() => answer(api.GET("/webhooks/{webhook_id}/deliveries", { params: { path: webhook } })), [webhookId]);
  const action = useAction();
  const redeliver = async (deliveryId: string) => {
    const sent = await action.run(() =>
      answer(
        api.POST("/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver", {
          params: { path: { ...webhook, delivery_id: deliveryId } },
        }),
      ),
    );
    if (sent) page.reload();
  };
  if (page.loading && !page.data) return <Loading label="Loading the deliveries" />;
  if (page.error) return <ErrorNote error={page.error} />;
  if (!page.data?.deliveries.length) return <p class="empty">Nothing delivered yet.</p>;
  return (
    <>
      <table class="list">
        <caption class="visually-hidden">Deliveries, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Event</th>
            <th scope="col">Status</th>
            <th scope="col">Attempts</th>
            <th scope="col">Last attempt</th>
            <th scope="col">Last error</th>
            <th scope="col">Next attempt</th>
            <th scope="col">Send again</th>
          </tr>
        </thead>
        <tbody>
          {page.data.deliveries.map((delivery) => (
            <tr key={delivery.id}>
              <th scope="row">{delivery.event_type}</th>
              <td>{delivery.status}</td>
              <td>{delivery.attempts}</td>
              <td>
                <Time at={delivery.last_attempt_at} />
                {delivery.last_status_code !== null && ` (${delivery.last_status_code})`}
              </td>
              <td>{delivery.last_error ?? ""}</td>
              <td>{delivery.next_attempt_at ? <Time at={delivery.next_attempt_at} /> : ""}</td>
              <td>
                <ActionButton permission={permission} busy={action.busy} onClick={() => void redeliver(delivery.id)}>
                  Redeliver<span class="visually-hidden"> {delivery.event_type}</span>
                </ActionButton>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {action.error && <ErrorNote error={action.error} prefix="Refused" />}
    </>
  );
}
