import { useState } from "preact/hooks";
import { answer, answered, type Schemas } from "../api";
import { type Done, DoneNote, DryRunPreview, dryRunOf } from "../dry-run";
import { ProtectedBadge } from "../environment-card";
import { Link, type PageProps } from "../router";
import { appliedRequests, appVersions, deployName, protectionOf, versionName } from "../runs";
import { usePermissions, useSession } from "../session";
import { SplitPanel, splitOf, whileSplit } from "../split-panel";
import { ActionButton, ErrorNote, Loading, Time, useLoad } from "../ui";

/**
 * 5. An environment's history: every deploy, newest first, with the config version it ran, its message, who deployed
 * it when, and the change request that applied it; a revert to an earlier deploy after its preview, or, protected,
 * proposed; its split (console/src/split-panel.tsx), while which a revert is refused.
 */
export const path = "/apps/:appId/environments/:environment";

export default function Environment({ params: { appId, environment } }: PageProps) {
  const { api } = useSession();
  const history = useLoad(async () => {
    const [record, { variants, lists, versions }, split] = await Promise.all([
      answer(
        api.GET("/apps/{app_id}/revisions/{environment_name}", {
          params: { path: { app_id: appId, environment_name: environment } },
        }),
      ),
      appVersions(api, appId),
      splitOf(api, appId, environment),
    ]);
    const [applied, protection] = await Promise.all([
      appliedRequests(api, appId, record.project_id),
      protectionOf(api, record.project_id, environment),
    ]);
    const candidates = variants.map((variant, i) => ({ variant, list: lists[i] }));
    return { ...record, versions, applied, protection, split, candidates };
  }, [appId, environment]);
  const may = usePermissions(history.data?.organization_id);
  const [previewed, setPreviewed] = useState<string>();
  const [done, setDone] = useState<Done>();

  if (history.loading && !history.data) return <Loading label="Loading the history" />;
  if (history.error) return <ErrorNote error={history.error} />;
  if (!history.data) return null;
  const { revisions, versions, applied, protection, split, candidates } = history.data;
  const current = revisions[revisions.length - 1];
  const deploy = may?.("deploy") ?? { state: "hidden" as const };
  const revert = whileSplit(split, environment, deploy);
  const runs = (entry: Schemas["RevisionEntry"]) => {
    const version = entry.deployed_app_variant_revision ? versions.get(entry.deployed_app_variant_revision) : undefined;
    return { version, name: versionName(version?.config.config_name, version?.revision) };
  };
  return (
    <>
      <nav aria-label="Breadcrumb">
        <Link to={`/apps/${appId}`}>The app</Link>
      </nav>
      <h1>History of {environment}</h1>
      <ProtectedBadge protection={protection} />
      {done && <DoneNote done={done} />}
      {current && (
        <SplitPanel
          api={api}
          appId={appId}
          environment={environment}
          split={split}
          isProtected={protection.protected}
          candidates={candidates}
          permission={deploy}
          onChanged={history.reload}
        />
      )}
      <h2>Deploys</h2>
      {split && (
        <p class="help">
          While the split runs, a deploy or revert of {environment} is refused (409 split_running): promote or abort it first.
        </p>
      )}
      {revisions.length === 0 && <p class="empty">Nothing deployed here yet: deploy a variant from the app's page.</p>}
      {revisions.length > 0 && (
        <table class="list">
          <caption class="visually-hidden">Deploys of {environment}, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Deploy</th>
              <th scope="col">Runs</th>
              <th scope="col">Message</th>
              <th scope="col">By</th>
              <th scope="col">When</th>
              <th scope="col">Change request</th>
              <th scope="col">Revert</th>
            </tr>
          </thead>
          <tbody>
            {[...revisions].reverse().map((entry) => {
              const { version, name } = runs(entry);
              const request = applied.get(`${environment}#${entry.revision}`);
              const label = `${deployName(entry.revision)} (${name})`;
              return (
                <tr key={entry.id}>
                  <th scope="row">{deployName(entry.revision)}</th>
                  <td>{version ? <Link to={`/variants/${version.variant_id}`}>{name}</Link> : name}</td>
                  <td>{version ? version.commit_message || "no message" : ""}</td>
                  <td>{entry.modified_by}</td>
                  <td>
                    <Time at={entry.created_at} />
                  </td>
                  <td>{request ? <Link to={`/change-requests/${request.id}`}>{request.title}</Link> : "none"}</td>
                  <td>
                    {entry === current ? (
                      "current"
                    ) : previewed === entry.id ? (
                      <DryRunPreview
                        api={api}
                        kind="revert"
                        environment={environment}
                        preview={() =>
                          dryRunOf(
                            api.POST("/configs/deployment/{deployment_revision_id}/revert", {
                              params: { path: { deployment_revision_id: entry.id }, query: { dry_run: "true" } },
                              parseAs: "text",
                            }),
                          )
                        }
                        send={async (etag) =>
                          (
                            await answered(
                              api.POST("/configs/deployment/{deployment_revision_id}/revert", {
                                params: {
                                  path: { deployment_revision_id: entry.id },
                                  header: etag ? { "If-Match": etag } : undefined,
                                },
                              }),
                            )
                          ).response
                        }
                        permission={revert}
                        onDone={(result) => {
                          setPreviewed(undefined);
                          setDone(result);
                          history.reload();
                        }}
                        onCancel={() => setPreviewed(undefined)}
                      />
                    ) : (
                      <>
                        <Link to={`/compare?environments=${entry.id},${current.id}`}>
                          Compare {deployName(entry.revision)} with the current one
                        </Link>{" "}
                        {(!protection.protected || split) && (
                          <ActionButton
                            permission={revert}
                            onClick={() => {
                              setDone(undefined);
                              setPreviewed(entry.id);
                            }}
                          >
                            Revert to {label}…
                          </ActionButton>
                        )}
                        {!split && deploy.state !== "hidden" && (
                          <Link
                            to={`/apps/${appId}/propose?environment=${encodeURIComponent(environment)}&revert_to_revision_id=${entry.id}`}
                          >
                            Propose a revert to {label}
                          </Link>
                        )}
                      </>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </>
  );
}
