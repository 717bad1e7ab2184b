import { useState } from "preact/hooks";
import { answer, answered, type Schemas } from "../api";
import { answerExact, DiffView, exactAt } from "../diff-view";
import { Link, type PageProps } from "../router";
import { type Permission, usePermissions, useSession } from "../session";
import { ActionButton, ErrorNote, Loading, Time, useAction, useLoad } from "../ui";

/** 5. An environment's history: every deploy and revert, newest first; revert to an earlier one after a preview. */
export const path = "/apps/:appId/environments/:environment";

export default function Environment({ params: { appId, environment } }: PageProps) {
  const { api } = useSession();
  const history = useLoad(async () => {
    const { data, response } = await answered(
      api.GET("/apps/{app_id}/revisions/{environment_name}", {
        params: { path: { app_id: appId, environment_name: environment } },
      }),
    );
    // The state the page shows: a revert is sent with it as If-Match, so that one made since is refused (412).
    return { ...data, etag: response.headers.get("ETag") ?? undefined };
  }, [appId, environment]);
  const may = usePermissions(history.data?.organization_id);
  const [previewed, setPreviewed] = useState<string>();

  if (history.loading && !history.data) return <Loading label="Loading the history" />;
  if (history.error) return <ErrorNote error={history.error} />;
  if (!history.data) return null;
  const { revisions, etag } = history.data;
  const current = revisions[revisions.length - 1];
  return (
    <>
      <nav aria-label="Breadcrumb">
        <Link to={`/apps/${appId}`}>The app</Link>
      </nav>
      <h1>History of {environment}</h1>
      {revisions.length === 0 && <p class="empty">Nothing deployed here yet: deploy a variant from the app's page.</p>}
      {revisions.length > 0 && (
        <table class="list">
          <caption class="visually-hidden">Deploys and reverts of {environment}, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Revision</th>
              <th scope="col">By</th>
              <th scope="col">When</th>
              <th scope="col">Revert</th>
            </tr>
          </thead>
          <tbody>
            {[...revisions].reverse().map((entry) => (
              <tr key={entry.id}>
                <th scope="row">{entry.revision}</th>
                <td>{entry.modified_by}</td>
                <td>
                  <Time at={entry.created_at} />
                </td>
                <td>
                  {entry === current ? (
                    "current"
                  ) : previewed === entry.id ? (
                    <RevertPreview
                      target={entry}
                      etag={etag}
                      permission={may?.("deploy") ?? { state: "hidden" }}
                      onDone={() => {
                        setPreviewed(undefined);
                        history.reload();
                      }}
                    />
                  ) : (
                    <>
                      <Link to={`/compare?environments=${entry.id},${current.id}`}>Compare {entry.revision} with current</Link>{" "}
                      <ActionButton permission={may?.("deploy") ?? { state: "hidden" }} onClick={() => setPreviewed(entry.id)}>
                        Preview revert to {entry.revision}
                      </ActionButton>
                      {may && may("deploy").state !== "hidden" && (
                        <Link
                          to={`/apps/${appId}/propose?environment=${encodeURIComponent(environment)}&revert_to_revision_id=${entry.id}`}
                        >
                          Propose a revert to {entry.revision}
                        </Link>
                      )}
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function RevertPreview({
  target,
  etag,
  permission,
  onDone,
}: {
  target: Schemas["RevisionEntry"];
  etag: string | undefined;
  permission: Permission;
  onDone: () => void;
}) {
  const { api } = useSession();
  // Sent on the state this page shows: a deploy made since refuses the preview and the revert alike (412).
  const call = { params: { path: { deployment_revision_id: target.id }, header: etag ? { "If-Match": etag } : undefined } };
  const preview = useLoad(
    () =>
      answerExact<Schemas["DryRun"]>(
        api.POST("/configs/deployment/{deployment_revision_id}/revert", {
          params: { ...call.params, query: { dry_run: "true" } },
          parseAs: "text",
        }),
      ),
    [target.id],
  );
  const action = useAction();
  const revert = async () => {
    const reverted = await action.run(() => answer(api.POST("/configs/deployment/{deployment_revision_id}/revert", call)));
    if (reverted) onDone();
  };
  if (preview.loading) return <Loading label="Loading the preview" />;
  if (preview.error) return <ErrorNote error={preview.error} />;
  if (!preview.data) return null;
  const { data, exact } = preview.data;
  const now = data.current.config_name === null ? "nothing" : `${data.current.config_name} revision ${data.current.revision}`;
  const then = `${data.proposed.config_name} revision ${data.proposed.revision}`;
  return (
    <section class="preview" aria-label={`Preview of the revert to revision ${target.revision}`}>
      <p>
        Now {now}; after the revert, as revision {data.next_environment_revision}: {then}.
      </p>
      <DiffView
        diff={data.diff}
        exact={exactAt(exact, "diff")}
        label={`What the revert to revision ${target.revision} changes`}
      />
      <ActionButton permission={permission} busy={action.busy} class="primary" onClick={revert}>
        {action.busy ? "Reverting…" : `Revert to revision ${target.revision}`}
      </ActionButton>
      <button type="button" onClick={onDone}>
        Cancel
      </button>
      {action.error && <ErrorNote error={action.error} />}
    </section>
  );
}
