// Which connections keep the long keep-alive. Idle keep-alive connections count against the
// server's connection cap (server.ts), so a client that opens as many as it can, sends each one
// unauthenticated request and idles would hold the cap for the whole keep-alive, renewably, and
// keep Stripe out. A connection earns the long keep-alive by carrying a request that proved
// itself (a webhook with a valid signature, a request with the API or admin token or session);
// until then it is closed a few seconds after each answer, and the answer says so. Stripe's and
// the proxy's connections prove themselves with their first real request and keep the long one.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** What an unproven connection's answers advertise (Keep-Alive: timeout=2)... */
const UNPROVEN_KEEP_ALIVE_MS = 2_000;
/**
 * ...and a second more before it is closed, as Node pads its own keep-alive: a client that honours
 * the advertised timeout has stopped reusing the connection when it goes.
 */
const UNPROVEN_CLOSE_AFTER_MS = UNPROVEN_KEEP_ALIVE_MS + 1_000;

interface ConnectionState {
  proven: boolean;
  /** Requests whose answers are not done: a pipelined request may be in flight when one ends. */
  inFlight: number;
}

const connections = new WeakMap<Socket, ConnectionState>();

/** The connection `req` came on keeps the long keep-alive from now on. */
export function proveConnection(req: IncomingMessage): void {
  const state = connections.get(req.socket);
  if (state) state.proven = true;
}

/** Runs before the app, for every request. */
export function keepAliveByProof(req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket;
  let state = connections.get(socket);
  if (!state) connections.set(socket, (state = { proven: false, inFlight: 0 }));
  if (state.proven) return;
  state.inFlight++;
  // Said before the app runs: should this request prove the connection, the hint errs short,
  // which costs the client a new connection at most. A Keep-Alive header of ours replaces Node's.
  if (res.shouldKeepAlive) res.setHeader('Keep-Alive', `timeout=${UNPROVEN_KEEP_ALIVE_MS / 1000}`);
  // 'close' comes after 'finish', where Node set the long idle timeout; it comes on an abort too.
  res.once('close', () => {
    state.inFlight--;
    if (!state.proven && state.inFlight === 0 && !socket.destroyed) socket.setTimeout(UNPROVEN_CLOSE_AFTER_MS);
  });
}
