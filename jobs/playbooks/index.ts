import type { Presentation } from '../../src/chat/presentation.ts';
import type { LifecyclePolicy } from '../engine/lifecycle/deps.ts';
import type { Playbook, PlaybookCommand } from '../engine/playbook.ts';
import { etcdRestorePlaybook } from './etcd-restore/index.ts';
import { k8sUpgradePlaybook } from './k8s-upgrade/index.ts';
import { removePlaybook } from './node-remove/index.ts';
import { replacePlaybook } from './node-replace/index.ts';
import { rollbackPlaybook } from './node-rollback/index.ts';
import { snapshotPlaybook } from './snapshot/index.ts';
import { talosUpgradePlaybook } from './talos-upgrade/index.ts';
import { terraformApplyPlaybook } from './terraform-apply/index.ts';

/**
 * Every operation the engine runs, by kind. The operation kinds are this record's keys, so a new
 * runbook procedure is its folder and one line here; a kind without its playbook is unknown.
 * The order is the order `/talos help` lists their commands in.
 */
export const PLAYBOOKS = {
  'terraform-apply': terraformApplyPlaybook,
  snapshot: snapshotPlaybook,
  'talos-upgrade': talosUpgradePlaybook,
  'k8s-upgrade': k8sUpgradePlaybook,
  'node-rollback': rollbackPlaybook,
  'node-remove': removePlaybook,
  'node-replace': replacePlaybook,
  'etcd-restore': etcdRestorePlaybook,
} as const satisfies Readonly<Record<string, Playbook>>;

/** Every operation kind: the keys of the registry. */
export type OperationKind = keyof typeof PLAYBOOKS;

/** The kinds the engine runs: every operation kind. */
export type EngineKind = OperationKind;

/** The playbook of a stored operation's kind, or undefined when no playbook runs it. */
export function playbookOf(kind: string): Playbook | undefined {
  return Object.hasOwn(PLAYBOOKS, kind) ? PLAYBOOKS[kind as OperationKind] : undefined;
}

/** How every operation kind reads in Slack: each playbook's texts. A complete record, so no kind is presented without its texts. */
export const PRESENTATIONS: Readonly<Record<OperationKind, Presentation>> = Object.fromEntries(
  Object.entries(PLAYBOOKS).map(([kind, playbook]) => [kind, playbook.texts]),
) as Record<OperationKind, Presentation>;

/** The presentation of a stored operation's kind; a kind nothing presents is a programming error. */
export function presentationOf(kind: string): Presentation {
  if (!Object.hasOwn(PRESENTATIONS, kind)) throw new Error(`operation kind ${kind} has no presentation`);
  return PRESENTATIONS[kind as OperationKind];
}

/** The lifecycle's answers, from each playbook's declaration. */
export const KIND_POLICY: LifecyclePolicy = {
  startedByApprovers: (kind) => playbookOf(kind)?.startedBy === 'approvers',
  startApproves: (op) => {
    const playbook = playbookOf(op.kind);
    return playbook?.startedBy === 'approvers' ? op.steps.filter((s) => playbook.needsApproval(s)).map((s) => s.id) : [];
  },
  approvalsNeeded: (op, stepId) => {
    const step = op.steps.find((s) => s.id === stepId);
    return step === undefined ? 1 : (playbookOf(op.kind)?.approvalsNeeded?.(step) ?? 1);
  },
  heldByWindows: (kind) => playbookOf(kind)?.heldByWindows ?? true,
  reviewItems: (kind) => [...presentationOf(kind).reviewItems],
  again: (kind) => playbookOf(kind)?.again ?? 'request',
  rollbackKind: (kind) => playbookOf(kind)?.rollbackKind,
  cancelRefusal: (op) => playbookOf(op.kind)?.cancelRefusal?.(op),
  presentation: presentationOf,
};

/** The mutating commands, in the registry's order: the parser and the help text are built from these. */
export const PLAYBOOK_COMMANDS: readonly PlaybookCommand[] = Object.values(PLAYBOOKS).map((p: Playbook) => p.command);
