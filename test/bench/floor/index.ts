/**
 * The benchmark's floor: what a request costs under wrangler dev with no application code at all.
 *   GET /static   a fixed JSON body, no D1
 *   GET /select1  one `SELECT 1` on D1 (one round trip to the local D1 Durable Object), its row as JSON
 */
interface FloorEnv {
  DB: D1Database;
}

const JSON_HEADERS = { "content-type": "application/json" };
const STATIC_BODY = JSON.stringify({ status: "ok" });

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    if (pathname === "/static") return new Response(STATIC_BODY, { headers: JSON_HEADERS });
    if (pathname === "/select1") {
      const row = await env.DB.prepare("SELECT 1 AS one").first<{ one: number }>();
      return new Response(JSON.stringify(row), { headers: JSON_HEADERS });
    }
    return new Response(JSON.stringify({ detail: "Not Found" }), { status: 404, headers: JSON_HEADERS });
  },
} satisfies ExportedHandler<FloorEnv>;
