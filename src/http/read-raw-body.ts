// Reads a request body as raw bytes, up to a limit and a deadline, and stops keeping it the moment
// either is passed. body-parser enforces its limit while streaming too, but then reads off (and
// discards) the rest of the request before it lets the 413 go out: a client streaming an endless
// chunked body would hold the connection until Node's request timeout. Here the answer goes out
// at once, and the connection closes behind it once the rest of the body is drained, within a
// bound (drain-refused-body.ts says why).
import type { Request, Response } from 'express';
import type { BodyBudget } from './body-budget.js';
import { drainRefusedBody } from './drain-refused-body.js';

export type BodyRead =
  /** Its bytes are held in the budget until `release()`: call it once the body is verified. */
  | { readonly kind: 'body'; readonly body: Buffer; readonly release: () => void }
  | { readonly kind: 'rejected'; readonly status: 408 | 413 | 415 | 503; readonly error: string }
  /** The client went away before the body was complete: nobody is left to answer. */
  | { readonly kind: 'aborted' };

const BODY_TOO_LARGE = 'request body too large: the limit is 1 MiB';
const BODY_COMPRESSED = 'compressed request bodies are not accepted';
const BODIES_BUSY = 'too many request bodies in flight; retry shortly';
const BODY_TOO_SLOW = 'request body too slow: it must arrive within seconds of its headers';

export interface BodyLimits {
  limitBytes: number;
  /** From the moment the headers are in; past it 408. */
  deadlineMs: number;
  budget: BodyBudget;
  /** Whose share of the budget the body takes (rate-limits.ts's clientKey). */
  client: string;
}

export function readRawBody(req: Request, res: Response, { limitBytes, deadlineMs, budget, client }: BodyLimits): Promise<BodyRead> {
  // Stripe does not compress, and a compressed body would dodge the limit until inflated.
  const encoding = req.headers['content-encoding']?.trim().toLowerCase();
  if (encoding !== undefined && encoding !== '' && encoding !== 'identity') {
    return Promise.resolve(reject(req, res, 415, BODY_COMPRESSED));
  }
  // Node has already refused a malformed Content-Length (400) before we get here, and never
  // passes on more bytes than it declares.
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limitBytes) return Promise.resolve(reject(req, res, 413, BODY_TOO_LARGE));
  // A declared length is taken whole before a byte is read (body-budget.ts says why).
  if (!budget.take(client, declared)) return Promise.resolve(reject(req, res, 503, BODIES_BUSY));
  let held = declared;
  const release = () => budget.give(client, held);

  if (req.readableEnded) return Promise.resolve({ kind: 'body', body: Buffer.alloc(0), release });
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const finish = (result: BodyRead) => {
      clearTimeout(deadline);
      req.off('data', onData).off('end', onEnd).off('error', onAbort).off('close', onAbort);
      if (result.kind !== 'body') release();
      resolve(result);
    };
    const stop = (status: 408 | 413 | 503, error: string) => finish(reject(req, res, status, error));
    const onData = (chunk: Buffer) => {
      if (received + chunk.length > limitBytes) return stop(413, BODY_TOO_LARGE);
      // A chunked body declares nothing: its bytes are taken as they come.
      const more = received + chunk.length - held;
      if (more > 0) {
        if (!budget.take(client, more)) return stop(503, BODIES_BUSY);
        held += more;
      }
      received += chunk.length;
      chunks.push(chunk);
    };
    const onEnd = () => finish({ kind: 'body', body: Buffer.concat(chunks, received), release });
    const onAbort = () => finish({ kind: 'aborted' });
    const deadline = setTimeout(() => stop(408, BODY_TOO_SLOW), deadlineMs);
    req.on('data', onData).on('end', onEnd).on('error', onAbort).on('close', onAbort);
  });
}

function reject(req: Request, res: Response, status: 408 | 413 | 415 | 503, error: string): BodyRead {
  // The unread rest of the body would otherwise be parsed as the next request on this
  // connection: Node closes it once the answer is out, and the rest is drained first.
  res.set('Connection', 'close');
  drainRefusedBody(req);
  if (status === 503) res.set('Retry-After', '1');
  return { kind: 'rejected', status, error };
}
