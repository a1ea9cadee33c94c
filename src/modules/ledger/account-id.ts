// What an account is called: the selling application's own user id, any short printable token.
// The ledger keys balances by it; every route that names an account (a quota, a checkout, a
// subscription) checks it with this one schema.
import { z } from 'zod';

export const accountId = z.string().regex(/^[\w.@:-]{1,128}$/, 'must be 1-128 letters, digits or . _ @ : -');
