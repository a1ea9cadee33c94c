// npm run catalog: the packages and plans on sale, managed without SQL; the same operations as
// /admin/api/packages and /admin/api/plans (src/modules/catalog/).
import { Counter, Histogram } from 'prom-client';
import { runScript, UsageError, type ScriptContext } from '../src/cli/script.js';
import type { Db } from '../src/db/database.js';
import { addCatalogItem, archiveCatalogItem, importStripeCatalog, type AddOutcome, type CatalogItem, type ImportResult } from '../src/modules/catalog/index.js';
import { catalogKinds } from '../src/modules/index.js';
import { createStripeClient } from '../src/stripe/client.js';
import { StripeCalls } from '../src/stripe/stripe-calls.js';

type Kind = keyof typeof catalogKinds;

const usage = `usage: npm run catalog -- list [--json]
       npm run catalog -- add-package --id <id> --name <name> --amount <minor units> --currency <iso> --credits <n> [--price <price_…>] [--features <a,b>] [--json]
       npm run catalog -- add-plan --id <id> --name <name> --amount <minor units> --currency <iso> --credits <n>
                         --interval day|week|month|year [--interval-count <n>] [--price <price_…>] [--features <a,b>] [--json]
       npm run catalog -- archive <id> [--kind package|plan] [--json]
       npm run catalog -- import-stripe --product <prod_…> | --all [--json]

list shows every package and plan, archived ones too. add-package and add-plan create one
(amount in the currency's minor unit: 1900 = CHF 19.00; a plan's credits are per period); with
--price, Checkout sells that Stripe Price, which must say the same amount, currency, one-time or
recurring and interval (needs STRIPE_SECRET_KEY); --features names the Stripe Features (lookup
keys, comma-separated) its Product grants, shown in the catalog (a package with features has
Checkout make a Stripe customer, whose entitlements become the account's). Amount, currency,
credits, interval, price and features never change afterwards: add a new one and archive the old. archive takes it off sale: the app
no longer lists it and new checkouts are refused, while orders and subscriptions already made
keep granting and renewing. import-stripe makes an item of every active Price of the Product (or
of every active Product) whose metadata.credits says how many credits it grants: a package for a
one-time Price, a plan for a recurring one, named by the Price's lookup_key (else its id in lower
case); a Price an item already sells is left alone, so running it again adds nothing (needs
STRIPE_SECRET_KEY). Exits 1 when the catalog refused the change, or skipped a Price.`;

// Each field's command-line option, so that an error names what to fix.
const OPTION_OF: Record<string, string> = { stripe_price_id: '--price', interval_count: '--interval-count' };
const optionOf = (field: string) => OPTION_OF[field] ?? `--${field}`;

runScript({
  usage,
  options: {
    id: { type: 'string' },
    name: { type: 'string' },
    amount: { type: 'string' },
    currency: { type: 'string' },
    credits: { type: 'string' },
    price: { type: 'string' },
    features: { type: 'string' },
    interval: { type: 'string' },
    'interval-count': { type: 'string' },
    kind: { type: 'string' },
    product: { type: 'string' },
    all: { type: 'boolean' },
  },
  positionals: true,
  async run({ values, positionals }, ctx) {
    const [command, ...rest] = positionals;
    const { db } = await ctx.database();
    switch (command) {
      case 'list':
        noMore(rest);
        return listed(await Promise.all([catalogKinds.package.kind.list(db), catalogKinds.plan.kind.list(db)]));
      case 'add-package':
        noMore(rest);
        return added('package', await add('package', values, ctx, db));
      case 'add-plan':
        noMore(rest);
        return added('plan', await add('plan', values, ctx, db));
      case 'import-stripe': {
        noMore(rest);
        if ((typeof values.product === 'string') === (values.all === true)) throw new UsageError('import-stripe takes --product <prod_…> or --all');
        const which = typeof values.product === 'string' ? { productId: values.product } : { all: true as const };
        return imported(await importStripeCatalog({ db, stripeCalls: stripeCalls(ctx, true) }, catalogKinds, which));
      }
      case 'archive':
        if (rest.length !== 1) throw new UsageError('archive takes one id');
        return archive(db, rest[0]!, values.kind);
      default:
        throw new UsageError(command === undefined ? 'name a command: list, add-package, add-plan, archive or import-stripe' : `unknown command "${command}"`);
    }
  },
});

function noMore(rest: string[]): void {
  if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"`);
}

function listed([packages, plans]: [CatalogItem[], CatalogItem[]]) {
  const line = (item: CatalogItem) =>
    `  ${item.active ? ' ' : 'archived '}${item.id}  ${item.name}  ${item.amount} ${item.currency}  ${item.credits} credits` +
    `${item.interval ? ` every ${item.interval_count} ${item.interval}` : ''}${item.stripe_price_id ? `  Price ${item.stripe_price_id}` : ''}` +
    `${item.features.length > 0 ? `  features ${item.features.join(', ')}` : ''}`;
  const lines = [`packages:${packages.length ? '' : ' none'}`, ...packages.map(line), `plans:${plans.length ? '' : ' none'}`, ...plans.map(line)];
  return { json: { packages, plans }, text: lines.join('\n') };
}

