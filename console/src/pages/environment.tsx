import { useState } from "preact/hooks";
import { answer, answered, type Schemas } from "../api";
import { type Done, DoneNote, DryRunPreview, dryRunOf } from "../dry-run";
import { ProtectedBadge } from "../environment-card";
import { Link, type PageProps } from "../router";
import { appliedRequests, appVersions, deployName, protectionOf, versionName } from "../runs";
import { usePermissions, useSession } from "../session";
import { ActionButton, ErrorNote, Loading, Time, useLoad } from "../ui";

/**
 * 5. An environment's history: every deploy, newest first, with the config version it ran, its message, who deployed
 * it when, and the change request that applied it; a revert to an earlier deploy after its preview, or, protected,
 * proposed.
 */
export const path = "/apps/:appId/environments/:environment";

export default function Environment({ params: { appId, environment } }: PageProps) {
  const { api } = useSession();
  const history = useLoad(async () => {
    const [record, { versions }] = await Promise.all([
      answer(
        api.GET("/apps/{app_id}/revisions/{environment_name}", {
          params: { path: { app_id: appId, environment_name: environment } },
        }),
      ),
      appVersions(api, appId),
    ]);
    const [applied, protection] = await Promise.all([
      appliedRequests(api, appId, record.project_id),
      protectionOf(api, record.project_id, environment),
    ]);
    return { ...record, versions, applied, protection };
  }, [appId, environment]);
  const may = usePermissions(history.data?.organization_id);
  const [previewed, setPreviewed] = useState<string>();
  const [done, setDone] = useState<Done>();

  if (history.loading && !history.data) return <Loading label="Loading the history" />;
  if (history.error) return <ErrorNote error={history.error} />;
  if (!history.data) return null;
  const { revisions, versions, applied, protection } = history.data;
  const current = revisions[revisions.length - 1];
  const deploy = may?.("deploy") ?? { state: "hidden" as const };
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
                        permission={deploy}
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
                        {!protection.protected && (
                          <ActionButton
                            permission={deploy}
                            onClick={() => {
                              setDone(undefined);
                              setPreviewed(entry.id);
                            }}
                          >
                            Revert to {label}…
                          </ActionButton>
                        )}
                        {deploy.state !== "hidden" && (
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
