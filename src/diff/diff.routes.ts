import type * as z from "zod/mini";
import { diffDocuments } from "../core/diff";
import { revisionNotFound } from "../http/core-errors";
import { readAs } from "../http/d1-session";
import {
  DEMO_TEMPERATURE,
  EXAMPLE_ENVIRONMENT_REVISION_ID,
  EXAMPLE_PREVIOUS_ENVIRONMENT_REVISION_ID,
  EXAMPLE_PREVIOUS_VARIANT_REVISION_ID,
  EXAMPLE_VARIANT_REVISION_ID,
  errorResponse,
} from "../http/openapi-parts";
import { route } from "../http/route";
import { ConfigDiffOutput, DiffQuery, EnvironmentDiffOutput } from "./diff.schemas";
import { readConfigSides, readEnvironmentSides } from "./diff.sql.ts";

const SHARED =
  "Any role, read-only keys too; both revisions of one organization (else 404, as for an id the caller cannot see). " +
  "`patch` (RFC 6902) turns `from`'s document into `to`'s, built by fixed rules: objects key by key in ascending " +
  "UTF-16 order, arrays index by index (extra elements added at ascending, removed at descending indexes), any other " +
  "difference one `replace` of the whole value; numbers equal only when written alike (`1.0` is not `1`), kept digit " +
  "for digit. `changes` lists the same operations with the values before and after. Over 1,000 operations: `coarse`, " +
  "one replace of the whole document.";

const notFound = {
  404: /* @__PURE__ */ errorResponse(
    "Either revision is not one the caller can see, or the two are of two organizations",
    /* @__PURE__ */ revisionNotFound(),
  ),
};

const temperatureDiff = {
  identical: false,
  coarse: false,
  patch: [{ op: "replace" as const, path: "/params/temperature", value: DEMO_TEMPERATURE }],
  changes: [{ path: "/params/temperature", op: "replace" as const, from: 0.7, to: DEMO_TEMPERATURE }],
};

/** GET /diff/configs and /diff/environments: what changed between two revisions, as a patch (docs/CHANGE-REQUESTS.md §5). */
export const diffRoutes = [
  route(
    {
      method: "get",
      path: "/diff/configs",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "GET /diff/configs", path: "/diff/configs?from={configRevisionId}&to={configRevisionId}", trips: 1 }],
      },
      auth: "key",
      query: {
        schema: DiffQuery,
        examples: globalThis.DOCUMENTATION && { from: EXAMPLE_PREVIOUS_VARIANT_REVISION_ID, to: EXAMPLE_VARIANT_REVISION_ID },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "diffConfigs",
        tag: "Diffs",
        summary: "Diff two config revisions",
        description: `Each side is the revision's document \`{"config_name", "params", "url"}\`. ${SHARED}`,
        ok: {
          schema: ConfigDiffOutput,
          description: "The diff",
          example: {
            from: { id: EXAMPLE_PREVIOUS_VARIANT_REVISION_ID, config_name: "main", revision: 1 },
            to: { id: EXAMPLE_VARIANT_REVISION_ID, config_name: "main", revision: 2 },
            ...temperatureDiff,
          } satisfies z.output<typeof ConfigDiffOutput>,
        },
        errors: notFound,
      },
    },
    async (c) => {
      const { from, to } = c.req.valid("query");
      const sides = await readAs(c, [from], (db) => readConfigSides(db, from, to));
      if (!sides) throw revisionNotFound();
      const side = ({ row }: (typeof sides)["from"]) => ({
        id: row.revisionId,
        config_name: row.configName,
        revision: row.revision,
      });
      return c.json(
        { from: side(sides.from), to: side(sides.to), ...diffDocuments(sides.from.document, sides.to.document) },
        200,
      );
    },
  ),
  route(
    {
      method: "get",
      path: "/diff/environments",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "GET /diff/environments", path: "/diff/environments?from={firstRevisionId}&to={firstRevisionId}", trips: 1 },
          {
            name: "GET /diff/environments, an unknown revision",
            path: "/diff/environments?from={firstRevisionId}&to={unknownId}",
            status: 404,
            trips: 1,
          },
        ],
      },
      auth: "key",
      query: {
        schema: DiffQuery,
        examples: globalThis.DOCUMENTATION && {
          from: EXAMPLE_PREVIOUS_ENVIRONMENT_REVISION_ID,
          to: EXAMPLE_ENVIRONMENT_REVISION_ID,
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "diffEnvironments",
        tag: "Diffs",
        summary: "Diff two environment revisions",
        description:
          "Each side is the document of the config revision that environment revision deployed, `null` when it " +
          `deployed nothing (then the patch is one replace of the whole document). Any two environments, of any apps. ${SHARED}`,
        ok: {
          schema: EnvironmentDiffOutput,
          description: "The diff",
          example: {
            from: {
              id: EXAMPLE_PREVIOUS_ENVIRONMENT_REVISION_ID,
              config_name: "main",
              revision: 1,
              environment: "production",
              environment_revision: 2,
            },
            to: {
              id: EXAMPLE_ENVIRONMENT_REVISION_ID,
              config_name: "main",
              revision: 2,
              environment: "production",
              environment_revision: 3,
            },
            ...temperatureDiff,
          } satisfies z.output<typeof EnvironmentDiffOutput>,
        },
        errors: notFound,
      },
    },
    async (c) => {
      const { from, to } = c.req.valid("query");
      const sides = await readAs(c, [from], (db) => readEnvironmentSides(db, from, to));
      if (!sides) throw revisionNotFound();
      const side = ({ row }: (typeof sides)["from"]) => ({
        id: row.environmentRevisionId,
        config_name: row.configName,
        revision: row.revision,
        environment: row.environment,
        environment_revision: row.environmentRevision,
      });
      return c.json(
        { from: side(sides.from), to: side(sides.to), ...diffDocuments(sides.from.document, sides.to.document) },
        200,
      );
    },
  ),
];
