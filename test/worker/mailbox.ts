import { env } from "cloudflare:workers";

/** A mail the Worker sent, as it gave it to the send_email binding. */
export interface Mail {
  from: string;
  to: string;
  subject: string;
  text: string;
}

/**
 * The real send_email binding, with each mail kept for the test to read (the mailbox, as its owners see it); `fails`:
 * the sending service refuses every mail.
 */
export function mailbox(fails = false) {
  const mails: Mail[] = [];
  const binding = {
    async send(message: Mail) {
      mails.push(message);
      if (fails) throw new Error("mail refused by the sending service");
      return env.INVITATION_EMAIL.send(message);
    },
  } as unknown as SendEmail;
  return { mails, binding };
}
