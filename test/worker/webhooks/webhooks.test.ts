import { describe, expect, it } from "vitest";
import {
  type Account,
  createAccount,
  createAppVia,
  createTeam,
  expectError,
  expectJson,
  FORBIDDEN,
  issueKey,
  type RequestOptions,
  send,
  WEBHOOKS_PER_ORGANIZATION,
} from "../fixtures";
import { snapshot } from "../harness";
import { databaseOf } from "../pool";
import { type CreatedWebhook, newInbox, subscribe } from "./webhook-fixtures";

/** The webhook routes (docs/EVENTS.md): what they answer, who may use them, the URL rules, and the events they record. */

type Shown = Omit<CreatedWebhook, "secret">;

const production: RequestOptions["bindings"] = { WEBHOOKS_ALLOW_LOCAL: "false" };
/** Production as it may take webhooks: with a key to seal their secrets. */
const productionWithKey = { ...production, WEBHOOK_SECRETS_KEY: "a production key" } as Partial<Env>;

const webhookEvents = async (key: string) =>
  (
    await expectJson<{ events: { type: string; data: unknown; actor: unknown }[] }>(
      await send("GET", "/events?type=webhook.", { key }),
    )
  ).events;

describe("managing a webhook", () => {
  it("creation shows the secret once; reads never; a PATCH changes what it names; a DELETE ends it", async () => {
    const me = await createAccount();
    const url = newInbox();
    const appId = await createAppVia(me.key, { app_name: "hooked" });
    const created = await subscribe(me.key, {
      url,
      events: ["environment.deployed", "config.committed"],
      description: "to chat",
    });
    const { secret, ...webhook } = created;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(atob(secret.slice("whsec_".length)).length).toBe(32);
    expect(webhook).toEqual({
      id: expect.any(String),
      organization_id: me.organizationId,
      url,
      events: ["environment.deployed", "config.committed"],
      app_id: null,
      description: "to chat",
      enabled: true,
      disabled_reason: null,
      created_at: expect.any(String),
      updated_at: webhook.created_at,
    });
    expect(await expectJson(await send("GET", `/webhooks/${webhook.id}`, { key: me.key }))).toEqual(webhook);
    expect(await expectJson(await send("GET", "/webhooks", { key: me.key }))).toEqual([webhook]);

    const patched = await expectJson<Shown>(
      await send("PATCH", `/webhooks/${webhook.id}`, { key: me.key, body: { events: ["*"], app_id: appId, description: null } }),
    );
    expect(patched).toEqual({ ...webhook, events: ["*"], app_id: appId, description: null, updated_at: expect.any(String) });
    const unscoped = await expectJson<Shown>(
      await send("PATCH", `/webhooks/${webhook.id}`, { key: me.key, body: { app_id: null } }),
    );
    expect(unscoped).toEqual({ ...patched, app_id: null, updated_at: expect.any(String) });
    const paused = await expectJson<Shown>(
      await send("PATCH", `/webhooks/${webhook.id}`, { key: me.key, body: { enabled: false } }),
    );
    expect(paused).toEqual({ ...unscoped, enabled: false, updated_at: expect.any(String) });

    expect(await expectJson(await send("DELETE", `/webhooks/${webhook.id}`, { key: me.key }))).toBeNull();
    await expectError(await send("GET", `/webhooks/${webhook.id}`, { key: me.key }), 404, "Webhook not found");
    await expectError(await send("DELETE", `/webhooks/${webhook.id}`, { key: me.key }), 404, "Webhook not found");
    expect(await expectJson(await send("GET", "/webhooks", { key: me.key }))).toEqual([]);
  });

  it("each change is one event naming the webhook and its url; no secret is in any event or stored in the clear", async () => {
    const me = await createAccount();
    const url = newInbox();
    const hook = await subscribe(me.key, { url, events: ["app.created"] });
    const moved = newInbox();
    await expectJson(await send("PATCH", `/webhooks/${hook.id}`, { key: me.key, body: { url: moved } }));
    const { secret } = await expectJson<{ secret: string }>(
      await send("POST", `/webhooks/${hook.id}/rotate-secret`, { key: me.key }),
    );
    await expectJson(await send("DELETE", `/webhooks/${hook.id}`, { key: me.key }));
    const actor = { user_id: me.userId, username: me.username, api_key_prefix: me.key.split(".")[0] };
    const event = (type: string, at: string) => expect.objectContaining({ type, actor, data: { webhook_id: hook.id, url: at } });
    expect(await webhookEvents(me.key)).toEqual([
      event("webhook.deleted", moved),
      event("webhook.secret_rotated", moved),
      event("webhook.updated", moved),
      event("webhook.created", url),
    ]);
    const dump = JSON.stringify(await snapshot());
    for (const shownOnce of [hook.secret, secret]) {
      expect(dump).not.toContain(shownOnce);
      expect(dump).not.toContain(shownOnce.slice("whsec_".length));
    }
  });

  it("secrets are sealed at rest, and open only with the key that sealed them", async () => {
    const me = await createAccount();
    const hook = await subscribe(me.key, { url: newInbox(), events: ["*"] });
    const row = await databaseOf(hook.id)
      .prepare("SELECT secret FROM webhooks WHERE id = ?")
      .bind(hook.id)
      .first<{ secret: string }>();
    expect(row?.secret).toMatch(/^v1\.[A-Za-z0-9+/]+=*$/);
    // Another key than the one that sealed it cannot sign with it: a test delivery fails, and says so.
    const attempt = await expectJson<any>(
      await send("POST", `/webhooks/${hook.id}/test`, {
        key: me.key,
        bindings: { WEBHOOK_SECRETS_KEY: "another key" } as Partial<Env>,
      }),
    );
    expect(attempt).toEqual({
      status_code: null,
      duration_ms: expect.any(Number),
      response_excerpt: null,
      error: "could not sign the event",
    });
  });

  it("deployed without WEBHOOK_SECRETS_KEY, creating or rotating is refused clearly and writes nothing", async () => {
    const me = await createAccount();
    const hook = await subscribe(me.key, { url: newInbox(), events: ["*"] });
    const before = await snapshot();
    const refusal = "Webhooks are not set up on this service: its operator must set the WEBHOOK_SECRETS_KEY secret";
    const body = { url: "https://hooks.example.com/in", events: ["*"] };
    await expectError(await send("POST", "/webhooks", { key: me.key, body, bindings: production }), 501, refusal);
    await expectError(
      await send("POST", `/webhooks/${hook.id}/rotate-secret`, { key: me.key, bindings: production }),
      501,
      refusal,
    );
    expect(await snapshot()).toEqual(before);
    await expectJson(await send("POST", "/webhooks", { key: me.key, body, bindings: productionWithKey }));
  });

  it("bodies are validated (422, nothing written); an app of another organization is 404", async () => {
    const me = await createAccount();
    const stranger = await createAccount();
    const foreignApp = await createAppVia(stranger.key, { app_name: "theirs" });
    const before = await snapshot();
    const invalid = [
      {},
      { url: newInbox() },
      { url: newInbox(), events: [] },
      { url: newInbox(), events: ["app.exploded"] },
      { url: newInbox(), events: "app.created" },
      { url: newInbox(), events: ["*"], app_id: "nope" },
      { url: newInbox(), events: ["*"], description: 3 },
      { url: 42, events: ["*"] },
    ];
    for (const body of invalid) {
      expect((await send("POST", "/webhooks", { key: me.key, body })).status, JSON.stringify(body)).toBe(422);
    }
    const nulInDescription = [
      { loc: ["body", "description"], msg: "Value error, description must not contain NUL characters", type: "value_error" },
    ];
    await expectError(
      await send("POST", "/webhooks", { key: me.key, body: { url: newInbox(), events: ["*"], description: "a\u0000b" } }),
      422,
      nulInDescription,
    );
    await expectError(
      await send("POST", "/webhooks", { key: me.key, body: { url: newInbox(), events: ["*"], app_id: foreignApp } }),
      404,
      "App not found",
    );
    expect(await snapshot()).toEqual(before);
    const hook = await subscribe(me.key, { url: newInbox(), events: ["*"] });
    const unchanged = await snapshot();
    expect((await send("PATCH", `/webhooks/${hook.id}`, { key: me.key, body: { enabled: "yes" } })).status).toBe(422);
    expect((await send("PATCH", `/webhooks/${hook.id}`, { key: me.key, body: { events: [] } })).status).toBe(422);
    await expectError(
      await send("PATCH", `/webhooks/${hook.id}`, { key: me.key, body: { description: "\u0000" } }),
      422,
      nulInDescription,
    );
    await expectError(
      await send("PATCH", `/webhooks/${hook.id}`, { key: me.key, body: { app_id: foreignApp } }),
      404,
      "App not found",
    );
    expect(await snapshot()).toEqual(unchanged);
  });
});

