/**
 * Keeps the HTTP servers of the test runner's own process from closing idle connections, for miniflare's loopback
 * server: the worker project's runtime fetches its modules through it (the module fallback service) and the local
 * send_email binding stores each mail there. Node closes a keep-alive connection after 5 s idle; workerd keeps it in its
 * pool and finds it closed only when it next sends on it ("Network connection lost", a broken pipe), once for each such
 * connection. A file's module loads leave dozens at once, so that a mail sent seconds later failed up to 40 times in a
 * row. Kept open, none goes stale; the runtime closes them when the run ends.
 */
import http from "node:http";

const createServer = http.createServer;
http.createServer = ((...args: Parameters<typeof createServer>) => {
  const server = createServer(...args);
  server.keepAliveTimeout = 0;
  return server;
}) as typeof createServer;
