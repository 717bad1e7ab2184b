import { env } from "cloudflare:workers";

/** A mail the Worker sent, as it gave it to the send_email binding. */
export interface Mail {
  from: string;
  to: string;
  subject: string;
  text: string;
}

/**
 * How the sending fails: the service refuses every mail; the runtime loses its connection to the binding on every
 * send, or on the first only (as the local binding does under load).
 */
export type MailFailure = "refused" | "connection lost" | "connection lost once";

/**
 * The real send_email binding, with each mail given to it kept for the test to read (the mailbox, as its owners see it,
 * and every attempt), failing as `failure` says.
 */
export function mailbox(failure?: MailFailure) {
  const mails: Mail[] = [];
  const binding = {
    async send(message: Mail) {
      mails.push(message);
      if (failure === "refused") throw new Error("mail refused by the sending service");
      if (failure === "connection lost" || (failure === "connection lost once" && mails.length === 1)) {
        throw new Error("Network connection lost.");
      }
      return env.INVITATION_EMAIL.send(message);
    },
  } as unknown as SendEmail;
  return { mails, binding };
}
