import { useState } from "preact/hooks";
import { answer } from "../api";
import { CopyableId } from "../copy";
import { EnvironmentCard } from "../environment-card";
import { Link, type PageProps } from "../router";
import { appliedRequests, appVersions, protectionOf } from "../runs";
import { type Permission, usePermissions, useSession } from "../session";
import { splitOf } from "../split-panel";
import { ActionButton, ErrorNote, Loading, Time, useAction, useLoad } from "../ui";

/**
 * 2. An app: its variants (latest version each) and its environments side by side, each with what it runs, deploy
 * (after its preview) or, protected, a proposal.
 */
export const path = "/apps/:appId";

export default function App({ params: { appId } }: PageProps) {
  const { api } = useSession();
  const app = { params: { path: { app_id: appId } } };
  // Every version of each variant: the latest for the table, the deployed ones for the cards.
  const variants = useLoad(() => appVersions(api, appId), [appId]);
  const environments = useLoad(async () => {
    const listed = await answer(api.GET("/apps/{app_id}/environments", app));
    const projectId = listed[0]?.project_id;
    const [cards, applied, apps] = await Promise.all([
      Promise.all(
        listed.map(async (environment) => ({
          history: await answer(
            api.GET("/apps/{app_id}/revisions/{environment_name}", {
              params: { path: { app_id: appId, environment_name: environment.name } },
            }),
          ),
          protection: await protectionOf(api, environment.project_id, environment.name),
          split: await splitOf(api, appId, environment.name),
        })),
      ),
      projectId ? appliedRequests(api, appId, projectId) : new Map(),
      answer(api.GET("/apps", { params: { query: { workspace_id: listed[0]?.workspace_id ?? undefined } } })),
    ]);
    return { cards, applied, name: apps.find((candidate) => candidate.app_id === appId)?.app_name };
  }, [appId]);
  const first = environments.data?.cards[0]?.history;
  const orgId = first?.organization_id;
  const may = usePermissions(orgId);
  const reload = () => {
    variants.reload();
    environments.reload();
  };
  const withLists = variants.data?.variants.map((variant, i) => ({ variant, list: variants.data?.lists[i] ?? [] })) ?? [];

  return (
    <>
      <nav aria-label="Breadcrumb">
        {first && orgId && <Link to={`/organizations/${orgId}/workspaces/${first.workspace_id}`}>Apps</Link>}
      </nav>
      <h1>App {environments.data?.name ?? ""}</h1>
      <p class="help">
        Id <CopyableId id={appId} what="the app's id" />
      </p>
      <h2>Environments</h2>
      {(environments.loading || variants.loading) && <Loading label="Loading the environments" />}
      {environments.error && <ErrorNote error={environments.error} />}
      <div class="environments">
        {environments.data &&
          variants.data &&
          environments.data.cards.map((card) => (
            <EnvironmentCard
              key={card.history.name}
              card={card}
              variants={withLists}
              versions={variants.data?.versions ?? new Map()}
              applied={environments.data?.applied ?? new Map()}
              permission={may?.("deploy") ?? { state: "hidden" }}
              onDeployed={reload}
            />
          ))}
      </div>
      <h2>Variants</h2>
      {variants.error && <ErrorNote error={variants.error} />}
      <AddVariant appId={appId} permission={may?.("edit") ?? { state: "hidden" }} onAdded={variants.reload} />
      {withLists.length === 0 && variants.data && <p class="empty">No variants yet: add one above, then commit its params.</p>}
      {withLists.length > 0 && (
        <table class="list">
          <caption class="visually-hidden">Variants of this app</caption>
          <thead>
            <tr>
              <th scope="col">Variant</th>
              <th scope="col">Latest version</th>
              <th scope="col">Committed by</th>
              <th scope="col">When</th>
              <th scope="col">Message</th>
            </tr>
          </thead>
          <tbody>
            {withLists.map(({ variant, list }) => {
              const latest = list[list.length - 1];
              return (
                <tr key={variant.variant_id}>
                  <th scope="row">
                    <Link to={`/variants/${variant.variant_id}`}>{variant.config_name}</Link>
                  </th>
                  <td>v{variant.revision}</td>
                  <td>{latest?.modified_by}</td>
                  <td>
                    <Time at={latest?.created_at} />
                  </td>
                  <td>{latest?.commit_message ?? ""}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </>
  );
}

function AddVariant({ appId, permission, onAdded }: { appId: string; permission: Permission; onAdded: () => void }) {
  const { api } = useSession();
  const [name, setName] = useState("");
  const action = useAction();
  if (permission.state === "hidden") return null;
  const add = async () => {
    const added = await action.run(() =>
      answer(api.POST("/variants/configs/add", { body: { variant_ref: { slug: name }, application_ref: { id: appId } } })),
    );
    if (added) {
      setName("");
      onAdded();
    }
  };
  return (
    <form
      class="inline-form"
      onSubmit={(event) => {
        event.preventDefault();
        void add();
      }}
    >
      <label>
        New variant's name
        <input value={name} required onInput={(event) => setName(event.currentTarget.value)} />
      </label>
      <ActionButton type="submit" permission={permission} busy={action.busy}>
        {action.busy ? "Adding…" : "Add variant"}
      </ActionButton>
      {action.error && <ErrorNote error={action.error} />}
    </form>
  );
}