describe("how many", () => {
  it(`an organization has at most ${WEBHOOKS_PER_ORGANIZATION} webhooks: past that, 422 and nothing written`, async () => {
    const me = await createAccount();
    const hooks = [];
    for (let i = 0; i < WEBHOOKS_PER_ORGANIZATION; i += 1)
      hooks.push(await subscribe(me.key, { url: newInbox(), events: ["*"] }));
    // A disabled webhook counts too.
    await expectJson(await send("PATCH", `/webhooks/${hooks[0].id}`, { key: me.key, body: { enabled: false } }));
    const before = await snapshot();
    const refused = await send("POST", "/webhooks", { key: me.key, body: { url: newInbox(), events: ["*"] } });
    expect(refused.status).toBe(422);
    expect(await refused.json()).toEqual({
      detail: [
        {
          loc: ["body"],
          msg: `Value error, this organization already has ${WEBHOOKS_PER_ORGANIZATION} webhooks, the most it may have: delete one to add another`,
          type: "value_error",
        },
      ],
    });
    expect(await snapshot()).toEqual(before);
    await expectJson(await send("DELETE", `/webhooks/${hooks[0].id}`, { key: me.key }));
    await subscribe(me.key, { url: newInbox(), events: ["*"] });
  });
});

describe("who may", () => {
  it("owners and workspace admins manage webhooks (a read-only key of theirs reads them); other members 403; other organizations 404", async () => {
    const owner = await createAccount();
    const [admin, editor, viewer, outsider] = await Promise.all([
      createAccount(),
      createAccount(),
      createAccount(),
      createAccount(),
    ]);
    const team = await createTeam(owner, [
      [admin, "workspace_admin"],
      [editor, "editor"],
      [viewer, "viewer"],
    ]);
    const teamKey = async (member: Account) => issueKey(member.userId, team.projectId);
    const hook = await subscribe(owner.key, { url: newInbox(), events: ["*"], organization_id: team.organizationId });
    const adminKey = await teamKey(admin);
    expect(
      (await expectJson<Shown[]>(await send("GET", `/webhooks?organization_id=${team.organizationId}`, { key: adminKey })))
        .length,
    ).toBe(1);
    await subscribe(adminKey, { url: newInbox(), events: ["*"] });
    const readOnlyOwner = await issueKey(owner.userId, team.projectId, { readOnly: true });
    const routes: [string, string, unknown?][] = [
      ["POST", "/webhooks", { url: newInbox(), events: ["*"], organization_id: team.organizationId }],
      ["GET", `/webhooks?organization_id=${team.organizationId}`],
      ["GET", `/webhooks/${hook.id}`],
      ["PATCH", `/webhooks/${hook.id}`, { description: "mine now" }],
      ["DELETE", `/webhooks/${hook.id}`],
      ["POST", `/webhooks/${hook.id}/rotate-secret`],
      ["POST", `/webhooks/${hook.id}/test`],
      ["GET", `/webhooks/${hook.id}/deliveries`],
      ["GET", `/webhooks/${hook.id}/deliveries/${crypto.randomUUID()}`],
      ["POST", `/webhooks/${hook.id}/deliveries/${crypto.randomUUID()}/redeliver`],
    ];
    const refusedKeys = [await teamKey(editor), await teamKey(viewer)];
    const before = await snapshot();
    for (const key of refusedKeys) {
      for (const [method, path, body] of routes) await expectError(await send(method, path, { key, body }), 403, FORBIDDEN);
    }
    // A read-only key reads what its user reads, and writes nothing.
    for (const [method, path, body] of routes) {
      const [asReadOnly, asOwner] = [
        await send(method, path, { key: readOnlyOwner, body }),
        method === "GET" && (await send(method, path, { key: owner.key })),
      ];
      if (asOwner) {
        expect([asReadOnly.status, await asReadOnly.json()], `${method} ${path}`).toEqual([asOwner.status, await asOwner.json()]);
      } else {
        await expectError(asReadOnly, 403, FORBIDDEN);
      }
    }
    for (const [method, path, body] of routes) {
      const answer = await send(method, path, { key: outsider.key, body });
      expect(answer.status, `${method} ${path}`).toBe(404);
    }
    expect(await snapshot()).toEqual(before);
  });
});

