import { useState } from "preact/hooks";
import { answer, type Schemas } from "../api";
import { CopyableId } from "../copy";
import { Link, type PageProps } from "../router";
import { type Permission, usePermissions, useSession } from "../session";
import { ActionButton, ErrorNote, Loading, Time, useAction, useLoad } from "../ui";

/** 2. An app: its variants (latest revision each) and its environments side by side, with deploy and revert. */
export const path = "/apps/:appId";

export default function App({ params: { appId } }: PageProps) {
  const { api } = useSession();
  const app = { params: { path: { app_id: appId } } };
  const variants = useLoad(async () => {
    const listed = await answer(api.GET("/apps/{app_id}/variants", app));
    // Each variant's latest revision, for who committed it, when, and its message.
    const latest = await Promise.all(
      listed.map((variant) =>
        answer(
          api.GET("/variants/{variant_id}/revisions/{revision_number}", {
            params: { path: { variant_id: variant.variant_id, revision_number: String(variant.revision) } },
          }),
        ),
      ),
    );
    return listed.map((variant, i) => ({ variant, latest: latest[i] }));
  }, [appId]);
  const environments = useLoad(async () => {
    const listed = await answer(api.GET("/apps/{app_id}/environments", app));
    const histories = await Promise.all(
      listed.map((environment) =>
        answer(
          api.GET("/apps/{app_id}/revisions/{environment_name}", {
            params: { path: { app_id: appId, environment_name: environment.name } },
          }),
        ),
      ),
    );
    const apps = await answer(api.GET("/apps", { params: { query: { workspace_id: listed[0]?.workspace_id ?? undefined } } }));
    return { histories, name: apps.find((candidate) => candidate.app_id === appId)?.app_name };
  }, [appId]);
  const orgId = environments.data?.histories[0]?.organization_id;
  const may = usePermissions(orgId);
  const reload = () => {
    variants.reload();
    environments.reload();
  };

  return (
    <>
      <nav aria-label="Breadcrumb">
        {environments.data && orgId && (
          <Link to={`/organizations/${orgId}/workspaces/${environments.data.histories[0].workspace_id}`}>Apps</Link>
        )}
      </nav>
      <h1>App {environments.data?.name ?? ""}</h1>
      <p class="help">
        Id <CopyableId id={appId} what="the app's id" />
      </p>
      <h2>Environments</h2>
      {environments.loading && <Loading label="Loading the environments" />}
      {environments.error && <ErrorNote error={environments.error} />}
      <div class="environments">
        {environments.data?.histories.map((history) => (
          <EnvironmentCard
            key={history.name}
            history={history}
            variants={variants.data?.map(({ variant }) => variant) ?? []}
            permission={may?.("deploy") ?? { state: "hidden" }}
            onDeployed={reload}
          />
        ))}
      </div>
      <h2>Variants</h2>
      {variants.loading && <Loading label="Loading the variants" />}
      {variants.error && <ErrorNote error={variants.error} />}
      <AddVariant appId={appId} permission={may?.("edit") ?? { state: "hidden" }} onAdded={variants.reload} />
      {variants.data?.length === 0 && <p class="empty">No variants yet: add one above, then commit its params.</p>}
      {variants.data && variants.data.length > 0 && (
        <table class="list">
          <caption class="visually-hidden">Variants of this app</caption>
          <thead>
            <tr>
              <th scope="col">Variant</th>
              <th scope="col">Latest revision</th>
              <th scope="col">Committed by</th>
              <th scope="col">When</th>
              <th scope="col">Message</th>
            </tr>
          </thead>
          <tbody>
            {variants.data.map(({ variant, latest }) => (
              <tr key={variant.variant_id}>
                <th scope="row">
                  <Link to={`/variants/${variant.variant_id}`}>{variant.config_name}</Link>
                </th>
                <td>{variant.revision}</td>
                <td>{latest.modified_by}</td>
                <td>
                  <Time at={latest.created_at} />
                </td>
                <td>{latest.commit_message ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function EnvironmentCard({
  history,
  variants,
  permission,
  onDeployed,
}: {
  history: Schemas["EnvironmentRevisions"];
  variants: Pick<Schemas["AppVariant"], "variant_id" | "config_name">[];
  permission: Permission;
  onDeployed: () => void;
}) {
  const { api } = useSession();
  const [configName, setConfigName] = useState("");
  const [version, setVersion] = useState("");
  const action = useAction();
  const last = history.revisions[history.revisions.length - 1];
  const chosen = configName || variants[0]?.config_name || "";
  const deploy = async () => {
    const deployed = await action.run(() =>
      answer(
        api.POST("/variants/configs/deploy", {
          body: {
            variant_ref: { slug: chosen, version: version ? Number(version) : null },
            environment_ref: { slug: history.name },
            application_ref: { id: history.app_id },
          },
        }),
      ),
    );
    if (deployed) onDeployed();
  };
  const id = `deploy-${history.name}`;
  return (
    <section class="card" aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>{history.name}</h3>
      <dl>
        <dt>Runs</dt>
        <dd>{history.deployed_variant_name ?? "nothing yet"}</dd>
        <dt>Revision</dt>
        <dd>{history.revision ?? 0}</dd>
        <dt>Deployed by</dt>
        <dd>{last?.modified_by ?? "—"}</dd>
        <dt>When</dt>
        <dd>
          <Time at={last?.created_at} />
        </dd>
      </dl>
      <p>
        <Link to={`/apps/${history.app_id}/environments/${encodeURIComponent(history.name)}`}>History and revert</Link>
      </p>
      {permission.state !== "hidden" && variants.length > 0 && (
        <form
          class="inline-form"
          onSubmit={(event) => {
            event.preventDefault();
            void deploy();
          }}
        >
          <label>
            Variant
            <select value={chosen} onChange={(event) => setConfigName(event.currentTarget.value)}>
              {variants.map((variant) => (
                <option key={variant.variant_id} value={variant.config_name}>
                  {variant.config_name}
                </option>
              ))}
            </select>
          </label>
          <label>
            Revision (empty: latest)
            <input
              inputMode="numeric"
              pattern="[0-9]*"
              size={6}
              value={version}
              onInput={(event) => setVersion(event.currentTarget.value)}
            />
          </label>
          <ActionButton type="submit" permission={permission} busy={action.busy}>
            {action.busy ? "Deploying…" : `Deploy to ${history.name}`}
          </ActionButton>
          {action.error && <ErrorNote error={action.error} />}
        </form>
      )}
    </section>
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
