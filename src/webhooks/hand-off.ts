import type { Context } from "hono";
import type { DeliveryMessage } from "./delivery";

/**
 * Hands work to the delivery queue after the answer (`waitUntil`), at no cost to its latency. A lost hand-off loses
 * nothing: the deliveries are already rows, and the sweep queues what stays pending.
 */
export function handOff<E extends { Bindings: Env }>(c: Context<E>, message: DeliveryMessage) {
  c.executionCtx.waitUntil(
    c.env.WEBHOOK_DELIVERIES.send(message).catch((error: unknown) => {
      console.error(
        JSON.stringify({ message: "hand-off to the delivery queue failed; the sweep will queue it", error: String(error) }),
      );
    }),
  );
}
