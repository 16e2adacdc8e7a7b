import { z } from 'zod';
import type { Playbook } from '../../jobs/engine/playbook.ts';
import { k8sUpgradeTexts } from '../../jobs/playbooks/k8s-upgrade/texts.ts';

/**
 * A playbook for the engine's own tests: `/talos test`, planned, holding the cluster's lock, with no
 * steps, no approval and no checks of its own. A test overrides what it exercises (the steps, the
 * approvals, what a step does).
 */
export function aTestPlaybook(overrides: Partial<Playbook> = {}): Playbook {
  return {
    command: {
      name: 'test',
      words: ['test'],
      argument: { kind: 'none' },
      help: 'a test playbook',
      group: 'change',
      example: '/talos test',
      request: { what: 'a test', refuseAtOnce: {}, queued: (op) => op.id },
    },
    startedBy: 'operators',
    heldByWindows: true,
    texts: k8sUpgradeTexts,
    data: z.unknown(),
    checks: {},
    start: 'plan',
    lock: 'cluster',
    preflight: () => Promise.resolve({ refusals: [], notes: [], steps: [], target: {} }),
    needsApproval: () => false,
    approvalMessage: () => Promise.resolve({ text: 'never asked' }),
    runStep: (_ctx, _op, s) => Promise.resolve({ event: `ran ${s.id}`, detail: 'ok' }),
    complete: () => Promise.resolve({ validation: 'all steps ran', followUp: { text: 'follow-up' } }),
    retryFrom: (s) => s.id,
    ...overrides,
  };
}
