// A state-changing request authenticated by the dashboard's cookie must come from the dashboard
// itself. SameSite=Strict stops other sites, but not sibling subdomains (a.example.com and
// admin.example.com are the same site), so the browser's own word on where the request comes
// from is checked too: Sec-Fetch-Site must be same-origin, and Origin, when sent, must be this
// service's origin as the browser sees it (protocol and Host, through TRUST_PROXY's
// X-Forwarded-Proto and X-Forwarded-Host, as Express computes them). Browsers send at least one
// of the two on every POST; a request with neither is not from a browser's page, and a script
// uses the bearer token, which this check does not concern.
import type { Request, Response } from 'express';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const originOf = (url: string): string | undefined => {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
};

export function isCrossOrigin(req: Request): boolean {
  if (SAFE_METHODS.has(req.method)) return false;
  const site = req.headers['sec-fetch-site'];
  const origin = req.headers.origin;
  if (site === undefined && origin === undefined) return true;
  if (site !== undefined && site !== 'same-origin') return true;
  // `Origin: null` on a form post is what our own Referrer-Policy (no-referrer) makes browsers
  // send; with Sec-Fetch-Site, which a page cannot forge, saying same-origin, that is enough.
  if (origin === undefined || (origin === 'null' && site !== undefined)) return false;
  const own = req.host === undefined ? undefined : originOf(`${req.protocol}://${req.host}`);
  return own === undefined || originOf(origin) !== own;
}

const UNTRUSTED_PROXY_HINT =
  '. X-Forwarded-Proto or X-Forwarded-Host came from a proxy this service does not trust: behind one (Coolify, Traefik, nginx), set TRUST_PROXY to the number of proxies';

export function refuseCrossOrigin(req: Request, res: Response): void {
  // The usual cause in a deployment: a proxy in front says https and its host, and this service,
  // not told to trust it, compares the browser's Origin with what the socket saw. Such a request
  // is still refused (the headers could be anyone's); the answer says what to set.
  const untrustedProxy = !req.app.get('trust proxy') && (req.headers['x-forwarded-proto'] !== undefined || req.headers['x-forwarded-host'] !== undefined);
  res.status(403).json({
    error: `cross-origin request refused: a signed-in dashboard action must come from the dashboard’s own page (Origin, Sec-Fetch-Site); scripts use the bearer token${untrustedProxy ? UNTRUSTED_PROXY_HINT : ''}`,
  });
}
