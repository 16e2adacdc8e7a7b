import { section, context, escapeMrkdwn } from '../../../src/chat/blocks.ts';
import { approvalNotification, approvalQuestion, approveOrStopButtons } from '../../../src/chat/approval-messages.ts';
import { allNodes } from '../../../src/config/inventory.ts';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import { findNodeByAddress, kubeNodeView } from '../../../src/talos/observe.ts';
import { probeSignals, StepFailure } from '../../engine/job-context.ts';
import type { Playbook } from '../../engine/playbook.ts';
import { talosctlFor } from '../../engine/talosctl-client.ts';
import { bootstrapCommand, bootstrapOnce } from './bootstrap.ts';
import { attachedVolumes, votingMembers } from './cluster-facts.ts';
import { longhornOnEphemeral } from './longhorn-disks.ts';
import { etcdRestoreCommand, restoreClusterRefusal, stagingClusters } from './command.ts';
import { downtimeSeconds, EtcdRestoreData, restoreData } from './data.ts';
import { resetControlPlanes } from './reset.ts';
import { waitForBootstrap } from './wait-bootstrap.ts';
import { freshSnapshot, verifySnapshot } from './snapshot-steps.ts';
import { etcdRestoreTexts } from './texts.ts';
import { restoreGate, watchBack } from './watch-back.ts';

/** Approvers the resets need: they destroy the cluster's etcd on purpose. */
const RESET_APPROVERS = 2;

function steps(firstControlPlane: string): Step[] {
  const step = (id: string, fields: Partial<Step> = {}): Step => ({ id, kind: id, status: 'pending', ...fields });
  return [
    step('snapshot'),
    step('verify-snapshot'),
    step('reset'),
    step('wait-bootstrap'),
    step('bootstrap', { node: firstControlPlane }),
    step('watch-back'),
    step('gate'),
  ];
}

/**
 * Refused on anything but staging (again: the command refused it already, and the resets check once
 * more); the cluster must be healthy (the gate is also the baseline the final gate is judged against),
 * the client must match the Talos it runs, and the lock must be free. What etcd and Longhorn look like
 * now is kept, to compare once the cluster is back.
 */
const preflight: Playbook['preflight'] = async (deps, cluster, op, session, signal) => {
  const refusals: string[] = [];
  const notes: string[] = [];
  const staging = restoreClusterRefusal(cluster, stagingClusters(deps.inventory));
  if (staging !== undefined) refusals.push(staging);
  const probe = probeSignals(deps.timeouts.probeMs, signal);
  const kubeNodes = await session.kube.listNodes(probe());
  const talos = [
    ...new Set(
      allNodes(cluster)
        .map((a) => kubeNodeView(findNodeByAddress(kubeNodes, a), cluster.hostLabel).osVersion)
        .filter((v): v is string => v !== undefined),
    ),
  ];
  if (talos.length !== 1)
    refusals.push(
      `the nodes report ${talos.length === 0 ? 'no Talos version' : `several Talos versions (${talos.join(', ')})`}; run /talos health`,
    );
  const talosVersion = talos.length === 1 ? talos[0] : undefined;
  const chosen = await talosctlFor(session, talosVersion);
  const members = await votingMembers(chosen.talosctl, cluster, probe());
  const volumes = await attachedVolumes(session, probe());
  const ephemeral = await longhornOnEphemeral(session, chosen.talosctl, cluster, kubeNodes, probe());
  if (ephemeral !== undefined) refusals.push(ephemeral);
  notes.push(
    `Staging's etcd is destroyed on purpose: every control plane (${cluster.controlPlanes.join(', ')}) is reset with EPHEMERAL wiped, after two approvers approve; then exactly one bootstrap --recover-from a fresh snapshot the bot has verified, on ${cluster.controlPlanes[0]}.`,
    `Before: etcd members ${members.join(', ') || 'unread'}; ${volumes.length} Longhorn volume${volumes.length === 1 ? '' : 's'} attached.`,
  );
  const data: EtcdRestoreData = { before: { members, attachedVolumes: volumes }, resets: {}, rejoins: {} };
  return {
    refusals,
    notes,
    steps: steps(cluster.controlPlanes[0]!),
    target: { talosVersion },
    data,
    common: { talosctl: chosen.talosctl, clientRefusal: chosen.refusal, running: talosVersion },
  };
};

/** The record's lines of a rehearsal: the snapshot restored, keys before and after, the downtime, the members. */
function recordLines(op: Operation): string[] {
  const data = restoreData(op);
  const snap = op.snapshot;
  const downtime = downtimeSeconds(data);
  return [
    `Snapshot restored: ${snap?.id ?? 'none'}${snap ? ` (${snap.path}, ${snap.bytes} bytes, sha256 ${snap.sha256})` : ''}`,
    `Snapshot revision: ${snap?.revision ?? '?'}; total keys in the snapshot (before): ${snap?.totalKeys ?? '?'}`,
    `Total keys after the restore: ${data.after?.snapshot?.totalKeys ?? '?'} (verification snapshot ${data.after?.snapshot?.id ?? 'none'}, revision ${data.after?.snapshot?.revision ?? '?'})`,
    `Downtime: ${downtime === undefined ? 'unknown' : `${downtime} s`} (first reset issued → Kubernetes API answering again)`,
    `Bootstrap: ${data.bootstrap ? `${bootstrapCommand(data.bootstrap.node, data.bootstrap.path)} at ${data.bootstrap.issuedAt}, issued once` : 'not issued'}`,
    `etcd members before: ${data.before?.members.join(', ') || '?'}; after: ${data.after?.members.join(', ') || '?'}`,
    `Longhorn volumes attached before: ${data.before?.attachedVolumes.length ?? '?'}; after: ${data.after?.attachedVolumes.length ?? '?'}`,
  ];
}

