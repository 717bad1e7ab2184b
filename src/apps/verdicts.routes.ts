import * as z from "zod/mini";
import { noSplit } from "../http/core-errors";
import { readAs, writeAs } from "../http/d1-session";
import { ApiError } from "../http/errors";
import { DEMO_APP_ID, errorResponse } from "../http/openapi-parts";
import { route } from "../http/route";
import { signedBody } from "../http/validation";
import { openSecret } from "../webhooks/secret-box";
import { signedHeaders } from "../webhooks/signing";
import { applyVerdict, verdictTarget } from "./split-steps.sql.ts";
import { SplitOutput, SplitParams } from "./splits.schemas";

/** A verdict's body (docs/SPLITS.md §3). */
const VerdictBody = /* @__PURE__ */ z.strictObject({
  verdict: z.enum(["fail", "pass", "hold", "resume"]),
  reason: z.string().check(z.maxLength(1000)),
});

const VerdictOutput = /* @__PURE__ */ z.object({ verdict: z.string(), split: z.nullable(SplitOutput) });

/** How far a verdict's `webhook-timestamp` may be from now. */
const TOLERANCE_SECONDS = 300;

const unsigned = () => new ApiError(401, "The verdict's signature, timestamp or webhook-id is not accepted");

/** Whether `header` (`v1,<base64>`, space-separated) holds the signature the secret makes of the message. */
async function signedBy(secret: string, id: string, timestamp: string, body: string, header: string) {
  const expected = new TextEncoder().encode((await signedHeaders([secret], id, Number(timestamp), body))["webhook-signature"]);
  return header.split(" ").some((given) => {
    const bytes = new TextEncoder().encode(given);
    return bytes.length === expected.length && crypto.subtle.timingSafeEqual(bytes, expected);
  });
}

/** docs/SPLITS.md §3: a verdict from the team's own evaluation, signed as a Standard Webhook with the split's secret. */
export const verdictsRoutes = [
  route(
    {
      method: "post",
      path: "/apps/{app_id}/environments/{environment}/split/verdicts",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "POST …/split/verdicts, signed: its secret read, then the verdict written",
            path: "/apps/{splitAppId}/environments/production/split/verdicts",
            key: "none",
            body: { verdict: "hold", reason: "counted" },
            headers: {
              "webhook-id": "msg_counted",
              "webhook-timestamp": "{verdictTimestamp}",
              "webhook-signature": "{verdictSignature}",
            },
            trips: 2,
          },
          {
            name: "POST …/split/verdicts, unsigned",
            path: "/apps/{splitAppId}/environments/production/split/verdicts",
            key: "none",
            body: { verdict: "hold", reason: "counted" },
            status: 401,
            trips: 1,
          },
        ],
      },
      auth: "optional",
      idempotencyKey: "validates",
      params: { schema: SplitParams, examples: globalThis.DOCUMENTATION && { app_id: DEMO_APP_ID, environment: "production" } },
      body: {
        schema: VerdictBody,
        id: "SplitVerdict",
        signed: true,
        examples: globalThis.DOCUMENTATION && {
          fail: { summary: "The evaluation failed: back to the base", value: { verdict: "fail", reason: "accuracy fell 4%" } },
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "postSplitVerdict",
        tag: "Splits",
        summary: "Give a running split a verdict, signed with its secret",
        description:
          "No API key: signed as a Standard Webhook (`webhook-id`, `webhook-timestamp`, `webhook-signature` over " +
          "`id.timestamp.body` with the split's verdict secret). `fail` ends the split on its base, `pass` applies its next " +
          "step now, `hold` pauses its steps and `resume` goes on. A bad or missing signature, a timestamp more than 5 " +
          "minutes off, or a `webhook-id` seen before: 401, nothing written. The body is checked after the signature: a bad " +
          "body signed is a 422, unsigned a 401.",
        ok: { schema: VerdictOutput, description: "The verdict accepted, and the split after it (null: it ended)" },
        errors: {
          401: errorResponse("Not signed with the split's secret, too old or new, or replayed", unsigned()),
          404: errorResponse("No split runs in that environment (or no such app or environment)", noSplit()),
        },
      },
    },
    async (c) => {
      const { app_id, environment } = c.req.valid("param");
      const [id, timestamp, signature] = ["webhook-id", "webhook-timestamp", "webhook-signature"].map((name) =>
        c.req.header(name),
      );
      const target = await readAs(c, [app_id], (db) => verdictTarget(db, app_id, environment, id ?? ""));
      if (!target) throw noSplit();
      if (!id || !timestamp || !signature || target.seen || !/^\d{1,12}$/.test(timestamp)) throw unsigned();
      if (Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) throw unsigned();
      const secret = await openSecret(c.env, target.sealedSecret);
      if (!(await signedBy(secret, id, timestamp, await c.req.text(), signature))) throw unsigned();
      const { verdict, reason } = await signedBody(c, VerdictBody);
      const applied = await writeAs(c, [app_id], (db) => applyVerdict(db, target.splitId, { verdict, reason, webhookId: id }));
      if (applied === "replayed") throw unsigned();
      if (applied === null) throw noSplit();
      return c.json({ verdict, split: applied.split === null ? null : JSON.parse(applied.split) }, 200);
    },
  ),
];
