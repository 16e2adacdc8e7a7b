import type { OpsJobDeps } from './job-context.ts';
import type { EngineContext, PlaybookDeps, WalkContext, WalkStart } from './playbook.ts';
import type { OperationStore } from '../../src/ops/operation-store.ts';
import { withStep, type FollowUpOf, type Operation, type Step } from '../../src/ops/operation.ts';
import { WALKING } from '../../src/ops/state-machine.ts';

/**
 * The fields of an operation a playbook writes: its private `data`, its `notes`, its `target` (what it
 * learns of what it works on, e.g. the version a rollback came back on) and the etcd `snapshot` it took.
 * Everything else is the engine's: the state, the lock, approvals, the retry, the phase, and each step's
 * status and times.
 */
export const PLAYBOOK_FIELDS = ['data', 'notes', 'target', 'snapshot'] as const;

/** What a playbook records of one of its steps: what it asked of the node and what it saw, never the step's status or times. */
export const PLAYBOOK_STEP_FIELDS = ['node', 'nodeName', 'issuedAt', 'issuedBootId', 'detail', 'fromVersion', 'joined'] as const;

export type StepRecord = { id: string } & Partial<Pick<Step, (typeof PLAYBOOK_STEP_FIELDS)[number]>>;

/** A change a playbook asks for: each field given replaces the stored one; `step` is merged into the step with its id. */
export type RecordPatch = Partial<Pick<Operation, (typeof PLAYBOOK_FIELDS)[number]>> & { step?: StepRecord };

/** What a record did: the operation as stored after it, and whether the patch is in it (and why not). */
export type Recorded =
  | { recorded: true; op: Operation }
  | {
      recorded: false;
      op: Operation;
      /** `not-walking`: the operation is no longer running, awaiting an approval or a window (cancelled, stopped, ended). `unchanged`: the function returned nothing to record. */
      why: 'not-walking' | 'unchanged';
    };

/**
 * Records a playbook's change of its operation, through the store's compare-and-set and only while
 * the operation walks: a run that lost its operation (cancelled, stopped) writes nothing. Given a
 * function, it is asked with the operation as stored now and returns the patch, or undefined to
 * record nothing (a condition on what another run recorded first).
 */
export type Recorder = (patch: RecordPatch | ((op: Operation) => RecordPatch | undefined)) => Promise<Recorded>;

/** Thrown for a patch that names a field the engine owns: a programming error, never retried. */
export class EngineFieldError extends Error {
  constructor(field: string) {
    super(`a playbook may not record \`${field}\` on its operation: it is the engine's`);
    this.name = 'EngineFieldError';
  }
}

/** The patch unchanged, or an error naming the first field a playbook may not write (types stop it; a cast does not). */
export function checkPatch(patch: RecordPatch): RecordPatch {
  for (const field of Object.keys(patch)) {
    if (field !== 'step' && !(PLAYBOOK_FIELDS as readonly string[]).includes(field)) throw new EngineFieldError(field);
  }
  for (const field of Object.keys(patch.step ?? {})) {
    if (field !== 'id' && !(PLAYBOOK_STEP_FIELDS as readonly string[]).includes(field)) throw new EngineFieldError(`step.${field}`);
  }
  return patch;
}

function applyPatch(op: Operation, patch: RecordPatch): Operation {
  const { step, ...fields } = patch;
  const patched = { ...op, ...fields };
  if (step === undefined) return patched;
  const { id, ...stepFields } = step;
  return withStep(patched, id, stepFields);
}

/** The recorder of operation `opId`: the only way a playbook writes its operation. */
export function recorder(store: Pick<OperationStore, 'update'>, opId: string): Recorder {
  return async (patch) => {
    let why: 'not-walking' | 'unchanged' = 'unchanged';
    const { op, changed } = await store.update(opId, (o) => {
      if (!WALKING.includes(o.state)) {
        why = 'not-walking';
        return undefined;
      }
      const next = typeof patch === 'function' ? patch(o) : patch;
      if (next === undefined) {
        why = 'unchanged';
        return undefined;
      }
      return applyPatch(o, checkPatch(next));
    });
    return changed ? { recorded: true, op } : { recorded: false, op, why };
  };
}

/** Records on another operation (an upgrade) which Terraform change brought Terraform in line with it. */
export type FollowUpLinker = (
  change: Pick<Operation, 'id'>,
  followUpOf: FollowUpOf,
  link: { state: 'planned' | 'applied'; commit: string | undefined; at: string },
) => Promise<void>;

/**
 * Records on each upgrade the follow-up plan (`planned`) and then its apply (`applied`), through the
 * store's compare-and-set. An applied follow-up is never replaced by a later plan: it is the one that
 * brought Terraform in line. The same state again from the same operation changes nothing. The only
 * write of one operation on behalf of another, so the engine makes it, not the playbook.
 */
export function followUpLinker(store: Pick<OperationStore, 'update'>): FollowUpLinker {
  return async (change, followUpOf, link) => {
    for (const upgrade of followUpOf) {
      await store.update(upgrade.op, (o) => {
        const known = o.terraformFollowUp;
        if (known?.state === 'applied') return undefined;
        if (known?.op === change.id && known.state === link.state) return undefined;
        return {
          ...o,
          terraformFollowUp: {
            op: change.id,
            state: link.state,
            ...(link.commit === undefined ? {} : { commit: link.commit }),
            at: link.at,
          },
        };
      });
    }
  };
}

/**
 * The job's dependencies as a playbook gets them: without the queue and the run lease, operations only
 * read, the lock only asked who holds it. At run time too, so a cast reaches nothing more.
 */
export function playbookDeps(deps: OpsJobDeps): PlaybookDeps {
  const { store, lock, opsQueue: _queue, runLease: _lease, ...rest } = deps;
  return {
    ...rest,
    store: { get: (id) => store.get(id), listForCluster: (cluster, limit) => store.listForCluster(cluster, limit) },
    lock: { holder: (cluster) => lock.holder(cluster) },
  };
}

/** The walk's context as a playbook's step gets it: its dependencies narrowed (see {@link playbookDeps}). */
export function playbookContext(ctx: EngineContext): WalkContext {
  return { ...ctx, deps: playbookDeps(ctx.deps) };
}

/** The walk's context for operation `opId`: what it started with, and the operation's recorder. */
export function recordingContext(start: WalkStart, opId: string): EngineContext {
  return { ...start, record: recorder(start.deps.store, opId), linkFollowUp: followUpLinker(start.deps.store) };
}
