/**
 * Servers of the tests' own processes that a workerd sends to, kept from closing idle connections. Node closes a
 * keep-alive connection after 5 s idle; workerd keeps it in its pool and finds it closed only when it next sends on it
 * ("Network connection lost", a broken pipe), once for each such connection.
 */
import http from "node:http";

/** `server`, never closing an idle connection: the tests' webhook receivers, which wrangler dev's runtime posts to. */
export function keepIdleConnections<S extends http.Server>(server: S): S {
  server.keepAliveTimeout = 0;
  return server;
}

/**
 * Every HTTP server the test runner's process makes from now on, for miniflare's loopback server: the worker project's
 * runtime fetches its modules through it (the module fallback service) and the local send_email binding stores each
 * mail there. A file's module loads leave dozens of connections at once, so that a mail sent seconds later failed up to
 * 40 times in a row. Kept open, none goes stale; the runtime closes them when the run ends.
 */
export function keepRunnerConnections(): void {
  const createServer = http.createServer;
  http.createServer = ((...args: Parameters<typeof createServer>) =>
    keepIdleConnections(createServer(...args))) as typeof createServer;
}
