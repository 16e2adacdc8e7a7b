import { describe, expect, it } from 'vitest';
import { presentationOf } from '../../../jobs/playbooks/index.ts';
import { k8sUpgradeTexts } from '../../../jobs/playbooks/k8s-upgrade/texts.ts';
import { ACTION, buttonValue } from '../../../src/chat/buttons.ts';
import { operationRootMessage } from '../../../src/chat/operation-root.ts';
import { failureMessage } from '../../../src/chat/stop-messages.ts';
import { dryRunMessage, dryRunSummary, upgradeProgressMessage } from '../../../jobs/playbooks/k8s-upgrade/messages.ts';
import type { Operation } from '../../../src/ops/operation.ts';
import { parseUpgradeK8sOutput } from '../../../src/talos/parse-upgrade-k8s.ts';
import { blockKitProblems } from '../../support/block-kit-limits.ts';
import { anOperation } from '../../support/builders.ts';

/** `talosctl upgrade-k8s --to 1.34.0 --dry-run` with the deprecation warning, shaped like the docs' recorded run. */
const DRY_RUN = `WARNING: found resources which are going to be deprecated/migrated in the version 1.34.0
RESOURCE                                                               COUNT
validatingwebhookconfigurations.v1beta1.admissionregistration.k8s.io   4
customresourcedefinitions.v1beta1.apiextensions.k8s.io                 25
automatically detected the lowest Kubernetes version 1.33.4
discovered controlplane nodes ["172.20.0.2" "172.20.0.3" "172.20.0.4"]
discovered worker nodes ["172.20.0.5" "172.20.0.6"]
checking for removed Kubernetes component flags
checking for removed Kubernetes API resource versions
updating "kube-apiserver" to version "1.34.0"
 > "172.20.0.2": starting update
 > update kube-apiserver: v1.33.4 -> 1.34.0
 > skipped in dry-run
`;

function operation(overrides: Partial<Operation> = {}): Operation {
  return anOperation({
    kind: 'k8s-upgrade',
    state: 'failed',
    revision: 3,
    target: { version: '1.34.0', fromVersion: '1.33.4', talosVersion: 'v1.11.6' },
    steps: [
      { id: 'snapshot', kind: 'snapshot', status: 'done' },
      { id: 'dry-run', kind: 'k8s-dry-run', node: '172.20.0.2', status: 'done' },
      { id: 'apply', kind: 'k8s-apply', node: '172.20.0.2', status: 'failed' },
      { id: 'verify', kind: 'k8s-verify', status: 'pending' },
    ],
    ...overrides,
  });
}

describe('dryRunMessage', () => {
  it('calls out the deprecated APIs the dry run found, one line each, and shows short output inline', () => {
    const report = parseUpgradeK8sOutput(DRY_RUN);
    const lines = DRY_RUN.trimEnd().split('\n');

    const message = dryRunMessage(operation(), report, '172.20.0.2', { lines });

    expect(message.text).toBe(
      '📋 Dry run of `talosctl upgrade-k8s --to 1.34.0` on 172.20.0.2: 1.33.4 → 1.34.0, 3 control plane(s), 2 worker(s); would update kube-apiserver; DEPRECATED APIs IN USE: 2 resource kind(s)',
    );
    const blocks = JSON.stringify(message.blocks);
    expect(blocks).toContain('Deprecated or removed APIs found');
    expect(blocks).toContain('• validatingwebhookconfigurations.v1beta1.admissionregistration.k8s.io: 4');
    expect(blocks).toContain('• customresourcedefinitions.v1beta1.apiextensions.k8s.io: 25');
    expect(blocks).toContain('skipped in dry-run');
    expect(blockKitProblems(message)).toEqual([]);
  });

  it('names the attached file instead of pasting long output', () => {
    const report = parseUpgradeK8sOutput(DRY_RUN.split('\n').slice(4).join('\n'));
    const lines = Array.from({ length: 300 }, (_, i) => ` > processing manifest ${i}`);

    const message = dryRunMessage(operation(), report, '172.20.0.2', { lines, file: 'op-1a2b3c4d5e-upgrade-k8s-dry-run.txt' });

    expect(dryRunSummary(report, '172.20.0.2')).toContain('no deprecated-API warnings');
    expect(JSON.stringify(message.blocks)).toContain('Full output (300 lines) attached as `op-1a2b3c4d5e-upgrade-k8s-dry-run.txt`');
    expect(JSON.stringify(message.blocks)).not.toContain('processing manifest');
  });
});

