// What Postgres' text type can store: any string without a NUL character (U+0000), which it
// refuses with an error (SQLSTATE 22021) that would reach the client as a 500. Free text from
// outside (a catalog item's name) is checked with this at the edge, so a NUL is a 400 naming the
// field and nothing is written. Ids need nothing more: their patterns allow printable ASCII only.
import { z } from 'zod';

export const postgresText = z.string().refine((text) => !text.includes('\u0000'), 'must not contain a NUL character (\\u0000): Postgres text cannot store one');
