import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createAccount, createAppVia, expectJson, send } from "./fixtures";
import { newInbox, receivedAtLeast, subscribe, verified } from "./webhook-fixtures";

describe("delivery", () => {
  it("a change reaches a subscribed receiver, signed per Standard Webhooks, carrying the audit log's event", async () => {
    const me = await createAccount();
    const inbox = newInbox();
    const hook = await subscribe(me.key, { url: inbox, events: ["app.created"] });
    const appId = await createAppVia(me.key, { app_name: "announced" });
    const [request] = await receivedAtLeast(inbox, 1);
    const { events } = await expectJson<{ events: { type: string }[] }>(await send("GET", "/events?type=app.created", { key: me.key }));
    expect(verified(request, hook.secret)).toEqual({ type: "app.created", timestamp: (events[0] as any).occurred_at, data: events[0] });
    expect((events[0] as any).data.app_id).toBe(appId);
  });
});
