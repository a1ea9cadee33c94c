// Per-client-IP rate limits (express-rate-limit, in-memory: per process, so N web containers
// allow N times as much). One number, RATE_LIMIT_PER_MINUTE (default 1200), sets all four:
//   - /api/*: that many requests a minute per IP (1200/min = 20/s sustained, above what one
//     selling application's backend needs, well below what it takes to hurt Postgres);
//   - /admin*: a quarter of it (300/min), an operator with a dashboard or a script;
//   - GET /metrics: a quarter of it too, counting refused requests only: it takes the admin token
//     when METRICS_TOKEN is unset, so it must not be a cheaper place to guess that token, and
//     Prometheus scraping with the right token never counts;
//   - POST /webhooks/stripe: half of it (600/min), counting rejected deliveries only (refused
//     for their signature, shape or size, for a body too slow to arrive, or for the body budget).
// Stripe's bursts are never limited: after an outage Stripe retries every failed delivery at
// once, from its few published IPs, and a limit on them would turn a backlog into a longer one.
// The webhook limiter is therefore consulted only once a delivery is being rejected (bad
// signature, malformed, too large): a delivery that verifies never touches a counter, whatever
// else its IP has sent. Counting by the response status instead (skipSuccessfulRequests) is not
// enough, because the hit is counted while the request is in flight: a burst of valid deliveries
// from one IP would be limited by its own concurrency.
// The client IP is the socket's unless TRUST_PROXY says how many proxies (Traefik) sit in front;
// IPv6 clients are counted per /56 (express-rate-limit's default: one household or server).
import type { Request, RequestHandler } from 'express';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';
import type { Logger } from '../logger.js';

const TOO_MANY_REQUESTS = 'too many requests from this address: retry after the delay in Retry-After';

export interface RateLimits {
  /** For /api/*: counts every request, before authentication (token guessing included). */
  readonly api: RequestHandler;
  readonly admin: RequestHandler;
  /**
   * For a webhook delivery that is being rejected: calls `next` to let the rejection answer,
   * or answers 429 itself once this IP is over its limit.
   */
  readonly webhookRejections: RequestHandler;
  /** For a /metrics request without the right token, as webhookRejections. */
  readonly metricsRejections: RequestHandler;
}

/**
 * The client as the limiters count it: the address Express derives through TRUST_PROXY, IPv6 by
 * /56. For other per-client bounds (the webhook body budget's share), so that a client is one
 * client everywhere.
 */
export function clientKey(req: Request): string {
  // req.ip is undefined only once the socket is gone; such a request has no one to bound.
  const ip = req.ip ?? '';
  let key = clientKeys.get(ip);
  if (key === undefined) {
    if (clientKeys.size >= MAX_CLIENT_KEYS) clientKeys.clear();
    key = ipKeyGenerator(ip, 56);
    clientKeys.set(ip, key);
  }
  return key;
}

// Every webhook asks for its client's key, and ipKeyGenerator parses each IPv6 address it is given
// (an IPv4 client of a server listening on `::` arrives as ::ffff:a.b.c.d): 5 % of a busy service's
// CPU went there (docs/speed.md). The same few addresses
// (Stripe's, the proxy's) ask again and again, so the keys are kept; a flood of new addresses only
// refills the map.
const MAX_CLIENT_KEYS = 10_000;
const clientKeys = new Map<string, string>();

const passThrough: RequestHandler = (_req, _res, next) => next();

/** `perMinute` 0 turns rate limiting off (e.g. when the proxy in front already limits). */
export function rateLimits(perMinute: number, logger: Logger): RateLimits {
  if (perMinute === 0) return { api: passThrough, admin: passThrough, webhookRejections: passThrough, metricsRejections: passThrough };
  const limiter = (name: string, limit: number) =>
    rateLimit({
      windowMs: 60_000,
      limit,
      // RateLimit and RateLimit-Policy on every counted answer, Retry-After on a 429.
      standardHeaders: 'draft-7',
      legacyHeaders: false,
      handler: (_req, res) => void res.status(429).json({ error: TOO_MANY_REQUESTS }),
      // Its configuration checks (e.g. X-Forwarded-For seen but TRUST_PROXY unset) go to our log.
      logger: {
        warn: (err: unknown) => logger.warn({ err, limiter: name }, 'rate limiter configuration'),
        error: (err: unknown) => logger.error({ err, limiter: name }, 'rate limiter configuration'),
      },
    });
  const quarter = Math.max(1, Math.round(perMinute / 4));
  return {
    api: limiter('api', perMinute),
    admin: limiter('admin', quarter),
    webhookRejections: limiter('webhook rejections', Math.max(1, Math.round(perMinute / 2))),
    metricsRejections: limiter('metrics rejections', quarter),
  };
}
