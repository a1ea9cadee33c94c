// A webhook body refused before it is read whole (413 over 1 MiB) reaches its client as a 413, not
// as a connection reset: the answer goes out at once with Connection: close, and the server goes
// on reading (and discarding) the rest of the body before it closes, so the client's last writes
// land on an open connection instead of drawing a reset that can discard the answer unread. A
// client that never stops sending is still cut off, past a bound of bytes or of time.
import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { closedWithin, rawClient, type RawClient } from '../support/raw-client.js';
import { serviceForFile } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const file = serviceForFile({ env: { ROLE: 'web' } });

const BODY_BYTES = 2 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 'x');

interface Client extends RawClient {
  writeErrors: Error[];
  /** The server has sent its FIN: its answer is complete. */
  ended(): boolean;
}

/** `allowHalfOpen`: the client keeps sending after the server's FIN, as one still writing its body does. */
async function connect({ allowHalfOpen = false } = {}): Promise<Client> {
  const url = new URL(file.service.url);
  const socket = net.connect({ port: Number(url.port), host: url.hostname, allowHalfOpen });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const writeErrors: Error[] = [];
  let ended = false;
  socket.on('error', (error) => writeErrors.push(error)).once('end', () => (ended = true));
  return { ...rawClient(socket), writeErrors, ended: () => ended };
}

const headers = (framing: string) =>
  `POST /webhooks/stripe HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nStripe-Signature: t=1,v1=00\r\n${framing}\r\n\r\n`;
const DECLARED = headers(`Content-Length: ${BODY_BYTES}`);
const CHUNKED = headers('Transfer-Encoding: chunked');

/**
 * Writes `bytes` of body in 64 KiB writes, each waited for, as a client pushing a big body does;
 * the first failure ends it. `end`: a chunked body's last part, closed by its zero-length chunk.
 */
async function send(client: Client, bytes: number, { chunked = false, end = true } = {}): Promise<void> {
  for (let sent = 0; sent < bytes && !client.socket.destroyed; sent += CHUNK.length) {
    const chunk = CHUNK.subarray(0, Math.min(CHUNK.length, bytes - sent));
    const framed = chunked ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]) : chunk;
    const failed = await new Promise<Error | null | undefined>((resolve) => client.socket.write(framed, resolve));
    if (failed) return;
  }
  if (chunked && end && !client.socket.destroyed) client.socket.write('0\r\n\r\n');
}

const answered413 = (client: Client) =>
  /^HTTP\/1\.1 413 .*\r\nconnection: close\r\n/is.test(client.received()) && client.received().includes('request body too large');

test('a client still sending its 2 MiB body when the 413 and the FIN come reads its 413, without a reset', async () => {
  for (const [framing, chunked, before] of [
    [DECLARED, false, 0],
    [CHUNKED, true, 1024 * 1024 + CHUNK.length],
  ] as const) {
    const client = await connect({ allowHalfOpen: true });
    client.socket.write(framing);
    await send(client, before, { chunked, end: false });
    // The answer is surely out and the server done sending, the body not yet over: the moment
    // a server that closes at once resets the connection, as a busy host's client met it.
    await waitFor('the 413 and the FIN', () => Promise.resolve(answered413(client) && client.ended()));
    await send(client, BODY_BYTES - before, { chunked });
    client.socket.end();
    await closedWithin(client, 10_000);
    assert.deepEqual(
      client.writeErrors.map((e) => e.message),
      [],
      `${chunked ? 'chunked' : 'declared'}: the body's last writes`,
    );
    assert.ok(answered413(client));
  }
});

test('a client that writes its whole 2 MiB body before it reads gets its 413, 20 times out of 20', async () => {
  for (let i = 0; i < 20; i++) {
    const client = await connect();
    // Nothing is read until the body is written, as with clients that write, then read.
    client.socket.pause();
    client.socket.write(DECLARED);
    await send(client, BODY_BYTES);
    client.socket.resume();
    await closedWithin(client, 10_000);
    assert.deepEqual([i, client.writeErrors.map((e) => e.message)], [i, []]);
    assert.ok(answered413(client), `${i}: ${client.received().slice(0, 80)}`);
  }
});

test('a client that never stops sending is cut off: past a few MiB when fast, past a few seconds when slow', async () => {
  const fast = await connect({ allowHalfOpen: true });
  fast.socket.write(headers('Content-Length: 1073741824'));
  let sent = 0;
  const flood = (async () => {
    while (!fast.socket.destroyed && fast.writeErrors.length === 0 && sent < 256 * 1024 * 1024) {
      await new Promise((resolve) => fast.socket.write(CHUNK, resolve));
      sent += CHUNK.length;
    }
  })();
  await closedWithin(fast, 10_000);
  await flood;
  // The drain's bound, plus what the two kernels buffer between the client and the server.
  assert.ok(sent < 32 * 1024 * 1024, `${sent} bytes sent before the cut`);
  assert.ok(answered413(fast));

  const slow = await connect({ allowHalfOpen: true });
  slow.socket.write(CHUNKED);
  const trickle = setInterval(() => slow.socket.write(`400\r\n${'x'.repeat(1024)}\r\n`), 20);
  try {
    await send(slow, 1024 * 1024 + CHUNK.length, { chunked: true, end: false });
    await waitFor('the 413 to arrive', () => Promise.resolve(answered413(slow)));
    await closedWithin(slow, 10_000);
  } finally {
    clearInterval(trickle);
  }
});
