// A page of an account's list as the API takes it (?limit=…&cursor=…): newest first, the cursor
// the last id of the page before (its next_cursor). Runs and usage records page alike.
import { z } from 'zod';

const MAX_PAGE = 100;
const limitRule = `must be a whole number from 1 to ${MAX_PAGE}`;

/** The query of a list whose items are named by `id`: limit 1 to 100 (50 unless given), and the cursor. */
export const pageQuery = (id: z.ZodString) =>
  z.strictObject({
    limit: z.coerce.number({ error: limitRule }).int(limitRule).min(1, limitRule).max(MAX_PAGE, limitRule).default(50),
    cursor: id.optional(),
  });
