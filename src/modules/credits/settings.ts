// The credits module's settings: none of its own. It refunds under the ledger's REFUND_POLICY,
// takes disputed credits back under the ledger's DISPUTE_POLICY, and opens Checkout Sessions that
// return to the shared checkout pages; these entries are declared where they are owned and read
// once however many modules list them.
import { defineSettings, type SettingValues } from '../../business-module.js';
import { checkoutReturnSettings } from '../checkout/index.js';
import { disputePolicySettings, refundPolicySettings } from '../ledger/index.js';

export const creditsSettings = defineSettings({ ...refundPolicySettings, ...disputePolicySettings, ...checkoutReturnSettings });
export type CreditsSettings = SettingValues<typeof creditsSettings>;
