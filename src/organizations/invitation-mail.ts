import { type Mailer, mailer, sendMail } from "../core/mail";
import type { InvitationToMail } from "./invitations.sql.ts";

/**
 * How an invitation's token reaches the invitee (wrangler.toml INVITATION_EMAIL_FROM, PUBLIC_BASE_URL,
 * INVITATION_TOKEN_IN_ANSWER): mailed to the invited address when a sender and the service's public origin are set, so
 * that only the mailbox's owner learns it; in the invite's answer when it is not mailed (for the inviter to pass on),
 * or in development. `origin` is where the mail's accept link points: never the request's Host, which a client may
 * forge to have the token mailed towards a server of its own.
 */
export interface TokenDelivery {
  mail: Mailer | null;
  inAnswer: boolean;
}

export function tokenDelivery(env: Env): TokenDelivery {
  const mail = mailer(env);
  return { mail, inAnswer: mail === null || env.INVITATION_TOKEN_IN_ANSWER === "true" };
}

/**
 * Mails the token to the invited address, with what to send to accept (`acceptUrl` carries the project), and the
 * console's page that accepts it in a browser: the same path under /console, the token in the fragment, which no
 * browser sends to a server. The organization's name is the inviter's words: it goes in as text, and names cannot
 * hold control characters, so it cannot add a header.
 */
export async function mailInvitation(
  mail: Mailer,
  invitation: InvitationToMail,
  token: string,
  acceptUrl: string,
): Promise<void> {
  const body = JSON.stringify({ token });
  const page = new URL(acceptUrl);
  page.pathname = page.pathname.replace(/\/organizations\/[^/]+\/workspaces\/[^/]+\/invite\/accept$/, "/console$&");
  page.hash = `token=${token}`;
  const text = [
    `${invitation.invited_by} invited you to the organization "${invitation.organization_name}" as ${invitation.role}.`,
    "",
    `To accept, before ${invitation.expires_at}, open this page:`,
    "",
    page.href,
    "",
    "Or POST this JSON body to the address below:",
    "",
    `  ${acceptUrl}`,
    `  ${body}`,
    "",
    "If you have no account yet, send it without an API key: the answer holds your new account's first API key,",
    "shown once. If you have an account, send it with your own API key (Authorization: ApiKey <your key>).",
    "",
    `curl -X POST '${acceptUrl}' -H 'Content-Type: application/json' -d '${body}'`,
    "",
    "If you did not expect this invitation, ignore this mail: nothing happens unless it is accepted.",
  ].join("\n");
  await sendMail(mail, { to: invitation.email, subject: `Invitation to join ${invitation.organization_name}`, text });
}
