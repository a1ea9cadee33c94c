// Reads a request body as raw bytes, up to a limit, and stops reading the moment the limit is
// passed. body-parser enforces its limit while streaming too, but then reads off (and discards)
// the rest of the request before it lets the 413 go out: a client streaming an endless chunked
// body would hold the connection until Node's request timeout. Here the answer goes out at
// once and the connection is closed behind it.
import type { Request, Response } from 'express';

export type BodyRead =
  | { readonly kind: 'body'; readonly body: Buffer }
  | { readonly kind: 'rejected'; readonly status: 413 | 415; readonly error: string }
  /** The client went away before the body was complete: nobody is left to answer. */
  | { readonly kind: 'aborted' };

export const BODY_TOO_LARGE = 'request body too large: the limit is 1 MiB';
export const BODY_COMPRESSED = 'compressed request bodies are not accepted';

export function readRawBody(req: Request, res: Response, limitBytes: number): Promise<BodyRead> {
  // Stripe does not compress, and a compressed body would dodge the limit until inflated.
  const encoding = req.headers['content-encoding']?.trim().toLowerCase();
  if (encoding !== undefined && encoding !== '' && encoding !== 'identity') {
    return Promise.resolve(reject(res, 415, BODY_COMPRESSED));
  }
  // Node has already refused a malformed Content-Length (400) before we get here.
  if (Number(req.headers['content-length'] ?? 0) > limitBytes) return Promise.resolve(reject(res, 413, BODY_TOO_LARGE));

  if (req.readableEnded) return Promise.resolve({ kind: 'body', body: Buffer.alloc(0) });
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const finish = (result: BodyRead) => {
      req.off('data', onData).off('end', onEnd).off('error', onAbort).off('close', onAbort);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received <= limitBytes) return void chunks.push(chunk);
      // Stop pulling bytes off the socket; the rest of the body is never read.
      req.pause();
      finish(reject(res, 413, BODY_TOO_LARGE));
    };
    const onEnd = () => finish({ kind: 'body', body: Buffer.concat(chunks, received) });
    const onAbort = () => finish({ kind: 'aborted' });
    req.on('data', onData).on('end', onEnd).on('error', onAbort).on('close', onAbort);
  });
}

function reject(res: Response, status: 413 | 415, error: string): BodyRead {
  // The unread rest of the body would otherwise be parsed as the next request on this
  // connection: Node closes it once the answer is out.
  res.set('Connection', 'close');
  return { kind: 'rejected', status, error };
}
