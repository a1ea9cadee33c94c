// The catalog: packages (the credits module's table) and plans (billing's), managed without SQL
// through the admin API, npm run catalog and the dashboard (docs/catalog.md). Each module owns its
// table and names it (catalogKind); what both share is here: the writes of those tables, the
// fields and their checks, the Stripe Price a row may be sold through (checked at creation,
// followed by price.updated and product.updated), the steps of adding one and importing from
// Stripe. Nothing to run: no event, table or route of its own, so it is no entry of
// src/modules/index.ts.
export { addCatalogItem, archiveCatalogItem, type AddOutcome, type CatalogItem, type CatalogKind } from './catalog-items.js';
export { catalogKind, type CatalogColumns } from './catalog-table.js';
export { catalogFields, checkPlanPeriod, creditsOrNone, planPeriodFields, type PlanInterval } from './fields.js';
export { importStripeCatalog, type ImportResult } from './import-stripe.js';
export { catalogPriceHandlers } from './price-events.js';
export { catalogAdminRoutes } from './routes.js';