/** `/talos rehearse etcd-restore`: staging's etcd destroyed and restored from a fresh, verified snapshot, exactly once. */
export const etcdRestorePlaybook: Playbook<EtcdRestoreData> = {
  command: etcdRestoreCommand,
  startedBy: 'operators',
  heldByWindows: true,
  texts: etcdRestoreTexts,
  data: EtcdRestoreData,
  checks: { snapshotOffCluster: true, talosctlClient: true, healthGate: {}, window: true, lockFree: {} },
  start: 'plan',
  lock: 'cluster',
  preflight,
  needsApproval: (step) => step.kind === 'reset',
  approvalsNeeded: (step) => (step.kind === 'reset' ? RESET_APPROVERS : 1),
  approvalMessage(ctx, op, approval, step) {
    const snap = op.snapshot;
    const texts = etcdRestoreTexts;
    const effect = texts.approval!.effect!(step);
    return Promise.resolve({
      text: approvalNotification(op, step, approval, texts),
      blocks: [
        section(`*${escapeMrkdwn(approvalQuestion(op, step, texts))}*`),
        section(
          `*Two approvers:* two different approvers of ${escapeMrkdwn(op.cluster)} must approve; not whoever requested or started it.`,
        ),
        section(
          `*What happens:* ${escapeMrkdwn(`talosctl reset --graceful=false --reboot --system-labels-to-wipe=EPHEMERAL on ${ctx.cluster.controlPlanes.join(', ')}, one at a time; then exactly one talosctl bootstrap --recover-from on ${ctx.cluster.controlPlanes[0] ?? '?'}. The Kubernetes API is down until etcd is back.`)}`,
        ),
        section(
          `*Snapshot:* ${snap ? `\`${escapeMrkdwn(snap.id)}\`, revision ${snap.revision}, ${snap.totalKeys ?? '?'} keys, verified by the bot (size, sha256, etcd's trailing hash)` : 'none'}`,
        ),
        approveOrStopButtons(op, approval, step, texts, {
          title: 'Wipe etcd?',
          text: escapeMrkdwn(effect),
          confirm: 'Approve',
          deny: 'Not yet',
        }),
        context(`Expires ${approval.expiresAt.slice(11, 16)} UTC · staging only`),
      ],
    });
  },
  runStep(ctx, op, step) {
    switch (step.kind) {
      case 'snapshot':
        return freshSnapshot(ctx, op);
      case 'verify-snapshot':
        return verifySnapshot(ctx, op);
      case 'reset':
        return resetControlPlanes(ctx, op, step);
      case 'wait-bootstrap':
        return waitForBootstrap(ctx, op);
      case 'bootstrap':
        return bootstrapOnce(ctx, op, step);
      case 'watch-back':
        return watchBack(ctx, op);
      default:
        return restoreGate(ctx, op);
    }
  },
  complete(_ctx, op) {
    const data = restoreData(op);
    const snap = op.snapshot;
    const after = data.after?.snapshot;
    if (snap === undefined || data.bootstrap === undefined || after === undefined)
      return Promise.reject(
        new StepFailure('the rehearsal ended without its snapshot, its bootstrap or the keys after the restore recorded'),
      );
    const downtime = downtimeSeconds(data);
    const validation = `etcd restored from ${snap.id} (sha256 ${snap.sha256}, revision ${snap.revision}, ${snap.totalKeys ?? '?'} keys before); ${after.totalKeys} keys after (verification snapshot ${after.id}); down ${downtime ?? '?'} s; members ${data.after?.members.join(', ') ?? '?'}; health gate passed against the baseline`;
    const text = `✅ etcd restore rehearsed on *${op.cluster}*: restored \`${snap.id}\` (revision ${snap.revision}), ${snap.totalKeys ?? '?'} keys before, ${after.totalKeys} after; the cluster was down ${downtime ?? '?'} s. \`/talos gates\` now ticks "etcd restore"; \`/talos record ${op.id}\` has the details.`;
    return Promise.resolve({ validation, followUp: { text } });
  },
  recordAppendix: (_deps, op) => Promise.resolve(['etcd restore rehearsal', ...recordLines(op)].join('\n')),
  retryFrom(step) {
    // A snapshot that failed to be taken is taken again (nothing was reset, and the one it stores is still this
    // rehearsal's own); a snapshot that failed its check is replaced only by a new rehearsal; the bootstrap is never
    // issued twice: a bootstrap step that stopped before issuing it (the snapshot failed its check again) may run again,
    // and looks at the rehearsal's record first.
    if (step.kind === 'bootstrap') return step.issuedAt === undefined ? step.id : undefined;
    if (step.kind === 'verify-snapshot') return undefined;
    return step.id;
  },
  cancelRefusal(op) {
    const data = restoreData(op);
    const running = op.steps.find((s) => s.status === 'running');
    if (Object.keys(data.resets).length > 0 && running !== undefined && ['reset', 'wait-bootstrap', 'bootstrap'].includes(running.kind))
      return 'its control planes are being reset or restored: a cancel now would leave staging without etcd and nobody watching. Wait for the step to end or stop';
    return undefined;
  },
};
