// What the API and admin routes share to check input at the edge: errors name the field and
// what is expected.
import type { Response } from 'express';
import { z } from 'zod';

export const idempotencyKeyHeader = z.string().regex(/^[\x21-\x7e]{1,255}$/, 'Idempotency-Key must be 1-255 printable ASCII characters');

export function badRequest(res: Response, error: z.ZodError): void {
  const issue = error.issues[0];
  const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
  res.status(400).json({ error: `${where}${issue?.message ?? 'invalid request'}` });
}
