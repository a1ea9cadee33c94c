// The client a per-client bound counts (the webhook body budget's share, the limiters): an IPv4
// client of a server listening on `::` is its IPv4 address, an IPv6 client its /56, asked once or
// a thousand times (the keys are kept).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Request } from 'express';
import { clientKey } from '../../src/http/rate-limits.js';

const from = (ip: string | undefined) => ({ ip }) as Request;

test('an IPv4-mapped address is its IPv4 address; IPv6 addresses of one /56 are one client, of another /56 another', () => {
  for (let i = 0; i < 3; i++) {
    assert.equal(clientKey(from('::ffff:203.0.113.7')), '203.0.113.7');
    assert.equal(clientKey(from('203.0.113.7')), '203.0.113.7');
    assert.equal(clientKey(from('2001:db8:0:1200::1')), clientKey(from('2001:db8:0:12ff::2')));
    assert.notEqual(clientKey(from('2001:db8:0:1200::1')), clientKey(from('2001:db8:0:1300::1')));
  }
  assert.equal(clientKey(from(undefined)), '');
});
