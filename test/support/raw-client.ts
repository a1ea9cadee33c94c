// A raw TCP client of the service, for the tests that must send what no HTTP client sends (a body
// a byte at a time, a declared length never sent) and see what the server does with the socket.
import type net from 'node:net';

export interface RawClient {
  socket: net.Socket;
  /** Everything the server sent so far. */
  received(): string;
  /** Resolves when the socket closes, whichever side closed it. */
  closed: Promise<void>;
}

/** Starts collecting what the server sends on `socket`. */
export function rawClient(socket: net.Socket): RawClient {
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, received: () => text, closed };
}

/** Closed by the server within `ms`, or the test fails (the client's own timer is the deadline). */
export async function closedWithin(client: RawClient, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      client.closed,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`the server kept the connection open for ${ms} ms`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
    client.socket.destroy();
  }
}
