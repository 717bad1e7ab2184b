import { useState } from "preact/hooks";
import { answer, answered, type Schemas } from "../api";
import { type ExactObject, formatExact, parseExact } from "../exact-json";
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
                      current={current}
                      etag={etag}
                      permission={may?.("deploy") ?? { state: "hidden" }}
                      onDone={() => {
                        setPreviewed(undefined);
                        history.reload();
                      }}
                    />
                  ) : (
                    <>
                      <ActionButton permission={may?.("deploy") ?? { state: "hidden" }} onClick={() => setPreviewed(entry.id)}>
                        Preview revert to {entry.revision}
                      </ActionButton>
                      <Link
                        to={`/apps/${appId}/propose?environment=${encodeURIComponent(environment)}&revert_to_revision_id=${entry.id}`}
                      >
                        Propose a revert to {entry.revision}
                      </Link>
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

/** What an environment revision deployed: its config's name and params, numbers as stored. */
async function deployedConfig(api: ReturnType<typeof useSession>["api"], entry: Schemas["RevisionEntry"]) {
  const text = await answer(
    api.GET("/configs/deployment/{deployment_revision_id}", {
      params: { path: { deployment_revision_id: entry.id } },
      parseAs: "text",
    }),
  );
  const config = parseExact(text) as ExactObject;
  return { name: String(config.get("config_name")), params: formatExact(config.get("parameters") ?? null) };
}

function RevertPreview({
  target,
  current,
  etag,
  permission,
  onDone,
}: {
  target: Schemas["RevisionEntry"];
  current: Schemas["RevisionEntry"];
  etag: string | undefined;
  permission: Permission;
  onDone: () => void;
}) {
  const { api } = useSession();
  const preview = useLoad(async () => Promise.all([deployedConfig(api, current), deployedConfig(api, target)]), [target.id]);
  const action = useAction();
  const revert = async () => {
    const reverted = await action.run(() =>
      answer(
        api.POST("/configs/deployment/{deployment_revision_id}/revert", {
          params: { path: { deployment_revision_id: target.id }, header: etag ? { "If-Match": etag } : undefined },
        }),
      ),
    );
    if (reverted) onDone();
  };
  if (preview.loading) return <Loading label="Loading the preview" />;
  if (preview.error) return <ErrorNote error={preview.error} />;
  const [now, then] = preview.data ?? [];
  return (
    <section class="preview" aria-label={`Preview of the revert to revision ${target.revision}`}>
      <div class="sides">
        <div>
          <h3>Now: {now?.name}</h3>
          <pre>{now?.params}</pre>
        </div>
        <div>
          <h3>After the revert: {then?.name}</h3>
          <pre>{then?.params}</pre>
        </div>
      </div>
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