describe('failureMessage with a Retry', () => {
  it('carries a Retry button with the offered nonce while the retry is offered', () => {
    const op = operation({ retry: { step: 'apply', nonce: 'r3try', state: 'offered' } });

    const message = failureMessage(
      op,
      op.steps[2],
      'talosctl upgrade-k8s failed: context deadline exceeded',
      ['line 1'],
      presentationOf(op.kind),
    );

    const button = (message.blocks ?? [])
      .flatMap((b) => (b.elements as { action_id?: string; value?: string }[] | undefined) ?? [])
      .find((e) => e.action_id === ACTION.retry);
    expect(button?.value).toBe(buttonValue(op.id, 'r3try'));
    expect(message.text).toContain('❌ Stopped at upgrade: talosctl upgrade-k8s on 172.20.0.2: talosctl upgrade-k8s failed');
  });

  it("says upgrade-k8s is safe to run again only of a Kubernetes upgrade's apply, never of a Terraform change stopped before its apply", () => {
    const k8s = failureMessage(
      operation({ retry: { step: 'apply', nonce: 'r3try', state: 'offered' } }),
      undefined,
      'failed',
      [],
      k8sUpgradeTexts,
    );
    const terraform = anOperation({
      kind: 'terraform-apply',
      state: 'failed',
      steps: [
        { id: 'snapshot', kind: 'snapshot', status: 'failed' },
        { id: 'tofu-apply', kind: 'tofu-apply', status: 'pending' },
      ],
      retry: { step: 'snapshot', nonce: 'r3try', state: 'offered' },
    });
    const stopped = failureMessage(
      terraform,
      terraform.steps[0],
      'the health gate before starting failed',
      [],
      presentationOf(terraform.kind),
    );

    expect(JSON.stringify(k8s.blocks)).toContain('talosctl upgrade-k8s is safe to run again');
    expect(JSON.stringify(stopped.blocks)).not.toContain('upgrade-k8s');
    expect(JSON.stringify(stopped.blocks)).toContain('A step that needs an approval asks for it again');
  });

  it('has no Retry button once it was used, or when none was offered', () => {
    for (const retry of [{ step: 'apply', nonce: 'r3try', state: 'used' as const }, undefined]) {
      const message = failureMessage(operation({ retry }), undefined, 'failed', [], k8sUpgradeTexts);
      expect(JSON.stringify(message.blocks)).not.toContain(ACTION.retry);
    }
  });
});

describe('upgradeProgressMessage', () => {
  it('marks the current milestone as running and the earlier ones as done', () => {
    const message = upgradeProgressMessage({
      version: '1.34.0',
      node: '172.20.0.2',
      milestones: ['updating "kube-apiserver" to version "1.34.0"', 'updating kubelet to version "1.34.0"'],
      updated: 4,
      lines: 61,
      outcome: 'running',
      elapsedMs: 12_500,
    });

    expect(message.text).toBe('⏳ talosctl upgrade-k8s --to 1.34.0 on 172.20.0.2 running (12.5 s, 4 update(s) done, 61 lines of output)');
    expect(JSON.stringify(message.blocks)).toContain('✔️ updating \\"kube-apiserver\\" to version \\"1.34.0\\"\\n⏳ updating kubelet');
  });
});

describe('operationRootMessage of a Kubernetes upgrade', () => {
  it('names both version forms: the CLI without v, Terraform with it', () => {
    const message = operationRootMessage(operation({ state: 'planned', planNonce: 'pl4n' }), k8sUpgradeTexts);

    expect(message.text).toContain('Kubernetes upgrade 1.33.4 → 1.34.0: production');
    const blocks = JSON.stringify(message.blocks);
    expect(blocks).toContain('`talosctl upgrade-k8s --to 1.34.0`, no leading v');
    expect(blocks).toContain("Terraform's `talos_kubernetes_version` takes `v1.34.0` (leading v)");
    expect(blocks).toContain('removed and deprecated APIs reviewed');
    expect(blocks).toContain(ACTION.start);
  });
});
