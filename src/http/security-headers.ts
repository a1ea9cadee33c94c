// Headers on every response, the webhook's and the API's included: cheap, and a reviewer (or a
// browser) should not have to know which routes ever return something a browser might render.
//   - X-Content-Type-Options: nosniff: a JSON error echoing nothing is still never run as script;
//   - Referrer-Policy: no-referrer: a link followed from the dashboard does not carry its URL out;
//   - Strict-Transport-Security over HTTPS only (a browser ignores it over HTTP anyway), for a
//     year, without includeSubDomains: the operator's other hosts are not ours to pin.
// req.secure honours TRUST_PROXY: behind Traefik it reads the proxy's X-Forwarded-Proto.
import type { RequestHandler } from 'express';

const HSTS = 'max-age=31536000';

export const securityHeaders: RequestHandler = (req, res, next) => {
  // setHeader, not res.set: this runs before every webhook delivery, and res.set does more work.
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  if (req.secure) res.setHeader('Strict-Transport-Security', HSTS);
  next();
};
