import * as z from "zod/mini";
import { commitConfig, configRefOrder } from "../core/configs.sql.ts";
import { isUniqueViolation } from "../db/d1";
import { variantRemoved } from "../http/core-errors";
import { readAs, writeAs } from "../http/d1-session";
import { forbidden, idempotencyKeyInFlight, slugTaken } from "../http/errors";
import { settleClaim } from "../http/idempotency";
import {
  DEMO_APP_ID,
  DEMO_CONFIG_PARAMS,
  EXAMPLE_VARIANT_ID,
  EXAMPLE_VARIANT_REVISION_ID,
  environmentProtectedExample,
  errorResponse,
  headerRef,
  IDEMPOTENCY_KEY_ERRORS,
  jsonResponse,
  PROTECTED,
  responseRef,
  schemaRef,
  withKeyErrors,
} from "../http/openapi-parts";
import { route } from "../http/route";
import { answerSplit, targetingKey } from "../http/targeting-key";
import { MAX_CONFIG_BODY_BYTES } from "../http/validation";
import { deploy, dryRun, dryRunQuery } from "../variants/deploy";
import { DryRunOutput } from "../variants/deployments.schemas";
import {
  applicationRevisionNotFound,
  applicationVariantNotFound,
  deployRefsMissing,
  environmentRevisionNotFound,
  environmentRunsNothing,
} from "./errors";
import { demoRevision } from "./examples";
import {
  CommitRevisionBody,
  CommitRevisionShape,
  committedParameters,
  DeployRevisionBody,
  LogRevisionsBody,
  LogRevisionsShape,
  RetrieveRevisionBody,
  RetrieveRevisionShape,
  RevisionAnswer,
  RevisionsAnswer,
  toRevision,
} from "./revisions.schemas";
import { logRevisions, retrieveRevision } from "./revisions.sql.ts";

const demoApp = { slug: "demo-app" };

const ONE_ROUND_TRIP = "One round trip to the database, the key checked inside it.";

