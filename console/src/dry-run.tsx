import { type Api, answered, type Schemas } from "./api";
import { configById, DiffView, exactAt } from "./diff-view";
import { type ExactObject, parseExact } from "./exact-json";
import { deployName, liveEverywhereBy, versionName } from "./runs";
import type { Permission } from "./session";
import { ActionButton, ErrorNote, Loading, Time, useAction, useLoad } from "./ui";

/*
 * A deploy or a revert, shown before it is sent (docs/CONSOLE.md "Daily use" 3): the API's dry-run (`?dry_run=true`)
 * says what the environment runs now, what it would run, and the diff; the person confirms, and the real call is sent
 * with the dry-run's ETag as If-Match, so that a deploy made in between is refused (412) rather than overwritten; then
 * the preview is read again, what was typed elsewhere on the page kept.
 */

export type DryRunAnswer = { data: Schemas["DryRun"]; exact: ExactObject; etag: string | undefined };

/** What was done: the deploy it made, and when it is live everywhere when the API says. */
export interface Done {
  text: string;
  liveBy?: string;
}

export function DryRunPreview({
  api,
  kind,
  environment,
  preview,
  send,
  permission,
  onDone,
  onCancel,
}: {
  api: Api;
  kind: "deploy" | "revert";
  environment: string;
  /** The dry-run, with the environment's ETag it answers. */
  preview: () => Promise<DryRunAnswer>;
  /** The real call, with that ETag as If-Match. */
  send: (etag: string | undefined) => Promise<Response>;
  permission: Permission;
  onDone: (done: Done) => void;
  onCancel: () => void;
}) {
  const loaded = useLoad(preview, []);
  const action = useAction();
  if (loaded.loading && !loaded.data) return <Loading label={`Loading the ${kind}'s preview`} />;
  if (loaded.error) return <ErrorNote error={loaded.error} prefix="The preview was refused" />;
  if (!loaded.data) return null;
  const { data, exact, etag } = loaded.data;
  const now = versionName(data.current.config_name, data.current.revision);
  const then = versionName(data.proposed.config_name, data.proposed.revision);
  const next = deployName(data.next_environment_revision);
  const confirm = async () => {
    let response: Response | undefined;
    const sent = await action.run(async () => {
      response = await send(etag);
    });
    if (sent && response) onDone({ text: `${environment} runs ${then}, as ${next}.`, liveBy: liveEverywhereBy(response) });
    // The environment moved meanwhile: the preview read again, as it is now.
    else loaded.reload();
  };
  const verb = kind === "deploy" ? "Deploy" : "Revert";
  return (
    <section class="preview" aria-label={`Preview of the ${kind} to ${environment}`}>
      <p>
        {data.current.config_name === null
          ? `Nothing runs in ${environment} yet`
          : `${environment} runs ${now} (${deployName(data.current.environment_revision)})`}
        ; after this {kind}, {next} runs {then}.
      </p>
      <DiffView
        diff={data.diff}
        exact={exactAt(exact, "diff")}
        label={`What the ${kind} changes in ${environment}`}
        sides={{
          before: now,
          after: then,
          wholeConfigs: async () => [
            data.current.variant_revision_id ? await configById(api, data.current.variant_revision_id) : null,
            await configById(api, data.proposed.variant_revision_id),
          ],
        }}
      />
      <div class="row">
        <ActionButton permission={permission} busy={action.busy || loaded.loading} class="primary" onClick={confirm}>
          {action.busy ? `${verb}ing…` : `Confirm: ${kind} ${then} to ${environment}`}
        </ActionButton>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
      {action.error && (
        <ErrorNote
          error={action.error}
          prefix={action.error.status === 409 || action.error.status === 412 ? "Refused, the preview is read again" : "Refused"}
        />
      )}
    </section>
  );
}

/** What a deploy or revert did, and when it is live everywhere (docs/EDGE-DELIVERY.md §3) when the API says. */
export function DoneNote({ done }: { done: Done }) {
  return (
    <p class="done" role="status">
      {done.text}
      {done.liveBy && (
        <>
          {" "}
          Live everywhere by <Time at={done.liveBy} />.
        </>
      )}
    </p>
  );
}

/** A dry-run's answer, read exactly, with the environment's ETag it answers. `call` must ask for `parseAs: "text"`. */
export async function dryRunOf(call: Parameters<typeof answered<string>>[0]): Promise<DryRunAnswer> {
  const { data: text, response } = await answered<string>(call);
  return {
    data: JSON.parse(text) as Schemas["DryRun"],
    exact: parseExact(text) as ExactObject,
    etag: response.headers.get("ETag") ?? undefined,
  };
}
