import { describe, expect, it } from 'vitest';
import type { Operation } from '../../../src/ops/operation.ts';
import { maintenanceRecordMarkdown } from '../../../src/chat/maintenance-record.ts';
import { anOperation } from '../../support/builders.ts';
import { presentationOf } from '../../../jobs/playbooks/index.ts';

const IMAGE = 'factory.talos.dev/nocloud-installer/376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba:v1.12.1';

/** A completed production Talos upgrade of one worker and one control plane. */
function completedUpgrade(overrides: Partial<Operation> = {}): Operation {
  return anOperation({
    state: 'completed',
    revision: 42,
    steps: [
      { id: 's0', kind: 'snapshot', status: 'done', detail: 'snapshot etcd-20261129-2201.db, 18874368 bytes' },
      { id: 's1', kind: 'upgrade-worker', node: '10.0.30.21', image: IMAGE, status: 'done', detail: 'v1.11.6 → v1.12.1 | Ready' },
      { id: 's2', kind: 'upgrade-control-plane', node: '10.0.30.11', image: IMAGE, status: 'skipped', detail: 'already on v1.12.1' },
      { id: 's3', kind: 'verify', status: 'done' },
    ],
    approvals: [
      {
        step: 's2',
        nonce: 'n0nce',
        messageTs: '1700000000.000100',
        requestedAt: '2026-11-29T22:20:00.000Z',
        expiresAt: '2026-11-29T23:20:00.000Z',
        state: 'approved',
        by: 'U0CAROL',
        at: '2026-11-29T22:21:00.000Z',
      },
    ],
    snapshot: {
      id: 'etcd-20261129-2201',
      path: '/var/backups/talos-etcd/etcd-20261129-2201.db',
      bytes: 18_874_368,
      sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      revision: 918_273,
      node: '10.0.30.12',
      takenAt: '2026-11-29T22:01:00.000Z',
    },
    startedBy: 'U0BOB',
    startedAt: '2026-11-29T22:05:00.000Z',
    endedAt: '2026-11-29T22:40:00.000Z',
    commit: '9fceb02d0ae598e95dc970b74767f19372d61af8',
    validation: 'health gate passed after the last node',
    audit: [
      { seq: 1, at: '2026-11-29T22:00:00.000Z', actor: 'U0ALICE', event: 'planned' },
      { seq: 2, at: '2026-11-29T22:05:00.000Z', actor: 'U0BOB', event: 'started' },
      { seq: 3, at: '2026-11-29T22:21:00.000Z', actor: 'U0CAROL', event: 'approved', detail: 'control plane 10.0.30.11' },
    ],
    confirmedReview: ['Talos release notes reviewed', 'the exact target tested in staging'],
    ...overrides,
  });
}

