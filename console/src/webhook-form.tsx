import { useState } from "preact/hooks";
import type { ApiError, Schemas } from "./api";
import { EVENT_TYPES, type EventType } from "./events";
import { ActionButton, ErrorNote, type Permission } from "./ui";

/*
 * A webhook's form, to create one or edit it: its URL, the event types it takes (the API's list, by family, or every
 * type), a description. The API's refusals show beside what they are about, in its words: a 422 on `url` under the
 * URL, on `events` under the types; anything else (a 403, a limit) under the button.
 */

export interface WebhookDraft {
  url: string;
  events: Schemas["CreateWebhook"]["events"];
  description: string;
}

const FAMILIES = [...new Set(EVENT_TYPES.map((type) => type.split(".")[0]))];

/** The messages of a 422's issues about `field` of the body. */
const issuesAbout = (error: ApiError | undefined, field: string) =>
  error?.issues.filter((issue) => issue.loc[0] === "body" && issue.loc[1] === field).map((issue) => issue.msg) ?? [];

/** A field's error, in the API's words, for the field's aria-describedby. */
function FieldError({ id, messages }: { id: string; messages: string[] }) {
  if (messages.length === 0) return null;
  return (
    <span id={id} class="field-error" role="alert">
      {messages.join("; ")}
    </span>
  );
}

export function WebhookForm({
  name,
  initial,
  submit,
  permission,
  busy,
  error,
  onSubmit,
  onCancel,
}: {
  /** The form's accessible name ("New webhook", "Edit the webhook to …"), and its fields' id prefix. */
  name: string;
  initial: WebhookDraft;
  submit: string;
  permission: Permission;
  busy: boolean;
  error: ApiError | undefined;
  onSubmit: (draft: WebhookDraft) => void;
  onCancel?: () => void;
}) {
  const [draft, setDraft] = useState(initial);
  const every = draft.events.includes("*");
  const chosen = new Set(draft.events);
  const choose = (type: EventType, on: boolean) =>
    setDraft({ ...draft, events: on ? [...draft.events, type] : draft.events.filter((listed) => listed !== type) });
  const id = name.toLowerCase().replace(/[^a-z0-9]+/g, "-");
  const [urlIssues, eventIssues] = [issuesAbout(error, "url"), issuesAbout(error, "events")];
  const elsewhere = error && urlIssues.length + eventIssues.length === 0;
  return (
    <form
      class="stack webhook-form"
      aria-label={name}
      onSubmit={(event) => {
        event.preventDefault();
        onSubmit(draft);
      }}
    >
      <label>
        URL
        <input
          type="url"
          required
          value={draft.url}
          aria-invalid={urlIssues.length > 0 ? "true" : undefined}
          aria-describedby={urlIssues.length > 0 ? `${id}-url-error` : undefined}
          onInput={(event) => setDraft({ ...draft, url: event.currentTarget.value })}
        />
        <FieldError id={`${id}-url-error`} messages={urlIssues} />
      </label>
      <fieldset class="event-types" aria-describedby={eventIssues.length > 0 ? `${id}-events-error` : undefined}>
        <legend>Event types</legend>
        <label class="check">
          <input
            type="checkbox"
            checked={every}
            onChange={(event) => setDraft({ ...draft, events: event.currentTarget.checked ? ["*"] : [] })}
          />
          Every type, those added later too
        </label>
        {!every &&
          FAMILIES.map((family) => (
            <fieldset key={family}>
              <legend>{family.replace("_", " ")}</legend>
              {EVENT_TYPES.filter((type) => type.startsWith(`${family}.`)).map((type) => (
                <label class="check" key={type}>
                  <input
                    type="checkbox"
                    checked={chosen.has(type)}
                    onChange={(event) => choose(type, event.currentTarget.checked)}
                  />
                  {type}
                </label>
              ))}
            </fieldset>
          ))}
        <FieldError id={`${id}-events-error`} messages={eventIssues} />
      </fieldset>
      <label>
        Description (optional)
        <input value={draft.description} onInput={(event) => setDraft({ ...draft, description: event.currentTarget.value })} />
      </label>
      <p class="row">
        <ActionButton type="submit" permission={permission} busy={busy}>
          {busy ? "Saving…" : submit}
        </ActionButton>
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
      </p>
      {elsewhere && <ErrorNote error={error} prefix="Refused" />}
    </form>
  );
}
