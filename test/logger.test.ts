// The logger's second line of defence: a value under authorization, stripe-signature, secret or
// token, one level down in a line's fields, is written as [redacted], whatever logged it. Run
// through the real pino destination in a child process, so what is checked is what a log
// collector would read.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { redactSecrets } from '../src/logger.js';

const run = promisify(execFile);
const LOGGER = new URL('../src/logger.ts', import.meta.url).href;

/** The JSON lines a logger created as the service creates it writes for these calls. */
async function linesOf(calls: string): Promise<Array<Record<string, unknown>>> {
  const script = `
    import { createLogger } from ${JSON.stringify(LOGGER)};
    const logger = createLogger('info');
    ${calls}`;
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script]);
  return stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

test('secrets one level down are censored, in plain objects and in errors', async () => {
  const [request, failure, plain] = await linesOf(`
    logger.info({ eventId: 'evt_1', headers: { authorization: 'Bearer sk_live_abc', 'stripe-signature': 't=1,v1=deadbeef', accept: 'json' } }, 'request');
    logger.error({ err: Object.assign(new Error('card declined'), { token: 'tok_secret', code: 'card_declined' }) }, 'failed');
    logger.info({ eventId: 'evt_2', config: { secret: 'whsec_abc', port: 3000 } }, 'plain');`);
  assert.deepEqual(request!.headers, { authorization: '[redacted]', 'stripe-signature': '[redacted]', accept: 'json' });
  assert.equal(request!.eventId, 'evt_1');
  const err = failure!.err as Record<string, unknown>;
  assert.equal(err.token, '[redacted]');
  assert.equal(err.code, 'card_declined');
  // Still an error to pino's serializer: its type, message and stack are there.
  assert.equal(err.type, 'Error');
  assert.equal(err.message, 'card declined');
  assert.match(String(err.stack), /card declined/);
  assert.deepEqual(plain!.config, { secret: '[redacted]', port: 3000 });
});

test('the caller’s objects are left as they were, and a line with nothing to censor is not copied', () => {
  const headers = { authorization: 'Bearer x', accept: 'json' };
  const fields = { headers, id: 'evt_1' };
  const censored = redactSecrets(fields);
  assert.deepEqual(censored, { headers: { authorization: '[redacted]', accept: 'json' }, id: 'evt_1' });
  assert.deepEqual(fields, { headers: { authorization: 'Bearer x', accept: 'json' }, id: 'evt_1' });
  assert.equal(fields.headers, headers);

  const clean = { eventId: 'evt_1', type: 'checkout.session.completed', attempt: 1, err: new Error('boom') };
  assert.equal(redactSecrets(clean), clean);
});
