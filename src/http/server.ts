// The HTTP server around the app, with every time limit chosen rather than inherited. Node's
// defaults let a client hold a connection for 300 s by sending a body one byte a second, and check
// their timers only every 30 s.
import type { RequestListener, Server } from 'node:http';
import { keepAliveByProof } from './connection-keep-alive.js';

// Not `import { createServer } from 'node:http'`: that would load Node's undici (src/stripe/sdk.ts says why).
const { createServer: createHttpServer } = process.getBuiltinModule('node:http');

/** A client has this long to send its request line and headers. */
const HEADERS_TIMEOUT_MS = 10_000;
/**
 * An idle keep-alive connection stays open this long: above the idle timeout of the proxies in
 * front (Traefik keeps idle upstream connections 90 s), so the proxy, not Node, closes an idle
 * connection, and never reuses one Node has just closed (a 502 for that request). Only once it
 * has carried a request that proved itself; before, a few seconds (connection-keep-alive.ts).
 */
const KEEP_ALIVE_TIMEOUT_MS = 95_000;
/** Open connections at most; idle keep-alive ones count. Past it Node refuses new ones. */
const MAX_CONNECTIONS = 2_048;

export function createServer(app: RequestListener, { requestTimeoutMs }: { requestTimeoutMs: number }): Server {
  const server = createHttpServer(
    {
      // The whole request, headers and body (HTTP_REQUEST_TIMEOUT_SECONDS); Node answers 408 and
      // closes the connection. Stripe sends a webhook in well under a second.
      requestTimeout: requestTimeoutMs,
      headersTimeout: Math.min(HEADERS_TIMEOUT_MS, requestTimeoutMs),
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      // How often Node checks the two timeouts above; its default, 30 s, would let a slow client
      // keep its connection up to 30 s past them.
      connectionsCheckingInterval: 1_000,
    },
    (req, res) => {
      keepAliveByProof(req, res);
      app(req, res);
    },
  );
  server.maxConnections = MAX_CONNECTIONS;
  return server;
}
