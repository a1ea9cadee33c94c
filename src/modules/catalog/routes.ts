// The catalog's admin API, mounted by the module that owns each kind: GET and POST
// /admin/api/<noun>s, PATCH /admin/api/<noun>s/:id. Bodies are checked here, errors name the field.
import { Router } from 'express';
import type { z } from 'zod';
import { badRequest, checkIdParam, type ModuleRouteContext } from '../../business-module.js';
import { addCatalogItem, type AddOutcome, type CatalogKind, type NewCatalogItem } from './catalog-items.js';
import { catalogChange, FIXED_FIELDS } from './fields.js';

export function catalogAdminRoutes<I extends NewCatalogItem>(kind: CatalogKind<I>, body: z.ZodType<I>, context: ModuleRouteContext<unknown>): Router {
  const { db, stripeCalls } = context;
  const path = `/${kind.noun}s`;
  const router = Router();
  router.param('id', checkIdParam);

  router.get(path, async (_req, res) => {
    res.json(await kind.list(db));
  });

  router.post(path, async (req, res) => {
    const input = body.safeParse(req.body ?? {});
    if (!input.success) return badRequest(res, input.error);
    const outcome = await addCatalogItem(kind, { db, stripeCalls }, input.data);
    const { status, body: answer } = addAnswer(outcome);
    res.status(status).json(answer);
  });

  router.patch(`${path}/:id`, async (req, res) => {
    const fixed = FIXED_FIELDS.filter((field) => Object.hasOwn((req.body ?? {}) as object, field));
    if (fixed.length > 0) {
      return void res.status(409).json({
        error: `${fixed.join(', ')}: a ${kind.noun}'s ${fixed.join(', ')} never change${fixed.length === 1 ? 's' : ''} in place; create a new one and archive this`,
      });
    }
    const change = catalogChange.safeParse(req.body ?? {});
    if (!change.success) return badRequest(res, change.error);
    const item = await kind.change(db, req.params.id, change.data);
    if (!item) return void res.status(404).json({ error: `${kind.noun} not found` });
    res.json(item);
  });

  return router;
}

function addAnswer(outcome: AddOutcome): { status: number; body: unknown } {
  switch (outcome.outcome) {
    case 'created':
      return { status: 201, body: outcome.item };
    case 'taken':
      return { status: 409, body: { error: outcome.reason } };
    case 'price_refused':
      return { status: 422, body: { error: `stripe_price_id: ${outcome.reason}` } };
    case 'stripe_busy':
      return { status: 503, body: { error: 'too many calls to Stripe in flight; retry shortly' } };
    case 'stripe_failed':
      return { status: 502, body: { error: `Stripe could not be asked for the Price (${outcome.reason}); retry` } };
  }
}