async function add(kind: Kind, values: Record<string, unknown>, ctx: ScriptContext, db: Db['db']): Promise<AddOutcome> {
  const number = (option: unknown) => (typeof option === 'string' && /^\d+$/.test(option) ? Number(option) : option);
  const raw = {
    id: values.id,
    name: values.name,
    amount: number(values.amount),
    currency: values.currency,
    credits: number(values.credits),
    ...(values.price !== undefined && { stripe_price_id: values.price }),
    ...(typeof values.features === 'string' && { features: values.features.split(',').filter((key) => key !== '') }),
    ...(kind === 'plan' && { interval: values.interval, ...(values['interval-count'] !== undefined && { interval_count: number(values['interval-count']) }) }),
  };
  if (kind === 'package' && (values.interval !== undefined || values['interval-count'] !== undefined))
    throw new UsageError('a package has no --interval: add-plan makes a plan');
  const { kind: catalogKind, input } = catalogKinds[kind];
  const parsed = input.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UsageError(`${optionOf(String(issue.path[0]))}: ${issue.message}`);
  }
  return addCatalogItem(catalogKind as never, { db, stripeCalls: stripeCalls(ctx, parsed.data.stripe_price_id !== undefined) }, parsed.data as never);
}

/** Stripe is asked only about Prices; a catalog without them needs no key. */
function stripeCalls(ctx: ScriptContext, asksStripe: boolean): StripeCalls {
  const { stripeSecretKey, stripeApiBase, stripeTimeoutMs } = ctx.config;
  if (asksStripe && !stripeSecretKey) throw new UsageError('STRIPE_SECRET_KEY is required: Prices are read from Stripe');
  const stripe = createStripeClient(stripeSecretKey ?? 'sk_unused', stripeApiBase, { timeoutMs: stripeTimeoutMs });
  // One call per run: counted nowhere, since no /metrics serves this process.
  const metrics = {
    stripeRequestSeconds: new Histogram({ name: 'stripe_request_seconds', help: 'unused', labelNames: ['operation', 'outcome'] as const, registers: [] }),
    stripeCallsRefused: new Counter({ name: 'stripe_calls_refused_total', help: 'unused', labelNames: ['operation'] as const, registers: [] }),
  };
  return new StripeCalls(stripe, { maxConcurrent: 1, timeoutMs: stripeTimeoutMs, metrics, logger: ctx.logger });
}

function added(kind: Kind, outcome: AddOutcome) {
  switch (outcome.outcome) {
    case 'created':
      return {
        json: outcome,
        text: `added ${kind} ${outcome.item.id}: ${outcome.item.amount} ${outcome.item.currency}, ${outcome.item.credits} credits${outcome.item.stripe_price_id ? `, sold as Price ${outcome.item.stripe_price_id}` : ''}`,
      };
    case 'taken':
      return { json: outcome, text: `refused: ${outcome.reason}`, exitCode: 1 };
    case 'price_refused':
      return { json: outcome, text: `refused: --price: ${outcome.reason}`, exitCode: 1 };
    case 'stripe_busy':
    case 'stripe_failed':
      return {
        json: outcome,
        text: `Stripe could not be asked for the Price (${outcome.outcome === 'stripe_failed' ? outcome.reason : 'busy'}); nothing was added, run it again`,
        exitCode: 1,
      };
  }
}

function imported(result: ImportResult) {
  const lines = [
    `created ${result.created.length}, already in the catalog ${result.existing.length}, skipped ${result.skipped.length}`,
    ...result.created.map(
      (item) =>
        `  created ${item.interval ? 'plan' : 'package'} ${item.id}: ${item.amount} ${item.currency}, ${item.credits} credits, Price ${item.stripe_price_id}`,
    ),
    ...result.existing.map((e) => `  exists  ${e.id}: Price ${e.stripe_price_id}`),
    ...result.skipped.map((s) => `  skipped ${s.stripe_id}: ${s.reason}`),
  ];
  return { json: result, text: lines.join('\n'), exitCode: result.skipped.length > 0 ? 1 : 0 };
}

async function archive(db: Db['db'], id: string, kindOption: unknown) {
  if (kindOption !== undefined && kindOption !== 'package' && kindOption !== 'plan') throw new UsageError('--kind must be package or plan');
  const kinds: readonly Kind[] = kindOption === undefined ? ['package', 'plan'] : [kindOption];
  const found: Kind[] = [];
  for (const kind of kinds) if (await catalogKinds[kind].kind.find(db, id)) found.push(kind);
  if (found.length > 1) throw new UsageError(`both a package and a plan are named ${id}: say which with --kind package or --kind plan`);
  const [kind] = found;
  if (!kind) return { json: { archived: null, not_found: id }, text: `no ${kinds.join(' or ')} is named ${id}`, exitCode: 1 };
  const item = await archiveCatalogItem(catalogKinds[kind].kind, db, id);
  return { json: { archived: kind, item }, text: `archived ${kind} ${id}: no longer on sale; what was sold keeps granting` };
}
