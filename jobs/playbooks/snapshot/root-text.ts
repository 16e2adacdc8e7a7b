import type { Operation } from '../../../src/ops/operation.ts';

/**
 * A snapshot's root text, led by what happened, as the channel has always shown it: requested,
 * then the identifier, or why it failed. A cancelled snapshot keeps the common text.
 */
export function snapshotRootText(op: Operation): string | undefined {
  const of = `etcd snapshot of ${op.cluster}`;
  if (op.state === 'completed' && op.snapshot !== undefined) return `✅ ${of}: \`${op.snapshot.id}\` (${op.id})`;
  if (op.state === 'failed') return `❌ ${of} failed: ${op.reason ?? 'unknown reason'} (${op.id})`;
  if (op.state === 'refused') return `❌ ${of} failed: ${op.refusals.join('; ')} (${op.id})`;
  if (op.state === 'preflight' || op.state === 'running') return `⏳ ${of} requested by <@${op.requestedBy}> (${op.id})`;
  return undefined;
}
