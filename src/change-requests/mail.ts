/**
 * A change request's mails (docs/CHANGE-REQUESTS.md §3 "Mail"), where mail is set up (src/core/mail.ts): to its
 * requested reviewers who are members when it opens or is rebased; to its author when it is approved, declined,
 * applied, fails or expires. Plain text, linking to the request's console page; sent after the write, each failure
 * logged, never failing it.
 */
import { mailer, sendMail } from "../core/mail";
import { requestedReviewers } from "./change-requests.answers";
import type { ChangeRequestState } from "./change-requests.schemas";
import type { ChangeRequestRow } from "./change-requests.sql.ts";

/** What happened to the request, and what the mail says of it. */
const SAID = {
  opened: "A change request awaits your review.",
  rebased: "A change request you are asked to review was rebased: it needs approving again.",
  approved: "Your change request is approved: it can be applied.",
  rejected: "Your change request was declined.",
  applied: "Your change request was applied.",
  failed: "Your change request failed to apply",
  expired: "Your change request expired.",
};
export type RequestMail = keyof typeof SAID;

/** The mail an action's write calls for (`reached`: it made the request approved or rejected), if any. */
export const actionMail = (action: string, reached: boolean, state: ChangeRequestState): RequestMail | null =>
  action === "submit"
    ? "opened"
    : action === "rebase"
      ? "rebased"
      : reached && (state === "approved" || state === "rejected")
        ? state
        : null;

/** Mails what happened to request `row`; never throws (a mail not sent is logged, naming no address). */
export async function mailRequest(env: Env, row: ChangeRequestRow, what: RequestMail): Promise<void> {
  try {
    const mail = mailer(env);
    if (!mail) return;
    const to =
      what === "opened" || what === "rebased"
        ? requestedReviewers(row).flatMap(({ email }) => (email ? [email] : []))
        : [row.authorEmail];
    // A title may hold line breaks: a subject holds none.
    const about = `${row.appName} · ${row.environment}: ${row.title}`.replace(/\p{Cc}+/gu, " ");
    const text = [
      what === "failed" ? `${SAID.failed} (${row.failureReason}).` : SAID[what],
      "",
      about,
      `${row.configName} v${row.revision}, version ${row.version}`,
      "",
      `${mail.origin}${(env.BASE_PATH ?? "").replace(/\/+$/, "")}/console/change-requests/${row.id}`,
    ].join("\n");
    await Promise.all(to.map((address) => sendMail(mail, { to: address, subject: `[${what}] ${about}`, text })));
  } catch (error) {
    console.error(
      JSON.stringify({ message: "change request mail failed", change_request_id: row.id, error: String(error).slice(0, 300) }),
    );
  }
}
