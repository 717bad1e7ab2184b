import { useState } from "preact/hooks";
import { answered, type Schemas } from "./api";
import { type Done, DoneNote, DryRunPreview, dryRunOf } from "./dry-run";
import { Link, navigate } from "./router";
import { type AppliedRequests, deployName, type Version, versionName } from "./runs";
import { type Permission, useSession } from "./session";
import { type Split, share, whileSplit } from "./split-panel";
import { ActionButton, Time } from "./ui";
import { useVersionPick, type VariantVersions, VersionPicker } from "./version-picker";

/*
 * An environment of an app (docs/CONSOLE.md "Daily use" 1 and 3): what it runs (`main · v3`, its message, who
 * deployed it when, as which deploy, from which change request); a protected one says so and offers "Propose…", which
 * opens the proposal prefilled, where a deploy could only be refused; any other deploy shows its dry-run first. While
 * a split runs there, it says so and its deploy is disabled, saying why.
 */

export interface CardData {
  history: Schemas["EnvironmentRevisions"];
  protection: Schemas["Protection"];
  split: Split | null;
}

/** The lock badge of a protected environment, with the approvals it requires. */
export function ProtectedBadge({ protection }: { protection: Pick<Schemas["Protection"], "protected" | "required_approvals"> }) {
  if (!protection.protected) return null;
  const approvals = protection.required_approvals;
  return (
    <span class="badge lock">
      <svg aria-hidden="true" class="lock-icon" viewBox="0 0 16 16" width="12" height="12" fill="currentColor">
        <path d="M4 7V5a4 4 0 0 1 8 0v2h1v8H3V7zm2 0h4V5a2 2 0 0 0-4 0z" />
      </svg>
      Protected · {approvals} approval{approvals === 1 ? "" : "s"} required
    </span>
  );
}

export function EnvironmentCard({
  card: { history, protection, split },
  variants,
  versions,
  applied,
  permission: role,
  onDeployed,
}: {
  card: CardData;
  variants: VariantVersions;
  versions: Map<string, Version>;
  applied: AppliedRequests;
  permission: Permission;
  onDeployed: () => void;
}) {
  const { api } = useSession();
  const pick = useVersionPick(variants);
  const { chosen, version } = pick;
  const [previewing, setPreviewing] = useState<{ slug: string; version: number }>();
  const [done, setDone] = useState<Done>();
  const name = history.name;
  const runs = history.deployed_app_variant_revision_id ? versions.get(history.deployed_app_variant_revision_id) : undefined;
  const last = history.revisions[history.revisions.length - 1];
  const request = applied.get(`${name}#${history.revision}`);
  const target = { slug: chosen?.variant.config_name ?? "", version: version?.revision ?? 0 };
  const body = (ref: typeof target) => ({
    variant_ref: { slug: ref.slug, version: ref.version },
    environment_ref: { slug: name },
    application_ref: { id: history.app_id },
  });
  const id = `deploy-${name}`;
  const permission = whileSplit(split, name, role);
  return (
    <section class="card" aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>{name}</h3>
      <ProtectedBadge protection={protection} />
      <dl>
        <dt>Runs</dt>
        <dd>
          {runs ? (
            <Link to={`/variants/${runs.variant_id}`}>{versionName(runs.config.config_name, runs.revision)}</Link>
          ) : (
            "nothing yet"
          )}
        </dd>
        {runs && (
          <>
            <dt>Message</dt>
            <dd>{runs.commit_message || "no message"}</dd>
          </>
        )}
        {split && (
          <>
            <dt>Split</dt>
            <dd>
              {share(split.weight)} to {versionName(split.candidate.config_name, split.candidate.revision)}
            </dd>
          </>
        )}
        <dt>Deployed by</dt>
        <dd>{last?.modified_by ?? "—"}</dd>
        <dt>When</dt>
        <dd>
          <Time at={last?.created_at} />
        </dd>
        <dt>Deploy</dt>
        <dd>{last ? deployName(history.revision) : "none yet"}</dd>
        <dt>Change request</dt>
        <dd>
          {request ? <Link to={`/change-requests/${request.id}`}>{request.title}</Link> : last ? "none: deployed directly" : "—"}
        </dd>
      </dl>
      <p>
        <Link to={`/apps/${history.app_id}/environments/${encodeURIComponent(name)}`}>History and revert</Link>
      </p>
      {done && <DoneNote done={done} />}
      {permission.state !== "hidden" && chosen && !previewing && (
        <form
          class="inline-form"
          aria-label={`Deploy to ${name}`}
          onSubmit={(event) => {
            event.preventDefault();
            setDone(undefined);
            if (protection.protected)
              navigate(
                `/apps/${history.app_id}/propose?environment=${encodeURIComponent(name)}&variant_revision_id=${version.id}`,
              );
            else setPreviewing(target);
          }}
        >
          <VersionPicker pick={pick} variantLabel="Variant" />
          <ActionButton type="submit" permission={permission}>
            {protection.protected ? "Propose…" : `Deploy to ${name}…`}
          </ActionButton>
        </form>
      )}
      {previewing && (
        <DryRunPreview
          api={api}
          kind="deploy"
          environment={name}
          preview={() =>
            dryRunOf(
              api.POST("/variants/configs/deploy", {
                params: { query: { dry_run: "true" } },
                body: body(previewing),
                parseAs: "text",
              }),
            )
          }
          send={async (etag) =>
            (
              await answered(
                api.POST("/variants/configs/deploy", {
                  params: { header: etag ? { "If-Match": etag } : undefined },
                  body: body(previewing),
                }),
              )
            ).response
          }
          permission={permission}
          onDone={(result) => {
            setPreviewing(undefined);
            setDone(result);
            onDeployed();
          }}
          onCancel={() => setPreviewing(undefined)}
        />
      )}
    </section>
  );
}
