import { useState } from "preact/hooks";
import { answer, type Schemas } from "../api";
import { CopyableId, ShownOnce } from "../copy";
import { Link, type PageProps } from "../router";
import { type Permission, usePermissions, useSession } from "../session";
import { ActionButton, ErrorNote, Loading, Time, useAction, useLoad } from "../ui";
import { type WebhookDraft, WebhookForm } from "../webhook-form";

/**
 * 7. Webhooks: an organization's, made, edited, disabled or enabled, tested, their secret rotated (shown once) and
 * deleted here; each with its deliveries (status, attempts, last error), a delivery sent again on request. The API
 * shows them to owners and workspace admins only: anyone else reads its refusal here.
 */
export const path = "/organizations/:orgId/webhooks";

type Webhook = Schemas["Webhook"];

export default function Webhooks({ params: { orgId } }: PageProps) {
  const { api } = useSession();
  const may = usePermissions(orgId);
  const webhooks = useLoad(() => answer(api.GET("/webhooks", { params: { query: { organization_id: orgId } } })), [orgId]);
  const permission = may?.("manage") ?? { state: "hidden" };
  return (
    <>
      <nav aria-label="Breadcrumb">
        <Link to={`/organizations/${orgId}/activity`}>Activity</Link>
      </nav>
      <h1>Webhooks</h1>
      {webhooks.loading && !webhooks.data && <Loading label="Loading the webhooks" />}
      {webhooks.error && <ErrorNote error={webhooks.error} />}
      {webhooks.data?.length === 0 && <p class="empty">No webhook yet.</p>}
      {webhooks.data?.map((webhook) => (
        <WebhookCard key={webhook.id} webhook={webhook} permission={permission} onChanged={webhooks.reload} />
      ))}
      {webhooks.data && permission.state !== "hidden" && (
        <NewWebhook orgId={orgId} permission={permission} onCreated={webhooks.reload} />
      )}
    </>
  );
}

function NewWebhook({ orgId, permission, onCreated }: { orgId: string; permission: Permission; onCreated: () => void }) {
  const { api } = useSession();
  const action = useAction();
  const [created, setCreated] = useState<Schemas["CreatedWebhook"]>();
  const create = async (draft: WebhookDraft) => {
    setCreated(undefined);
    const body = { url: draft.url, events: draft.events, description: draft.description || null, organization_id: orgId };
    if (await action.run(async () => setCreated(await answer(api.POST("/webhooks", { body }))))) onCreated();
  };
  return (
    <section aria-labelledby="new-webhook">
      <h2 id="new-webhook">New webhook</h2>
      {created && <ShownOnce label={`The signing secret of the webhook to ${created.url}.`} secret={created.secret} />}
      <WebhookForm
        // A new form once one is made, empty again.
        key={created?.id ?? "new"}
        name="New webhook"
        initial={{ url: "", events: [], description: "" }}
        submit="Create the webhook"
        permission={permission}
        busy={action.busy}
        error={action.error}
        onSubmit={(draft) => void create(draft)}
      />
    </section>
  );
}

/** A test's attempt, as the API answered it: its status and time, or why there was no answer. */
function TestOutcome({ attempt }: { attempt: Schemas["WebhookAttempt"] }) {
  return (
    <p role="status" class="test-outcome">
      Test event sent:{" "}
      {attempt.status_code === null
        ? `no answer (${attempt.error ?? "unknown"})`
        : `answered ${attempt.status_code} in ${attempt.duration_ms} ms${attempt.response_excerpt ? `: ${attempt.response_excerpt}` : ""}`}
    </p>
  );
}

function WebhookCard({ webhook, permission, onChanged }: { webhook: Webhook; permission: Permission; onChanged: () => void }) {
  const { api } = useSession();
  const [open, setOpen] = useState(false);
  const [editing, setEditing] = useState(false);
  const [secret, setSecret] = useState<string>();
  const [attempt, setAttempt] = useState<Schemas["WebhookAttempt"]>();
  const action = useAction();
  const edit = useAction();
  const path = { webhook_id: webhook.id };
  const write = async (call: () => Promise<unknown>) => {
    setSecret(undefined);
    setAttempt(undefined);
    return action.run(call);
  };
  const patch = (body: Schemas["UpdateWebhook"]) => answer(api.PATCH("/webhooks/{webhook_id}", { params: { path }, body }));
  const save = async (draft: WebhookDraft) => {
    const saved = await edit.run(() => patch({ url: draft.url, events: draft.events, description: draft.description || null }));
    if (saved) {
      setEditing(false);
      onChanged();
    }
  };
  const setEnabled = async (enabled: boolean) => {
    if (await write(() => patch({ enabled }))) onChanged();
  };
  const rotate = () =>
    write(async () => setSecret((await answer(api.POST("/webhooks/{webhook_id}/rotate-secret", { params: { path } }))).secret));
  const test = () => write(async () => setAttempt(await answer(api.POST("/webhooks/{webhook_id}/test", { params: { path } }))));
  const remove = async () => {
    if (!confirm(`Delete the webhook to ${webhook.url}? It receives nothing more, and its deliveries go with it.`)) return;
    if (await write(() => answer(api.DELETE("/webhooks/{webhook_id}", { params: { path } })))) onChanged();
  };
  const id = `webhook-${webhook.id}`;
  return (
    <section class="card" aria-labelledby={id}>
      <h2 id={id}>{webhook.url}</h2>
      <dl>
        <dt>Id</dt>
        <dd>
          <CopyableId id={webhook.id} what="the webhook's id" />
        </dd>
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
      {editing ? (
        <WebhookForm
          name={`Edit the webhook to ${webhook.url}`}
          initial={{ url: webhook.url, events: webhook.events as WebhookDraft["events"], description: webhook.description ?? "" }}
          submit="Save the webhook"
          permission={permission}
          busy={edit.busy}
          error={edit.error}
          onSubmit={(draft) => void save(draft)}
          onCancel={() => {
            edit.clear();
            setEditing(false);
          }}
        />
      ) : (
        <p class="row">
          <ActionButton permission={permission} busy={action.busy} onClick={() => setEditing(true)}>
            Edit
          </ActionButton>
          <ActionButton permission={permission} busy={action.busy} onClick={() => void test()}>
            Send a test
          </ActionButton>
          <ActionButton permission={permission} busy={action.busy} onClick={() => void rotate()}>
            Rotate the secret
          </ActionButton>
          <ActionButton permission={permission} busy={action.busy} onClick={() => void setEnabled(!webhook.enabled)}>
            {webhook.enabled ? "Disable" : "Enable"}
          </ActionButton>
          <ActionButton permission={permission} busy={action.busy} class="danger" onClick={() => void remove()}>
            Delete
          </ActionButton>
        </p>
      )}
      {action.error && <ErrorNote error={action.error} prefix="Refused" />}
      {attempt && <TestOutcome attempt={attempt} />}
      {secret && (
        <ShownOnce label="The webhook's new signing secret (the previous one signs too for 24 hours)." secret={secret} />
      )}
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
