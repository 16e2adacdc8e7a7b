import { snapshotIntegrityProblems } from '../../../src/ops/snapshot-integrity.ts';
import type { Operation } from '../../../src/ops/operation.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { StepResult, WalkContext } from '../../engine/playbook.ts';
import { operationSnapshot } from '../shared/snapshot-step.ts';
import { restoreData } from './data.ts';

/**
 * A fresh snapshot: taken by this rehearsal, never an older file. A resumed run finds the one it
 * took stored on the operation; talosctl's own check (it reads the file back and prints its
 * `snapshot info`) and the size check are `takeEtcdSnapshot`'s.
 */
export async function freshSnapshot(ctx: WalkContext, op: Operation): Promise<StepResult> {
  ctx.phase?.('taking a fresh etcd snapshot');
  const snap = await operationSnapshot(ctx, op, ctx.talosctl);
  return {
    event: 'etcd snapshot taken',
    detail: `${snap.id}: ${snap.bytes} bytes, sha256 ${snap.sha256.slice(0, 12)}…, revision ${snap.revision}, ${snap.totalKeys ?? '?'} keys, from ${snap.node}`,
  };
}

/** What the stop says to do after a snapshot that will not restore: nothing was reset, so a new rehearsal takes a new one. */
const SAFE_NEXT =
  'Nothing was reset: the cluster runs as before. Safe next: run /talos rehearse etcd-restore again, which takes a fresh snapshot.';

/**
 * The bot's own check before anything is reset: the file as recorded (size, sha256), with the
 * trailing hash etcd's restore checks. A snapshot that fails it stops the rehearsal here.
 */
export async function verifySnapshot(ctx: WalkContext, op: Operation): Promise<StepResult> {
  const snap = op.snapshot;
  if (snap === undefined) throw new StepFailure(`no snapshot is recorded for this rehearsal. ${SAFE_NEXT}`, [], { noRollback: true });
  ctx.phase?.(`checking ${snap.id}`);
  const problems = await snapshotIntegrityProblems(snap);
  if (problems.length > 0) {
    throw new StepFailure(`the snapshot ${snap.id} would not restore, so the rehearsal stopped before any reset. ${SAFE_NEXT}`, problems, {
      noRollback: true,
    });
  }
  const at = ctx.deps.now().toISOString();
  await ctx.record((o) => ({ data: { ...restoreData(o), verified: { at, totalKeys: snap.totalKeys } } }));
  return {
    event: 'etcd snapshot verified',
    detail: `${snap.id}: ${snap.bytes} bytes as recorded, sha256 as recorded, etcd's trailing sha256 matches; revision ${snap.revision}, ${snap.totalKeys ?? '?'} keys`,
  };
}
