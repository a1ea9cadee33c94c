// Reads a request body as raw bytes, up to a limit, and stops reading the moment the limit is
// passed. body-parser enforces its limit while streaming too, but then reads off (and discards)
// the rest of the request before it lets the 413 go out: a client streaming an endless chunked
// body would hold the connection until Node's request timeout. Here the answer goes out at
// once and the connection is closed behind it.
import type { Request, Response } from 'express';
import type { BodyBudget } from './body-budget.js';

export type BodyRead =
  /** `body.length` bytes are taken from the budget: give them back once the body is verified. */
  | { readonly kind: 'body'; readonly body: Buffer }
  | { readonly kind: 'rejected'; readonly status: 413 | 415 | 503; readonly error: string }
  /** The client went away before the body was complete: nobody is left to answer. */
  | { readonly kind: 'aborted' };

const BODY_TOO_LARGE = 'request body too large: the limit is 1 MiB';
const BODY_COMPRESSED = 'compressed request bodies are not accepted';
const BODIES_BUSY = 'too many request bodies in flight; retry shortly';

export function readRawBody(req: Request, res: Response, { limitBytes, budget }: { limitBytes: number; budget: BodyBudget }): Promise<BodyRead> {
  // Stripe does not compress, and a compressed body would dodge the limit until inflated.
  const encoding = req.headers['content-encoding']?.trim().toLowerCase();
  if (encoding !== undefined && encoding !== '' && encoding !== 'identity') {
    return Promise.resolve(reject(res, 415, BODY_COMPRESSED));
  }
  // Node has already refused a malformed Content-Length (400) before we get here.
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limitBytes) return Promise.resolve(reject(res, 413, BODY_TOO_LARGE));
  // A declared length that cannot fit is refused before a byte is read.
  if (declared > budget.limitBytes - budget.heldBytes) return Promise.resolve(reject(res, 503, BODIES_BUSY));

  if (req.readableEnded) return Promise.resolve({ kind: 'body', body: Buffer.alloc(0) });
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const finish = (result: BodyRead) => {
      req.off('data', onData).off('end', onEnd).off('error', onAbort).off('close', onAbort);
      if (result.kind !== 'body') budget.give(received);
      resolve(result);
    };
    const stop = (status: 413 | 503, error: string) => {
      // Stop pulling bytes off the socket; the rest of the body is never read.
      req.pause();
      finish(reject(res, status, error));
    };
    const onData = (chunk: Buffer) => {
      if (received + chunk.length > limitBytes) return stop(413, BODY_TOO_LARGE);
      if (!budget.take(chunk.length)) return stop(503, BODIES_BUSY);
      received += chunk.length;
      chunks.push(chunk);
    };
    const onEnd = () => finish({ kind: 'body', body: Buffer.concat(chunks, received) });
    const onAbort = () => finish({ kind: 'aborted' });
    req.on('data', onData).on('end', onEnd).on('error', onAbort).on('close', onAbort);
  });
}

function reject(res: Response, status: 413 | 415 | 503, error: string): BodyRead {
  // The unread rest of the body would otherwise be parsed as the next request on this
  // connection: Node closes it once the answer is out.
  res.set('Connection', 'close');
  if (status === 503) res.set('Retry-After', '1');
  return { kind: 'rejected', status, error };
}
