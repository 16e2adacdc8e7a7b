import { describe, expect, it } from 'vitest';
import {
  checkMessage,
  gateErrorMessage,
  gateEvidenceFile,
  gateReplies,
  gateRunningMessage,
  gateVerdictMessage,
  type GateRequest,
} from '../../../src/chat/health-report.ts';
import type { CheckResult } from '../../../src/health/check-result.ts';
import type { GateReport } from '../../../src/health/health-gate.ts';
import { blockKitProblems } from '../../support/block-kit-limits.ts';
import { GATE_AGAIN_ACTION, parseGateAgainValue } from '../../../src/chat/buttons.ts';

const LONG = 'x'.repeat(500);
const HUGE_EVIDENCE = Array.from({ length: 200 }, (_, i) => `${i} ${LONG}`.slice(0, 500));

const REQUEST: GateRequest = { cluster: 'production', requestedBy: 'U0ALICE', requestedAt: '2026-11-29T22:00:00.000Z' };

function check(overrides: Partial<CheckResult> = {}): CheckResult {
  return {
    id: 'nodes',
    title: 'Kubernetes nodes',
    status: 'passed',
    summary: 'all 4 nodes are Ready',
    evidence: [],
    durationMs: 120,
    ...overrides,
  };
}

function report(overrides: Partial<GateReport> = {}): GateReport {
  return {
    cluster: 'production',
    passed: true,
    stopReasons: [],
    checks: [check(), check({ id: 'flux', title: 'Flux', status: 'warning', summary: 'one Kustomization is suspended' })],
    startedAt: '2026-11-29T22:00:01.000Z',
    durationMs: 4200,
    slowestProbeMs: 3100,
    ...overrides,
  };
}

/** Every text of the message's blocks, joined. */
function allText(blocks: unknown): string {
  return JSON.stringify(blocks);
}

describe('health report messages stay inside Block Kit limits', () => {
  it('a failed verdict with 200 stop reasons of 500 characters and 200 checks', () => {
    // Arrange
    const huge = report({
      cluster: `c${'-x'.repeat(19)}`,
      passed: false,
      stopReasons: Array.from({ length: 200 }, () => LONG),
      checks: Array.from({ length: 200 }, (_, i) =>
        check({ id: `c${i}`, title: LONG, status: 'failed', summary: LONG, evidence: HUGE_EVIDENCE }),
      ),
    });

    // Act
    const message = gateVerdictMessage(huge, { ...REQUEST, cluster: huge.cluster });

    // Assert
    expect(blockKitProblems(message)).toEqual([]);
  });

  it('a check with 200 evidence lines of 500 characters and a long title and summary', () => {
    // Act
    const message = checkMessage(check({ status: 'failed', title: LONG, summary: LONG.repeat(10), evidence: HUGE_EVIDENCE }));

    // Assert
    expect(blockKitProblems(message)).toEqual([]);
    expect(allText(message.blocks)).toContain('195 more line(s)');
  });

  it('the running and error messages with long input', () => {
    // Act
    const running = gateRunningMessage({ ...REQUEST, cluster: LONG });
    const error = gateErrorMessage({ ...REQUEST, cluster: LONG }, LONG.repeat(10));

    // Assert
    expect(blockKitProblems(running)).toEqual([]);
    expect(blockKitProblems(error)).toEqual([]);
  });
});

describe('gateVerdictMessage', () => {
  it('puts the verdict first and counts the checks by status', () => {
    // Act
    const message = gateVerdictMessage(report(), REQUEST);

    // Assert
    expect(message.text).toBe('✅ Health gate passed: production (4.2 s).');
    expect(message.blocks![0]).toEqual({
      type: 'header',
      text: { type: 'plain_text', text: '✅ Health gate passed: production', emoji: true },
    });
    expect(allText(message.blocks)).toContain('1 passed · 1 warning · 0 failed — every check in the thread, full evidence attached');
    expect(message.blocks!.some((b) => b['type'] === 'actions')).toBe(false);
    expect(allText(message.blocks)).not.toContain('*Blocking:*');
  });

  it('lists the stop reasons of a failed gate, escaped', () => {
    // Arrange
    const failed = report({ passed: false, stopReasons: ['etcd has no leader', 'Flux <Kustomization> & friends stalled'] });

    // Act
    const message = gateVerdictMessage(failed, REQUEST);

    // Assert
    expect(message.text).toBe(
      '❌ Health gate failed: production (4.2 s). Blocking: etcd has no leader; Flux <Kustomization> & friends stalled',
    );
    expect(allText(message.blocks)).toContain('*Blocking:*\\n• etcd has no leader\\n• Flux &lt;Kustomization&gt; &amp; friends stalled');
  });
});

