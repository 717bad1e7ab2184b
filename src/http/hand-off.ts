import type { Context } from "hono";

/**
 * A message on the delivery queue: events just committed, or deliveries due (a retry, a redelivery, the sweep), on
 * the shard `shard` names.
 */
export interface DeliveryMessage {
  /** The shard holding them; a message without one was queued before the pool, and is SHARD_0's. */
  shard?: string;
  events?: string[];
  deliveries?: string[];
}

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