/** Routes under /applications/revisions: today's SDK reads, commits, lists and deploys configs through them. */
export const revisionsRoutes = [
  route(
    {
      method: "post",
      path: "/applications/revisions/retrieve",
      cached: true,
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "retrieve by environment",
            path: "/applications/revisions/retrieve",
            body: { resolve: true, environment_ref: { slug: "production", version: "2" }, key: "counted.revision" },
            trips: 1,
          },
          {
            name: "retrieve by environment, running nothing",
            path: "/applications/revisions/retrieve",
            body: { environment_ref: { slug: "production", version: "99" }, key: "counted.revision" },
            status: 404,
            trips: 1,
          },
          {
            name: "retrieve by variant",
            path: "/applications/revisions/retrieve",
            body: { application_ref: { slug: "counted" }, application_variant_ref: { slug: "main" } },
            trips: 1,
          },
          {
            name: "retrieve by an app ref alone (the app found or not in the same batch)",
            path: "/applications/revisions/retrieve",
            body: { resolve: true, application_ref: { slug: "counted" }, application_variant_ref: null },
            trips: 1,
          },
          {
            name: "retrieve by an app ref alone naming no app",
            path: "/applications/revisions/retrieve",
            body: { resolve: true, application_ref: { slug: "no-such-app" } },
            status: 404,
            trips: 1,
          },
        ],
      },
      auth: "key",
      body: {
        schema: RetrieveRevisionBody,
        id: "RetrieveRevision",
        component: RetrieveRevisionShape,
        examples: globalThis.DOCUMENTATION && {
          byEnvironment: {
            summary: "What an environment runs for an app (ConfigManager.get_from_registry)",
            value: { resolve: true, environment_ref: { slug: "production" }, key: "demo-app.revision" },
          },
          byEnvironmentVersion: {
            summary: "What an app's environment ran at its revision 1",
            value: { resolve: true, environment_ref: { slug: "production", version: "1" }, key: "demo-app.revision" },
          },
          byVariant: {
            summary: "A variant's revision 1",
            value: {
              resolve: true,
              application_ref: demoApp,
              application_variant_ref: { slug: "main" },
              application_revision_ref: { version: "1" },
            },
          },
          byRevision: {
            summary: "A revision by its id",
            value: { application_revision_ref: { id: EXAMPLE_VARIANT_REVISION_ID } },
          },
        },
      },
      idempotencyKey: "validates",
      doc: globalThis.DOCUMENTATION && {
        operationId: "retrieveApplicationRevision",
        tag: "Application revisions",
        summary: "Read a config revision: of a variant, by id, or what an environment runs",
        description:
          "By variant: `application_ref` and `application_variant_ref` (an app ref alone: its oldest variant), at " +
          "`application_revision_ref.version` (none: the latest); or `application_revision_ref.id`. By environment: " +
          "`environment_ref` and `key` (`<app name>.revision`): what that app's environment runs, or ran at its revision " +
          '`environment_ref.version` (the numbers of GET /apps/{app_id}/revisions/{environment_name}). Nothing found: 200 `{"count": 0}`, ' +
          "but a 404 by environment, or by an app ref alone naming no app (where the SDK would go on with an empty config); " +
          "an app ref alone naming an app whose oldest variant has no revision (or that has no variant) answers " +
          '`{"count": 0}`, as the platform does. ' +
          ONE_ROUND_TRIP,
        ok: {
          schema: RevisionAnswer,
          description: 'The revision, or `{"count": 0}`',
          examples: {
            found: { summary: "Found", value: { count: 1, application_revision: demoRevision } },
            none: { summary: "Nothing matches, or nothing the caller can see", value: { count: 0 } },
          },
        },
        errors: {
          404: errorResponse(
            "By environment: no such app, environment or environment revision visible to the caller, or it runs nothing " +
              "(revision 0). By an app ref alone: no such app visible to the caller",
            { runsNothing: environmentRunsNothing(), appRevisionNotFound: applicationRevisionNotFound() },
          ),
        },
      },
    },
    async (c) => {
      const lookup = c.req.valid("json");
      const key = targetingKey(c);
      const config = await readAs(c, configRefOrder(lookup.refs), (db) => retrieveRevision(db, lookup, key));
      if (typeof config === "object") answerSplit(c, config);
      if (typeof config === "object") return c.json({ count: 1, application_revision: toRevision(config) }, 200);
      // Where the SDK would go on with an empty config for what does not exist, a 404 it raises: by environment as the
      // platform answers; an app ref alone naming no app, where the platform answers {count: 0}. An app that exists
      // with nothing committed answers {count: 0}, as the platform does: the SDK's empty config (docs/CURRENT-SDK-API.md).
      if (lookup.by === "environment") throw environmentRunsNothing();
      if (config === "no_app") throw applicationRevisionNotFound();
      return c.json({ count: 0 }, 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/applications/revisions/commit",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "commit with an Idempotency-Key",
            path: "/applications/revisions/commit",
            body: {
              application_revision: { application_variant_id: "{variantId}", data: { parameters: { t: 1 } }, message: "m" },
            },
            headers: { "Idempotency-Key": "round-trips-current-commit" },
            trips: 1,
          },
          {
            name: "commit to a variant the key cannot see",
            path: "/applications/revisions/commit",
            key: "viewer",
            body: { application_revision: { application_variant_id: "{variantId}", data: { parameters: {} } } },
            status: 404,
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      body: {
        schema: CommitRevisionBody,
        id: "CommitRevision",
        component: CommitRevisionShape,
        maxBytes: MAX_CONFIG_BODY_BYTES,
        examples: globalThis.DOCUMENTATION && {
          commit: {
            summary: "New params for a variant (VariantManager.commit)",
            value: {
              application_revision: {
                application_id: DEMO_APP_ID,
                application_variant_id: EXAMPLE_VARIANT_ID,
                slug: "3f9a0c12d4e5",
                data: { parameters: { ...DEMO_CONFIG_PARAMS, temperature: 0.7 } },
                message: "Warmer",
              },
            },
          },
        },
      },
      idempotencyKey: "replays",
      doc: globalThis.DOCUMENTATION && {
        operationId: "commitApplicationRevision",
        tag: "Application revisions",
        summary: "Commit the next revision of a variant",
        description:
          "The variant's next revision, the same number in the legacy API (a variant's first is revision 1, holding " +
          "exactly what was sent). `data.parameters` replace the latest's (no merge); `data.url` too when given. Keys " +
          "of `data` other than `parameters` and `url` are refused (422), `uri` too (no service URI is stored here). " +
          "`message` is stored and shown by both APIs' revision reads; its event is recorded with it.",
        ok: {
          schema: RevisionAnswer,
          description: "The new revision",
          example: { count: 1, application_revision: { ...demoRevision, version: "3", message: "Warmer" } },
        },
        errors: {
          404: errorResponse("No such variant (of that app) visible to the caller", applicationVariantNotFound()),
          409: jsonResponse(
            `A revision of the project already has this slug. Or: ${IDEMPOTENCY_KEY_ERRORS[409].description}`,
            { oneOf: [schemaRef("Error"), schemaRef("SlugConflict")] },
            {
              examples: {
                slugTaken: { summary: "The slug is taken", value: { detail: slugTaken("3f9a0c12d4e5").detail } },
                idempotencyKeyInFlight: {
                  summary: String(idempotencyKeyInFlight().detail),
                  value: { detail: idempotencyKeyInFlight().detail },
                },
              },
            },
          ),
        },
      },
    },
    async (c) => {
      const { application_revision: revision } = c.req.valid("json");
      const refs = {
        application: revision.application_id ? { id: revision.application_id, slug: null, version: null } : null,
        variant: null,
        variantId: revision.application_variant_id,
      };
      const change = {
        params: committedParameters(await c.req.text()),
        url: revision.data.url ?? null,
        message: revision.message ?? null,
        slug: revision.slug ?? null,
      };
      const write = await writeAs(c, configRefOrder(refs), (db) => commitConfig(db, refs, change, c.var.claim)).catch(
        (error: unknown) => {
          // The slug is the only UNIQUE a revision's insert can break with a value the client chose.
          if (revision.slug && isUniqueViolation(error, "app_variant_revisions") && String(error).includes(".slug")) {
            throw slugTaken(revision.slug);
          }
          throw error;
        },
      );
      settleClaim(c, write);
      if (write.outcome === "done") return c.json({ count: 1, application_revision: toRevision(write.config) }, 200);
      if (write.outcome === "forbidden") throw forbidden();
      throw applicationVariantNotFound();
    },
  ),
  route(
    {
      method: "post",
      path: "/applications/revisions/log",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "log, a page",
            path: "/applications/revisions/log",
            body: { application_revisions: { application_variant_id: "{variantId}" }, windowing: { limit: 2 } },
            trips: 1,
          },
        ],
      },
      auth: "key",
      body: {
        schema: LogRevisionsBody,
        id: "LogRevisions",
        component: LogRevisionsShape,
        examples: globalThis.DOCUMENTATION && {
          all: {
            summary: "Every revision of a variant (VariantManager.history)",
            value: { application_revisions: { application_id: DEMO_APP_ID, application_variant_id: EXAMPLE_VARIANT_ID } },
          },
          page: {
            summary: "The two latest, then the next page with the cursor answered",
            value: { application_revisions: { application_variant_id: EXAMPLE_VARIANT_ID }, windowing: { limit: 2 } },
          },
        },
      },
      idempotencyKey: "validates",
      doc: globalThis.DOCUMENTATION && {
        operationId: "logApplicationRevisions",
        tag: "Application revisions",
        summary: "A variant's revisions, newest first",
        description:
          "With `windowing.limit`, a page: `windowing.next` in the answer, when more follow, is the cursor to send " +
          'for the next. A variant the caller cannot see: `{"count": 0, "application_revisions": []}`. ' +
          ONE_ROUND_TRIP,
        ok: {
          schema: RevisionsAnswer,
          description: "The revisions",
          example: { count: 1, application_revisions: [demoRevision] },
        },
      },
    },
    async (c) => {
      const { application_revisions: variant, windowing } = c.req.valid("json");
      const window = { limit: windowing?.limit ?? null, next: windowing?.next ?? null };
      const page = await readAs(c, [variant.application_id, variant.application_variant_id], (db) =>
        logRevisions(db, { appId: variant.application_id ?? null, variantId: variant.application_variant_id }, window),
      );
      const revisions = page.revisions.map(toRevision);
      return c.json(
        {
          count: revisions.length,
          application_revisions: revisions,
          ...(page.next && window.limit !== null && { windowing: { limit: window.limit, next: page.next } }),
        },
        200,
      );
    },
  ),
  route(
    {
      method: "post",
      path: "/applications/revisions/deploy",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "deploy with If-Match: *",
            path: "/applications/revisions/deploy",
            body: {
              application_ref: { id: "{appId}" },
              application_variant_ref: { slug: "main" },
              environment_ref: { slug: "staging" },
            },
            headers: { "If-Match": "*" },
            trips: 1,
          },
          {
            name: "deploy?dry_run=true",
            path: "/applications/revisions/deploy?dry_run=true",
            body: {
              application_ref: { id: "{appId}" },
              application_variant_ref: { slug: "main" },
              environment_ref: { slug: "staging" },
            },
            trips: 1,
          },
          {
            name: "deploy to no environment",
            path: "/applications/revisions/deploy",
            body: { application_ref: { id: "{appId}" }, environment_ref: { slug: "qa" } },
            status: 404,
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      body: {
        schema: DeployRevisionBody,
        id: "DeployRevision",
        examples: globalThis.DOCUMENTATION && {
          latest: {
            summary: "A variant's revision 2 to staging (DeploymentManager.deploy)",
            value: {
              application_ref: demoApp,
              application_variant_ref: { slug: "main" },
              application_revision_ref: { version: "2" },
              environment_ref: { slug: "staging" },
            },
          },
        },
      },
      idempotencyKey: "replays",
      ifMatch: true,
      protectionBypass: true,
      query: dryRunQuery,
      doc: globalThis.DOCUMENTATION && {
        operationId: "deployApplicationRevision",
        tag: "Application revisions",
        summary: "Deploy a variant revision to an app's environment",
        description:
          "The revision `application_revision_ref` names (its `version` or `id`; none: the latest) of the variant " +
          "`application_variant_ref` names (none: the app's oldest), to the app's environment `environment_ref.slug`: " +
          "its next revision, the same write as POST /variants/configs/deploy, in GET /apps/{app_id}/revisions/{environment_name} " +
          "at once. With If-Match, only if the environment is still in that state (else 412); answers its new ETag.",
        ok: {
          schema: z.union([RevisionAnswer, DryRunOutput]),
          description: "The revision deployed",
          example: { count: 1, application_revision: demoRevision },
          headers: { ETag: headerRef("ETag") },
        },
        errors: {
          400: withKeyErrors(400, "application_ref or environment_ref (with a slug) is missing", {
            refsMissing: deployRefsMissing(),
          }),
          404: errorResponse("No such revision visible to the caller, or the app has no such environment", {
            revisionNotFound: applicationRevisionNotFound(),
            environmentNotFound: environmentRevisionNotFound(),
          }),
          409: withKeyErrors(409, `The revision's variant was removed (legacy DELETE /variants/{variant_id}). Or: ${PROTECTED}`, {
            variantRemoved: variantRemoved(),
            environmentProtected: environmentProtectedExample(),
          }),
          412: responseRef("EnvironmentMovedOn"),
        },
      },
    },
    async (c) => {
      const {
        application_ref,
        application_variant_ref: variant,
        application_revision_ref,
        environment_ref,
      } = c.req.valid("json");
      if (!application_ref || !environment_ref?.slug) throw deployRefsMissing();
      const target = {
        application: { id: application_ref.id, slug: application_ref.slug, version: null },
        variant: {
          slug: variant?.slug ?? null,
          version: application_revision_ref?.version ?? null,
          id: application_revision_ref?.id ?? null,
        },
        variantId: variant?.id ?? null,
        environment: { slug: environment_ref.slug, version: null, id: null },
      };
      const notFound = (missing: "app" | "config" | "environment") =>
        missing === "environment" ? environmentRevisionNotFound() : applicationRevisionNotFound();
      if (c.req.valid("query").dry_run) return c.json(await dryRun(c, c.var, target, "deploy", notFound), 200);
      const config = await deploy(c, c.var, target, notFound);
      return c.json({ count: 1 as const, application_revision: toRevision(config) }, 200);
    },
  ),
];
