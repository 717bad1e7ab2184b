import type { Schemas } from "../api";
import { answerExact, configById, configOfDeploy, DiffView } from "../diff-view";
import type { ExactObject } from "../exact-json";
import type { PageProps } from "../router";
import { deployName, versionName } from "../runs";
import { useSession } from "../session";
import { ErrorNote, Loading, useLoad } from "../ui";

/**
 * 4. Compare: two versions of a config (`?configs=<from id>,<to id>`) or two deploys of an environment
 * (`?environments=<from id>,<to id>`), side by side from the service's diff API.
 */
export const path = "/compare";

type Side = Schemas["ConfigDiff"]["from"] | Schemas["EnvironmentDiff"]["from"];

function describe(side: Side): string {
  const config = side.config_name === null ? "nothing deployed" : versionName(side.config_name, side.revision);
  return "environment" in side ? `${side.environment} ${deployName(side.environment_revision)} (${config})` : config;
}

export default function Compare({ query }: PageProps) {
  const { api } = useSession();
  const environments = query.get("environments");
  const [from = "", to = ""] = (environments ?? query.get("configs") ?? "").split(",");
  const diff = useLoad<{ data: Schemas["ConfigDiff"] | Schemas["EnvironmentDiff"]; exact: ExactObject }>(
    () =>
      environments === null
        ? answerExact<Schemas["ConfigDiff"]>(api.GET("/diff/configs", { params: { query: { from, to } }, parseAs: "text" }))
        : answerExact<Schemas["EnvironmentDiff"]>(
            api.GET("/diff/environments", { params: { query: { from, to } }, parseAs: "text" }),
          ),
    [environments, from, to],
  );
  if (diff.loading) return <Loading label="Loading the diff" />;
  if (diff.error) return <ErrorNote error={diff.error} />;
  if (!diff.data) return null;
  const { data, exact } = diff.data;
  const title = `From ${describe(data.from)} to ${describe(data.to)}`;
  return (
    <>
      <h1>Compare</h1>
      <div class="sides">
        <p>
          <strong>From</strong> {describe(data.from)}
        </p>
        <p>
          <strong>To</strong> {describe(data.to)}
        </p>
      </div>
      <DiffView
        diff={data}
        exact={exact}
        label={title}
        sides={{
          before: describe(data.from),
          after: describe(data.to),
          wholeConfigs: async () =>
            environments === null
              ? [await configById(api, from), await configById(api, to)]
              : [await configOfDeploy(api, from), await configOfDeploy(api, to)],
        }}
      />
    </>
  );
}
