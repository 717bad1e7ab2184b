import { useState } from "preact/hooks";
import { ApiError, answer, type Schemas } from "../api";
import { type ExactObject, type ExactValue, formatExact, parseExact } from "../exact-json";
import { Link, navigate, type PageProps } from "../router";
import { type Permission, usePermissions, useSession } from "../session";
import { ActionButton, ErrorNote, Loading, Time, useAction, useLoad } from "../ui";

/**
 * 3. A variant: its versions (the API's revisions) newest first, a page at a time, each one's params as stored
 * (numbers digit for digit); commit a new version from a JSON editor; fork a version.
 */
export const path = "/variants/:variantId";

const PAGE_SIZE = 20;

/** What this page reads of a variant. */
type VariantFields = Pick<Schemas["AppVariant"], "app_id" | "app_name" | "config_name">;

interface Revision {
  meta: Schemas["AppVariantRevision"];
  /** Its params, numbers as the service stored them. */
  params: ExactValue;
}

export default function Variant({ params: { variantId }, query }: PageProps) {
  const { api } = useSession();
  const variantPath = { params: { path: { variant_id: variantId } } };
  const loaded = useLoad(async () => {
    const [variant, text] = await Promise.all([
      answer(api.GET("/variants/{variant_id}", variantPath)),
      answer(api.GET("/variants/{variant_id}/revisions", { ...variantPath, parseAs: "text" })),
    ]);
    // The list read twice: typed for its fields, and exactly for the params.
    const metas = JSON.parse(text) as Schemas["AppVariantRevision"][];
    const exact = parseExact(text) as ExactObject[];
    const revisions: Revision[] = metas
      .map((meta, i) => ({ meta, params: (exact[i].get("config") as ExactObject).get("parameters") ?? null }))
      .reverse();
    const environments = await answer(api.GET("/apps/{app_id}/environments", { params: { path: { app_id: variant.app_id } } }));
    return { variant, revisions, orgId: environments[0]?.organization_id };
  }, [variantId]);
  const may = usePermissions(loaded.data?.orgId);
  const page = Math.max(1, Number(query.get("page")) || 1);

  if (loaded.loading && !loaded.data) return <Loading label="Loading the versions" />;
  if (loaded.error) return <ErrorNote error={loaded.error} />;
  if (!loaded.data) return null;
  const { variant, revisions } = loaded.data;
  const pages = Math.max(1, Math.ceil(revisions.length / PAGE_SIZE));
  const shown = revisions.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE);
  const editPermission = may?.("edit") ?? { state: "hidden" };
  return (
    <>
      <nav aria-label="Breadcrumb">
        <Link to={`/apps/${variant.app_id}`}>App {variant.app_name}</Link>
      </nav>
      <h1>Variant {variant.config_name}</h1>
      <CommitEditor variant={variant} latest={revisions[0]} permission={editPermission} onCommitted={loaded.reload} />
      <h2>Versions, newest first</h2>
      {revisions.length > 1 && <CompareRevisions key={revisions[0].meta.id} revisions={revisions} />}
      <Pager page={page} pages={pages} variantId={variantId} />
      <ol class="revisions" reversed start={revisions.length - (page - 1) * PAGE_SIZE}>
        {shown.map((revision) => (
          <RevisionItem key={revision.meta.id} revision={revision} variant={variant} permission={editPermission} />
        ))}
      </ol>
      <Pager page={page} pages={pages} variantId={variantId} />
    </>
  );
}

/** Any two revisions, compared on the Compare page. */
function CompareRevisions({ revisions }: { revisions: Revision[] }) {
  const [from, setFrom] = useState(revisions[1].meta.id);
  const [to, setTo] = useState(revisions[0].meta.id);
  const choose = (label: string, value: string, set: (id: string) => void) => (
    <label>
      {label}
      <select value={value} onChange={(event) => set(event.currentTarget.value)}>
        {revisions.map(({ meta }) => (
          <option key={meta.id} value={meta.id}>
            v{meta.revision}
          </option>
        ))}
      </select>
    </label>
  );
  return (
    <div class="inline-form">
      {choose("Compare", from, setFrom)}
      {choose("with", to, setTo)}
      <Link to={`/compare?configs=${from},${to}`}>Compare them</Link>
    </div>
  );
}

function Pager({ page, pages, variantId }: { page: number; pages: number; variantId: string }) {
  if (pages === 1) return null;
  const to = (target: number) => `/variants/${variantId}?page=${target}`;
  return (
    <nav class="pager" aria-label="Version pages">
      {page > 1 ? <Link to={to(page - 1)}>Newer</Link> : <span>Newer</span>}
      <span>
        Page {page} of {pages}
      </span>
      {page < pages ? <Link to={to(page + 1)}>Older</Link> : <span>Older</span>}
    </nav>
  );
}

