// GET /openapi.json: docs/openapi.json, the description of the routes and of the notifications the
// app receives (OpenAPI 3.1), for an app team to read or to generate a client from. No token: it
// tells what a client may call, nothing of the business. Read once, at start-up.
// test/http/openapi.test.ts holds the document to the routes.
import { readFileSync } from 'node:fs';
import { Router } from 'express';

// ../../docs from src/http/ in a checkout, and from dist/src/http/ in the image: the build copies
// the document to dist/docs/.
const DOCUMENT = new URL('../../docs/openapi.json', import.meta.url);

export function openApiRoute(): Router {
  const text = readFileSync(DOCUMENT, 'utf8');
  const router = Router();
  router.get('/openapi.json', (_req, res) => {
    // Any origin: a browser tool (an API explorer, a client generator) reads it from another
    // origin, and what it reads is public. Five minutes' cache: it changes only with a release.
    res.type('json').set({ 'Access-Control-Allow-Origin': '*', 'Cache-Control': 'public, max-age=300' }).send(text);
  });
  return router;
}