describe('maintenanceRecordMarkdown', () => {
  it('writes the header facts: commit, snapshot, who, when and the validation', () => {
    // Act
    const lines = maintenanceRecordMarkdown(completedUpgrade()).split('\n');

    // Assert
    expect(lines.slice(0, 13)).toEqual([
      '# Maintenance record op-1a2b3c4d5e',
      '',
      '- Cluster: production',
      '- Operation: talos-upgrade to v1.12.1 (from v1.11.6)',
      '- Result: completed',
      '- Commit: 9fceb02d0ae598e95dc970b74767f19372d61af8',
      '- Snapshot: etcd-20261129-2201 (18874368 bytes, sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855, revision 918273, from 10.0.30.12, at /var/backups/talos-etcd/etcd-20261129-2201.db)',
      '- Requested by: U0ALICE at 2026-11-29T22:00:00.000Z',
      '- Started by: U0BOB at 2026-11-29T22:05:00.000Z',
      '- Ended: 2026-11-29T22:40:00.000Z',
      '- Validation: health gate passed after the last node',
      '- Review confirmed by the starter: Talos release notes reviewed; the exact target tested in staging',
      '',
    ]);
  });

  it('names the operation as people do, with its kind and address beside', () => {
    // Arrange
    const replace = completedUpgrade({ kind: 'node-replace', target: { node: '10.0.30.12', nodeName: 'talos-prd-cp-2' } });

    // Act
    const lines = maintenanceRecordMarkdown(replace, undefined, presentationOf('node-replace')).split('\n');

    // Assert
    expect(lines[3]).toBe('- Operation: Replacement of talos-prd-cp-2 — node-replace of 10.0.30.12');
  });

  it('writes one table row per step with node, image and result, keeping the table intact', () => {
    // Act
    const markdown = maintenanceRecordMarkdown(completedUpgrade());

    // Assert
    const table = markdown.slice(markdown.indexOf('## Plan and per-node result'), markdown.indexOf('## Approvals')).trim().split('\n');
    expect(table).toEqual([
      '## Plan and per-node result',
      '',
      '| # | step | node | image | result | detail |',
      '|---|---|---|---|---|---|',
      '| 1 | snapshot |  |  | done | snapshot etcd-20261129-2201.db, 18874368 bytes |',
      `| 2 | upgrade-worker | 10.0.30.21 | ${IMAGE} | done | v1.11.6 → v1.12.1 / Ready |`,
      `| 3 | upgrade-control-plane | 10.0.30.11 | ${IMAGE} | skipped | already on v1.12.1 |`,
      '| 4 | verify |  |  | done |  |',
    ]);
  });

  it('lists each approval with who gave it and when', () => {
    // Act
    const markdown = maintenanceRecordMarkdown(completedUpgrade());

    // Assert
    expect(markdown).toContain(
      '## Approvals\n\n- s2: approved by U0CAROL at 2026-11-29T22:21:00.000Z (requested 2026-11-29T22:20:00.000Z)\n',
    );
  });

  it('ends with the numbered audit trail', () => {
    // Act
    const markdown = maintenanceRecordMarkdown(completedUpgrade());

    // Assert
    expect(markdown.slice(markdown.indexOf('## Audit trail'))).toBe(
      [
        '## Audit trail',
        '',
        '1. 2026-11-29T22:00:00.000Z U0ALICE: planned',
        '2. 2026-11-29T22:05:00.000Z U0BOB: started',
        '3. 2026-11-29T22:21:00.000Z U0CAROL: approved (control plane 10.0.30.11)',
        '',
      ].join('\n'),
    );
  });

  it('writes a time the thread showed as a Slack date token as its UTC fallback: a file is not mrkdwn', () => {
    // Arrange
    const refusal = 'none is open now. The next window opens <!date^1796162400^{date_short_pretty} {time}|2026-12-01 22:00 UTC>.';
    const op = completedUpgrade({
      state: 'refused',
      reason: refusal,
      audit: [{ seq: 1, at: '2026-11-29T22:00:00.000Z', actor: 'bot', event: 'preflight refused', detail: refusal }],
    });

    // Act
    const markdown = maintenanceRecordMarkdown(op);

    // Assert
    expect(markdown).not.toContain('<!date');
    expect(markdown).toContain(
      '1. 2026-11-29T22:00:00.000Z bot: preflight refused (none is open now. The next window opens 2026-12-01 22:00 UTC.)',
    );
    expect(markdown).toContain('- Result: refused (none is open now. The next window opens 2026-12-01 22:00 UTC.)');
  });

  it('says what is missing for an operation that never started', () => {
    // Arrange
    const refused = completedUpgrade({
      state: 'refused',
      reason: 'etcd has no leader',
      commit: undefined,
      snapshot: undefined,
      startedBy: undefined,
      startedAt: undefined,
      endedAt: undefined,
      validation: undefined,
      approvals: [],
      steps: [],
      audit: [],
      confirmedReview: [],
    });

    // Act
    const markdown = maintenanceRecordMarkdown(refused);

    // Assert
    expect(markdown).toContain('- Result: refused (etcd has no leader)\n');
    expect(markdown).toContain('- Commit: not recorded (the operation never started)\n');
    expect(markdown).toContain('- Snapshot: none\n');
    expect(markdown).toContain('- Started by: - at -\n- Ended: -\n- Validation: -\n');
    expect(markdown).toContain('## Approvals\n\nnone\n');
    expect(markdown).not.toContain('Review confirmed');
  });

  it('lists what was already failing before the operation, from its baseline', () => {
    const markdown = maintenanceRecordMarkdown(
      completedUpgrade({
        baseline: {
          takenAt: '2026-11-29T21:58:00.000Z',
          items: [
            {
              key: 'pod:reports/ReplicaSet/report-worker-5f7c',
              kind: 'pod',
              name: 'reports/report-worker-5f7c-x1',
              node: 'talos-prd-cp-2',
              reason: 'CrashLoopBackOff',
            },
            { key: 'longhorn:pvc-1', kind: 'longhorn', name: 'apps/data (volume pvc-1)', reason: 'degraded (attached)' },
          ],
        },
      }),
    );

    expect(markdown).toContain(
      [
        '## Already failing before the operation (baseline of 2026-11-29T21:58:00.000Z)',
        '',
        '- pod: reports/report-worker-5f7c-x1: CrashLoopBackOff on talos-prd-cp-2',
        '- longhorn: apps/data (volume pvc-1): degraded (attached)',
        '',
        '## Approvals',
      ].join('\n'),
    );
  });

  it('has no such section when nothing was failing, or no baseline was taken', () => {
    expect(maintenanceRecordMarkdown(completedUpgrade({ baseline: { takenAt: '2026-11-29T21:58:00.000Z', items: [] } }))).not.toContain(
      'Already failing',
    );
    expect(maintenanceRecordMarkdown(completedUpgrade())).not.toContain('Already failing');
  });

  it('names the commit a failed operation started from, and both approvers of a step started outside the window', () => {
    // Arrange
    const op = completedUpgrade({
      state: 'failed',
      reason: 'node 10.0.30.11 did not come back',
      commit: '0123456789abcdef0123456789abcdef01234567',
      steps: [
        {
          id: 's2',
          kind: 'upgrade-control-plane',
          node: '10.0.30.11',
          status: 'failed',
          windowOverride: { by: 'U0CAROL', at: '2026-11-29T23:00:00.000Z', secondBy: 'U0DAVE', secondAt: '2026-11-29T23:02:00.000Z' },
        },
      ],
    });

    // Act
    const markdown = maintenanceRecordMarkdown(op);

    // Assert
    expect(markdown).toContain('- Commit: 0123456789abcdef0123456789abcdef01234567\n');
    expect(markdown).toContain(
      '- Started outside the maintenance window: 10.0.30.11, asked by U0CAROL at 2026-11-29T23:00:00.000Z, confirmed by U0DAVE at 2026-11-29T23:02:00.000Z\n',
    );
  });

  it("names an upgrade's Terraform follow-up, planned then applied with its commit, and the upgrade a Terraform change follows up", () => {
    // Arrange
    const commit = '4f2a9c1e0b7d3a5f6e8c9b0a1d2e3f4a5b6c7d8e';
    const planned = completedUpgrade({ terraformFollowUp: { op: 'op-tf1', state: 'planned', commit, at: '2026-11-30T09:00:00.000Z' } });
    const applied = completedUpgrade({ terraformFollowUp: { op: 'op-tf1', state: 'applied', commit, at: '2026-11-30T09:10:00.000Z' } });
    const change = anOperation({
      kind: 'terraform-apply',
      data: { followUpOf: [{ op: 'op-up1', kind: 'kubernetes', version: 'v1.34.2' }] },
    });

    // Act
    const [plannedMd, appliedMd, changeMd, plain] = [planned, applied, change, completedUpgrade()].map((o) => maintenanceRecordMarkdown(o));

    // Assert
    expect(plannedMd).toContain(`- Terraform follow-up op-tf1 (commit ${commit}) planned at 2026-11-30T09:00:00.000Z, not applied yet\n`);
    expect(appliedMd).toContain(`- Terraform follow-up op-tf1 (commit ${commit}) applied at 2026-11-30T09:10:00.000Z\n`);
    expect(changeMd).toContain('- Follow-up of op-up1 (the Kubernetes upgrade to v1.34.2)\n');
    expect(plain).not.toMatch(/follow-up/i);
  });
});
