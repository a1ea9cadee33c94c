// The billing module's settings: none of its own. A subscription's refunded or disputed period is
// taken back under the ledger's REFUND_POLICY and DISPUTE_POLICY, as a package's order is, and its
// Checkout Session returns to the shared checkout pages; these entries are declared where they are
// owned and read once however many modules list them.
import { defineSettings, type SettingValues } from '../../business-module.js';
import { checkoutReturnSettings } from '../checkout/index.js';
import { disputePolicySettings, refundPolicySettings } from '../ledger/index.js';

export const billingSettings = defineSettings({ ...refundPolicySettings, ...disputePolicySettings, ...checkoutReturnSettings });
export type BillingSettings = SettingValues<typeof billingSettings>;
