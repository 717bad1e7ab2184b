/**
 * The service's mail (wrangler.toml INVITATION_EMAIL_FROM, PUBLIC_BASE_URL, the send_email binding INVITATION_EMAIL):
 * set up when a sender and the service's public origin are set. Links in mails are made from that origin, never from
 * a request's Host, which a client may forge to have a link mailed towards a server of its own.
 */
export interface Mailer {
  binding: SendEmail;
  from: string;
  /** PUBLIC_BASE_URL's origin. */
  origin: string;
}

/** PUBLIC_BASE_URL is set but is not an http(s) origin. The message does not repeat the value, which may hold credentials. */
class BadPublicBaseUrlError extends Error {
  constructor() {
    super(
      'PUBLIC_BASE_URL (wrangler.toml [vars]) must be an http(s) origin, with no credentials, path, query or fragment, such as "https://apps.example.com"',
    );
  }
}

/** PUBLIC_BASE_URL's origin, or null when it is unset; a value that is not an http(s) origin throws. */
function publicOrigin(env: Env): string | null {
  const value = (env.PUBLIC_BASE_URL ?? "").trim();
  if (value === "") return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new BadPublicBaseUrlError();
  }
  // An origin's href is the origin and "/": no credentials, path, query or fragment.
  if (!/^https?:$/.test(url.protocol) || url.href !== `${url.origin}/`) throw new BadPublicBaseUrlError();
  return url.origin;
}

/** The mail as set up, or null when it is not; a PUBLIC_BASE_URL that is not an http(s) origin throws. */
export function mailer(env: Env): Mailer | null {
  const from = (env.INVITATION_EMAIL_FROM ?? "").trim();
  const origin = from !== "" && env.INVITATION_EMAIL ? publicOrigin(env) : null;
  return origin === null ? null : { binding: env.INVITATION_EMAIL, from, origin };
}

/** One mail of the service's, from its sender. */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

const MAIL_ATTEMPTS = 5;

/**
 * Sends one mail; again, MAIL_ATTEMPTS in all, while the runtime lost its connection to the binding ("Network connection
 * lost", as D1's transient errors say it). The local binding under `wrangler dev` and the tests throws it once for each
 * stale connection of its pool it tries, several in a row after a quiet spell. The last failure is the caller's: a mail
 * may then go out twice, which is better than an invitation refused for a dropped connection.
 */
export async function sendMail(mail: Mailer, message: MailMessage): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await mail.binding.send({ from: mail.from, ...message });
      return;
    } catch (error) {
      if (attempt === MAIL_ATTEMPTS || !String(error).includes("Network connection lost")) throw error;
    }
  }
}
