// What the API and admin routes share to check input at the edge: errors name the field and
// what is expected.
import type { Request, RequestParamHandler, Response } from 'express';
import { z } from 'zod';

export const idempotencyKeyHeader = z.string().regex(/^[\x21-\x7e]{1,255}$/, 'Idempotency-Key must be 1-255 printable ASCII characters');
/** The Idempotency-Key header where it is optional: undefined when absent. */
export const optionalIdempotencyKey = (req: Request) => idempotencyKeyHeader.optional().safeParse(req.headers['idempotency-key']);

// Every id we look up (event, order, object, account) is printable ASCII without spaces, as
// parseWebhook stores them; anything else cannot match, and a NUL byte would reach Postgres, whose
// text type refuses it with an error (a 500) instead of finding nothing.
export const lookupId = z.string().regex(/^[\x21-\x7e]{1,255}$/, 'must be an id: 1-255 printable ASCII characters, no spaces');

/** A buyer's email, optional, passed to Stripe Checkout as customer_email (254: the longest an address can be). */
export const optionalEmail = z.email('must be an email address').max(254).optional();

export function badRequest(res: Response, error: z.ZodError): void {
  const issue = error.issues[0];
  const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
  res.status(400).json({ error: `${where}${issue?.message ?? 'invalid request'}` });
}

const idParam = z.object({ id: lookupId });

/** For `router.param('id', …)`: every `:id` of the router is checked before its route runs. */
export const checkIdParam: RequestParamHandler = (_req, res, next, id: unknown) => {
  const parsed = idParam.safeParse({ id });
  if (!parsed.success) return badRequest(res, parsed.error);
  next();
};
