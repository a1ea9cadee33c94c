// How many credits a refund takes back, for every module that sells credits (credits' orders,
// billing's paid periods): REFUND_POLICY, declared here once and listed in the settings of each
// module that refunds. 'full' (default) takes a purchase's credits back only once it is fully
// refunded; 'proportional' takes back credits in proportion to the amount refunded so far.
import { z } from 'zod';
import { defineSettings } from '../../business-module.js';

const REFUND_POLICIES = ['full', 'proportional'] as const;
export type RefundPolicy = (typeof REFUND_POLICIES)[number];

export const refundPolicySettings = defineSettings({
  refundPolicy: { env: 'REFUND_POLICY', schema: z.enum(REFUND_POLICIES), example: 'full', default: 'full' satisfies RefundPolicy },
});

/** The credits a purchase's refunds call for so far: a target that never goes down as refunds add up. */
export function revocationTarget(policy: RefundPolicy, purchase: { amount: number; credits: number }, refundedAmount: number): number {
  if (policy === 'proportional') return Math.floor((purchase.credits * refundedAmount) / purchase.amount);
  return refundedAmount >= purchase.amount ? purchase.credits : 0;
}
