// The billing module's settings: none of its own. A subscription's refunded period is taken back
// under the ledger's REFUND_POLICY, as a package's order is, and its Checkout Session returns to
// the shared checkout pages; both entries are declared where they are owned and read once however
// many modules list them.
import { defineSettings, type SettingValues } from '../../business-module.js';
import { checkoutReturnSettings } from '../checkout/index.js';
import { refundPolicySettings } from '../ledger/index.js';

export const billingSettings = defineSettings({ ...refundPolicySettings, ...checkoutReturnSettings });
export type BillingSettings = SettingValues<typeof billingSettings>;
