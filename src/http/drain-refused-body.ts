// A request refused before its body was read whole (413, 408, 415, 503) is answered at once with
// Connection: close, while the client may still be sending. Closing the socket with its bytes
// unread makes the kernel answer them with a reset, and a reset can discard the answer before the
// client reads it: a client busy writing its 2 MiB body got EPIPE instead of its 413. So the close
// lingers, as servers do it (nginx's lingering close, Go's closeWrite and discard): the answer and
// a FIN go out, the rest of the body is read and thrown away, and the socket is destroyed once the
// body has ended, or past a bound of bytes or of time, whichever comes first. A client that never
// stops sending is cut off at the bound, not read forever; nothing read here is kept.
import type { Request } from 'express';

/** 4 MiB: the rest of a body somewhat over the 1 MiB limit drains whole; a flood is cut off. */
const DRAIN_MAX_BYTES = 4 * 1024 * 1024;
/** 3 s: the rest of a few MiB over a slow link, not a connection held by bytes trickled in. */
const DRAIN_MAX_MS = 3_000;

/** From now on the rest of `req`'s body is discarded; the socket closes once it ends or a bound passes. */
export function drainRefusedBody(req: Request): void {
  const socket = req.socket;
  let discarded = 0;
  let drained = false;
  let closeNow: (() => void) | undefined;
  const done = () => {
    if (drained) return;
    drained = true;
    clearTimeout(deadline);
    req.off('data', discard).off('end', done);
    socket.off('close', done);
    closeNow?.();
  };
  const discard = (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > DRAIN_MAX_BYTES) done();
  };
  const deadline = setTimeout(done, DRAIN_MAX_MS);
  req.on('data', discard).once('end', done).resume();
  socket.once('close', done);
  // Node closes a connection whose answer says Connection: close by calling destroySoon() once
  // the answer is written: a FIN, then destroy as soon as the FIN is out, unread bytes or not.
  // For this socket the destroy waits for the drain; the FIN (the answer's end for the client)
  // still goes out at once.
  const destroySoon = socket.destroySoon.bind(socket);
  socket.destroySoon = () => {
    if (drained) return destroySoon();
    socket.end();
    closeNow = destroySoon;
  };
}