describe('checkMessage', () => {
  it('does not repeat the title that a failed probe put in its summary', () => {
    // Act
    const message = checkMessage(check({ status: 'failed', summary: 'Kubernetes nodes: 10.0.30.21 is NotReady' }));

    // Assert
    expect(message.text).toBe('❌ Kubernetes nodes: 10.0.30.21 is NotReady');
    expect(message.blocks![0]).toEqual({
      type: 'section',
      text: { type: 'mrkdwn', text: '❌ *Kubernetes nodes*: 10.0.30.21 is NotReady (120 ms)' },
    });
  });

  it("shows a worker's <none> roles literally instead of as Slack markup", () => {
    // Arrange: the nodes check writes `<none>` for a node without roles, as kubectl does.
    const nodes = check({ evidence: ['talos-w-1 (10.0.30.21)  Ready  roles: <none>  v1.35.0 & v1.34.2'] });

    // Act
    const message = checkMessage(nodes);

    // Assert
    expect(message.blocks![1]).toEqual({
      type: 'section',
      text: { type: 'mrkdwn', text: '```talos-w-1 (10.0.30.21)  Ready  roles: &lt;none&gt;  v1.35.0 &amp; v1.34.2```' },
    });
  });

  it('adds no evidence block when there is no evidence', () => {
    // Act
    const message = checkMessage(check());

    // Assert
    expect(message.blocks).toHaveLength(1);
  });
});

describe('a failed gate says what to fix and offers to run it again', () => {
  it('names one fix per failing check and carries [Run the gate again] naming the cluster and the gate job', () => {
    // Arrange
    const failed = report({
      passed: false,
      stopReasons: ['a PodDisruptionBudget would block the drain'],
      checks: [
        check(),
        check({ id: 'disruption-budgets', title: 'PodDisruptionBudgets', status: 'failed', summary: 'PDB apps/postgres blocks' }),
      ],
    });

    // Act
    const message = gateVerdictMessage(failed, REQUEST, { gateJob: 'health-1234.5678' });

    // Assert
    const fixes = message.blocks!.find((b) => JSON.stringify(b).includes('What to fix'));
    expect(JSON.stringify(fixes)).toContain('*PodDisruptionBudgets*: Scale the named workload up or relax its PodDisruptionBudget');
    expect(JSON.stringify(fixes)).not.toContain('Kubernetes nodes');
    const buttons = message.blocks!.filter((b) => b['type'] === 'actions').flatMap((b) => b['elements'] as Record<string, unknown>[]);
    expect(buttons.map((b) => [b['action_id'], b['value']])).toEqual([[GATE_AGAIN_ACTION, 'production/health-1234.5678']]);
    expect(parseGateAgainValue('production/health-1234.5678')).toEqual({ cluster: 'production', gateJob: 'health-1234.5678' });
    expect(parseGateAgainValue('production/../x y')).toBeUndefined();
    expect(blockKitProblems(message)).toEqual([]);
  });

  it('offers no button on a passed gate', () => {
    const message = gateVerdictMessage(report(), REQUEST, { gateJob: 'health-1' });
    expect(message.blocks!.some((b) => b['type'] === 'actions')).toBe(false);
  });
});

describe('gateReplies', () => {
  it('puts every passing check on one line of one reply, and each unwell check in its own reply with its evidence and fix', () => {
    // Arrange
    const gate = report({
      checks: [
        check({
          id: 'talos-version',
          title: 'talosctl version (10.0.30.11, 10.0.30.12)',
          summary: 'all 2 nodes run Talos v1.11.6',
          evidence: ['10.0.30.11 v1.11.6'],
        }),
        check({ summary: `all 4 nodes are Ready ${'and more '.repeat(30)}` }),
        check({
          id: 'flux',
          title: 'Flux',
          status: 'warning',
          summary: 'one Kustomization is suspended',
          evidence: ['Kustomization flux-system/apps suspended'],
        }),
      ],
    });

    // Act
    const replies = gateReplies(gate);

    // Assert
    expect(replies.map((r) => r.key)).toEqual(['passed', 'check-flux']);
    const lines = replies[0]!.message.text.split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe('✅ talosctl version: all 2 nodes run Talos v1.11.6');
    expect(lines[1]).toMatch(/^✅ Kubernetes nodes: all 4 nodes are Ready and more .*…$/);
    expect(lines[1]!.length).toBeLessThan(140);
    expect(replies[0]!.message.blocks).toHaveLength(1);
    expect(allText(replies[0]!.message.blocks)).not.toContain('```');
    expect(allText(replies[1]!.message.blocks)).toContain('```Kustomization flux-system/apps suspended```');
    expect(allText(replies[1]!.message.blocks)).toContain('*What to fix:* Fix the named Flux object');
  });

  it('attaches every check with its whole evidence as one file', () => {
    // Act
    const file = gateEvidenceFile(report({ checks: [check({ evidence: ['talos-w-1 Ready'] })] }));

    // Assert
    expect(file.filename).toBe('health-gate-production-20261129T220001Z.txt');
    expect(file.content).toContain('PASSED  Kubernetes nodes (120 ms)\n  all 4 nodes are Ready\n    talos-w-1 Ready');
  });
});