function RevisionItem({
  revision: { meta, params },
  variant,
  permission,
}: {
  revision: Revision;
  variant: VariantFields;
  permission: Permission;
}) {
  const { api } = useSession();
  const action = useAction();
  const fork = async () => {
    let forkedName = "";
    const forked = await action.run(async () => {
      const config = await answer(
        api.POST("/variants/configs/fork", {
          body: { variant_ref: { slug: variant.config_name, version: meta.revision }, application_ref: { id: variant.app_id } },
        }),
      );
      forkedName = config.variant_ref.slug;
    });
    if (!forked) return;
    const variants = await answer(api.GET("/apps/{app_id}/variants", { params: { path: { app_id: variant.app_id } } }));
    const created = variants.find((candidate) => candidate.config_name === forkedName);
    navigate(created ? `/variants/${created.variant_id}` : `/apps/${variant.app_id}`);
  };
  return (
    <li>
      <details>
        <summary>
          <strong>v{meta.revision}</strong> · {meta.commit_message || "no message"} · {meta.modified_by} ·{" "}
          <Time at={meta.created_at} />
        </summary>
        <pre class="params">{formatExact(params)}</pre>
        <ActionButton permission={permission} busy={action.busy} onClick={fork}>
          {action.busy ? "Forking…" : `Fork v${meta.revision}`}
        </ActionButton>
        {permission.state !== "hidden" && (
          <Link to={`/apps/${variant.app_id}/propose?variant_revision_id=${meta.id}`}>Propose a deploy of v{meta.revision}</Link>
        )}
        {action.error && <ErrorNote error={action.error} />}
      </details>
    </li>
  );
}

/** The body of a commit with `raw` as its params, written as they were typed (numbers digit for digit). */
function withRawParams(body: object, raw: string): string {
  const rest = JSON.stringify({ ...body, params: undefined });
  return rest === "{}" ? `{"params":${raw}}` : `{"params":${raw},${rest.slice(1)}`;
}

/** Why `text` cannot be sent as params, or undefined when it can. */
function paramsProblem(text: string): string | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? undefined : "Params must be a JSON object";
  } catch (error) {
    return `Not valid JSON: ${(error as Error).message}`;
  }
}

function CommitEditor({
  variant,
  latest,
  permission,
  onCommitted,
}: {
  variant: VariantFields;
  latest: Revision | undefined;
  permission: Permission;
  onCommitted: () => void;
}) {
  const { api } = useSession();
  const [text, setText] = useState<string>();
  const [message, setMessage] = useState("");
  const action = useAction();
  if (permission.state === "hidden") return null;
  const shown = text ?? (latest ? formatExact(latest.params) : "{}");
  const problem = paramsProblem(shown);
  const commit = async () => {
    const body = {
      params: {}, // sent as typed, by withRawParams
      // On top of the latest revision this page shows: a commit made since is a 409, not overwritten.
      variant_ref: { slug: variant.config_name, version: latest?.meta.revision ?? null, commit_message: message || null },
      application_ref: { id: variant.app_id },
    };
    // The params as shown: typed ones survive a refusal (a version committed since, 409), the versions read again.
    const typed = shown;
    const committed = await action.run(() =>
      answer(api.POST("/variants/configs/commit", { body, bodySerializer: () => withRawParams(body, typed) })).catch(
        (error: unknown) => {
          if (error instanceof ApiError && error.status === 409) {
            setText(typed);
            onCommitted();
          }
          throw error;
        },
      ),
    );
    if (committed) {
      setText(undefined);
      setMessage("");
      onCommitted();
    }
  };
  return (
    <form
      class="commit"
      onSubmit={(event) => {
        event.preventDefault();
        if (!problem) void commit();
      }}
    >
      <h2>Commit a new version</h2>
      <label class="block">
        Params (JSON)
        <textarea
          value={shown}
          spellcheck={false}
          aria-invalid={problem ? "true" : undefined}
          aria-describedby="params-problem"
          onInput={(event) => setText(event.currentTarget.value)}
        />
      </label>
      <p id="params-problem" class={problem ? "error" : "help"} role={problem ? "alert" : undefined}>
        {problem ?? "Valid JSON: numbers are sent exactly as typed."}
      </p>
      <div class="commit-send">
        <label>
          Commit message
          <input value={message} maxLength={255} onInput={(event) => setMessage(event.currentTarget.value)} />
        </label>
        <ActionButton type="submit" permission={problem ? { state: "disabled", reason: problem } : permission} busy={action.busy}>
          {action.busy ? "Committing…" : "Commit"}
        </ActionButton>
      </div>
      {action.error && <ErrorNote error={action.error} prefix={action.error.issues.length ? "Refused" : undefined} />}
    </form>
  );
}
