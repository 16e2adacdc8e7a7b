import { describe, expect, it } from 'vitest';
import {
  checkMessage,
  gateErrorMessage,
  gateRunningMessage,
  gateVerdictMessage,
  type GateRequest,
} from '../../../src/chat/health-report.ts';
import type { CheckResult } from '../../../src/health/check-result.ts';
import type { GateReport } from '../../../src/health/health-gate.ts';
import { blockKitProblems } from '../../support/block-kit-limits.ts';

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
    expect(allText(message.blocks)).toContain('1 passed · 1 warning · 0 failed — one reply per check in the thread');
    expect(allText(message.blocks)).not.toContain('*Stop:*');
  });

  it('lists the stop reasons of a failed gate, escaped', () => {
    // Arrange
    const failed = report({ passed: false, stopReasons: ['etcd has no leader', 'Flux <Kustomization> & friends stalled'] });

    // Act
    const message = gateVerdictMessage(failed, REQUEST);

    // Assert
    expect(message.text).toBe(
      '❌ Health gate failed: production (4.2 s). Stop: etcd has no leader; Flux <Kustomization> & friends stalled',
    );
    expect(allText(message.blocks)).toContain('*Stop:*\\n• etcd has no leader\\n• Flux &lt;Kustomization&gt; &amp; friends stalled');
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