describe("where a webhook may point", () => {
  const refused: [string, string][] = [
    ["http://hooks.example.com/in", "url must be an https:// URL"],
    ["ftp://hooks.example.com/in", "url must be an https:// URL"],
    ["hooks.example.com/in", "url must be an absolute URL"],
    ["https://user:pw@hooks.example.com/in", "url must not carry credentials (user:password@)"],
    ["https://token@hooks.example.com/in", "url must not carry credentials (user:password@)"],
    // The URL parser reads a path here (host example.com), other parsers user info `example.com\` before 127.0.0.1.
    ["https://example.com\\@127.0.0.1/", "url must not carry credentials (user:password@)"],
    ["https://@hooks.example.com/in", "url must not carry credentials (user:password@)"],
    // The URL parser finds host `x` in these; the text names none after `//`.
    ["https:///x", "url must name its host after // (https://host/...)"],
    ["https:hooks.example.com/in", "url must name its host after // (https://host/...)"],
    ["https:/hooks.example.com/in", "url must name its host after // (https://host/...)"],
    ["https://example.com:0/", "url must not name port 0"],
    ["https://hooks.example.com:000/in", "url must not name port 0"],
    // Within the body's 2048 characters as sent, not once percent-encoded.
    [`https://hooks.example.com/${"é".repeat(400)}`, "url must be at most 2048 characters once normalized"],
    ["https://hooks.example.com/in put", "url must not contain spaces or control characters"],
    ["https://127.0.0.1/in", "url must not point to a loopback address"],
    ["https://0x7f000001/in", "url must not point to a loopback address"],
    ["https://2130706433/in", "url must not point to a loopback address"],
    ["https://localhost:8443/in", "url must not point to a loopback address"],
    ["https://api.localhost/in", "url must not point to a loopback address"],
    ["https://[::1]/in", "url must not point to a loopback address"],
    ["https://10.1.2.3/in", "url must not point to a private address"],
    ["https://172.16.0.9/in", "url must not point to a private address"],
    ["https://172.31.255.255/in", "url must not point to a private address"],
    ["https://192.168.1.1/in", "url must not point to a private address"],
    ["https://100.100.100.200/in", "url must not point to a private address"],
    ["https://[fd00:ec2::254]/in", "url must not point to a private address"],
    ["https://[::ffff:10.0.0.1]/in", "url must not point to a private address"],
    ["https://169.254.169.254/latest/meta-data", "url must not point to a link-local or metadata address"],
    ["https://[fe80::1]/in", "url must not point to a link-local or metadata address"],
    ["https://metadata.google.internal/in", "url must not point to a link-local or metadata address"],
    ["https://0.0.0.0/in", "url must not point to a reserved address"],
    ["https://[::]/in", "url must not point to a reserved address"],
    ["https://239.1.1.1/in", "url must not point to a reserved address"],
  ];
  const accepted = [
    "https://hooks.example.com/in?token=abc",
    "https://8.8.8.8/in",
    "https://172.32.0.1/in",
    "https://[2606:4700::1111]/in",
    "https://hooks.example.com:8443/in",
  ];

  // The issue 23 forms: IPv6 that carries an IPv4 address, site-local, the documentation ranges, and the rest of what
  // is not public unicast. The URL parser's spellings of IPv4 (0x7f.1, octal) still land on the dotted quad.
  const notPublic: [string, string][] = [
    ["https://[::7f00:1]/in", "url must not point to a reserved address"],
    ["https://[::ffff:0:7f00:1]/in", "url must not point to an IPv6 address that embeds an IPv4 one (NAT64, 6to4, Teredo)"],
    ["https://[64:ff9b::7f00:1]/in", "url must not point to an IPv6 address that embeds an IPv4 one (NAT64, 6to4, Teredo)"],
    ["https://[64:ff9b::8.8.8.8]/in", "url must not point to an IPv6 address that embeds an IPv4 one (NAT64, 6to4, Teredo)"],
    ["https://[64:ff9b:1::a00:1]/in", "url must not point to an IPv6 address that embeds an IPv4 one (NAT64, 6to4, Teredo)"],
    ["https://[2002:7f00:1::1]/in", "url must not point to an IPv6 address that embeds an IPv4 one (NAT64, 6to4, Teredo)"],
    [
      "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/in",
      "url must not point to an IPv6 address that embeds an IPv4 one (NAT64, 6to4, Teredo)",
    ],
    ["https://[fec0::1]/in", "url must not point to a private address"],
    ["https://192.0.2.10/in", "url must not point to a reserved address"],
    ["https://198.51.100.7/in", "url must not point to a reserved address"],
    ["https://203.0.113.99/in", "url must not point to a reserved address"],
    ["https://[2001:db8::1]/in", "url must not point to a reserved address"],
    ["https://[3fff::1]/in", "url must not point to a reserved address"],
    ["https://[4000::1]/in", "url must not point to a reserved address"],
    ["https://[ff02::1]/in", "url must not point to a reserved address"],
    ["https://255.255.255.255/in", "url must not point to a reserved address"],
    ["https://240.0.0.1/in", "url must not point to a reserved address"],
    ["https://0x7f.1/in", "url must not point to a loopback address"],
    ["https://017700000001/in", "url must not point to a loopback address"],
    ["https://[::ffff:7f00:1]/in", "url must not point to a loopback address"],
    ["https://[::ffff:192.168.0.1]/in", "url must not point to a private address"],
  ];
  const publicUnicast = ["https://1.1.1.1/in", "https://[2a00:1450:4001:82b::200e]/in", "https://[2001:4860:4860::8888]/in"];

  /** Each url is refused with its message by POST and by PATCH, with local targets refused; nothing is written. */
  async function expectRefused(me: Account, cases: [string, string][]) {
    const hook = await subscribe(me.key, { url: "https://hooks.example.com/first", events: ["*"] });
    const before = await snapshot();
    for (const [url, msg] of cases) {
      const issue = { detail: [{ loc: ["body", "url"], msg, type: "value_error" }] };
      expect(
        await expectJson(
          await send("POST", "/webhooks", { key: me.key, body: { url, events: ["*"] }, bindings: production }),
          422,
        ),
        url,
      ).toEqual(issue);
      expect(
        await expectJson(await send("PATCH", `/webhooks/${hook.id}`, { key: me.key, body: { url }, bindings: production }), 422),
        url,
      ).toEqual(issue);
    }
    expect(await snapshot()).toEqual(before);
  }

  /** Each url is taken as given, with local targets refused. */
  async function expectAccepted(me: Account, urls: string[]) {
    for (const url of urls) {
      const created = await send("POST", "/webhooks", { key: me.key, body: { url, events: ["*"] }, bindings: productionWithKey });
      expect((await expectJson<CreatedWebhook>(created)).url, url).toBe(url);
    }
  }

  it("https:// only, no credentials, no loopback, private, link-local or metadata address (422, nothing written)", async () => {
    const me = await createAccount();
    await expectRefused(me, refused);
    await expectAccepted(me, accepted);
  });

  it("stores and answers the URL as the platform's URL parser writes it, by POST and by PATCH", async () => {
    const me = await createAccount();
    const normalized: [sent: string, stored: string][] = [
      ["HTTPS://Hooks.Example.COM:443/a/../in", "https://hooks.example.com/in"],
      ["https://hooks.example.com:/in?b=1&a=2", "https://hooks.example.com/in?b=1&a=2"],
      ["https://hooks.example.com", "https://hooks.example.com/"],
      ["https://hooks.example.com:08443/in", "https://hooks.example.com:8443/in"],
      ["https://hooks.ex%61mple.com/in", "https://hooks.example.com/in"],
      ["https://bücher.example/ä", "https://xn--bcher-kva.example/%C3%A4"],
      ["https://hooks.example.com/a\\b", "https://hooks.example.com/a/b"],
      ["https://[::ffff:8.8.8.8]/in", "https://[::ffff:808:808]/in"],
      ["https://0x8.8.8.8/in", "https://8.8.8.8/in"],
    ];
    const hook = await subscribe(me.key, { url: "https://hooks.example.com/first", events: ["*"] });
    for (const [sent, stored] of normalized) {
      const created = await send("POST", "/webhooks", {
        key: me.key,
        body: { url: sent, events: ["*"] },
        bindings: productionWithKey,
      });
      const { id, url } = await expectJson<CreatedWebhook>(created);
      expect(url, sent).toBe(stored);
      expect((await expectJson<Shown>(await send("GET", `/webhooks/${id}`, { key: me.key }))).url, sent).toBe(stored);
      const changed = await send("PATCH", `/webhooks/${hook.id}`, { key: me.key, body: { url: sent }, bindings: production });
      expect((await expectJson<Shown>(changed)).url, sent).toBe(stored);
    }
    const row = await databaseOf(me.organizationId).prepare("SELECT url FROM webhooks WHERE id = ?").bind(hook.id).first();
    expect(row).toEqual({ url: "https://8.8.8.8/in" });
  });

  it("nothing short of a public unicast address: IPv6 that carries IPv4, site-local, documentation ranges (422)", async () => {
    const me = await createAccount();
    await expectRefused(me, notPublic);
    await expectAccepted(me, publicUnicast);
  });

  it("with WEBHOOKS_ALLOW_LOCAL, http:// and loopback too, but still no private address", async () => {
    const me = await createAccount();
    for (const url of [
      "http://127.0.0.1:8787/in",
      "http://localhost:3000/in",
      "https://[::1]:9443/in",
      "http://[::ffff:7f00:1]:8787/in",
      "http://hooks.example.com/in",
    ]) {
      expect((await subscribe(me.key, { url, events: ["*"] })).url).toBe(url);
    }
    // Loopback reached through a translator (NAT64, 6to4) or the deprecated IPv4-compatible form is not the loopback.
    const stillRefused = [
      "https://10.1.2.3/in",
      "http://169.254.169.254/",
      "ftp://127.0.0.1/",
      "https://[64:ff9b::7f00:1]/in",
      "https://[2002:7f00:1::1]/in",
      "https://[::7f00:1]/in",
      "https://[fec0::1]/in",
      "https://192.0.2.10/in",
    ];
    for (const url of stillRefused) {
      expect((await send("POST", "/webhooks", { key: me.key, body: { url, events: ["*"] } })).status, url).toBe(422);
    }
  });
});
