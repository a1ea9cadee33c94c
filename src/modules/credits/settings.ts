// The credits module's settings: none of its own. It refunds under the ledger's REFUND_POLICY and
// opens Checkout Sessions that return to the shared checkout pages; both entries are declared
// where they are owned and read once however many modules list them.
import { defineSettings, type SettingValues } from '../../business-module.js';
import { checkoutReturnSettings } from '../checkout/index.js';
import { refundPolicySettings } from '../ledger/index.js';

export const creditsSettings = defineSettings({ ...refundPolicySettings, ...checkoutReturnSettings });
export type CreditsSettings = SettingValues<typeof creditsSettings>;
