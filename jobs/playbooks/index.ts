import type { OperationKind } from '../../src/ops/operation.ts';
import type { Playbook, PlaybookCommand } from '../engine/playbook.ts';
import { k8sUpgradePlaybook } from './k8s-upgrade/index.ts';
import { removePlaybook } from './node-remove/index.ts';
import { rollbackPlaybook } from './node-rollback/index.ts';
import { snapshotCommand } from './snapshot/command.ts';
import { talosUpgradePlaybook } from './talos-upgrade/index.ts';
import { terraformApplyPlaybook } from './terraform-apply/index.ts';

/** The kinds the engine runs: every operation kind but `snapshot`, which its own job still takes. */
export type EngineKind = Exclude<OperationKind, 'snapshot'>;

/** Looked up by any stored operation's kind: undefined for `snapshot`. */
type EngineLookup = Readonly<Partial<Record<OperationKind, Playbook>>>;

/**
 * Every operation the engine runs, by kind. A complete record: a kind without its playbook fails
 * the type check. A new runbook procedure is its folder and one line here.
 */
export const PLAYBOOKS: Readonly<Record<EngineKind, Playbook>> & EngineLookup = {
  'terraform-apply': terraformApplyPlaybook,
  'talos-upgrade': talosUpgradePlaybook,
  'k8s-upgrade': k8sUpgradePlaybook,
  'node-rollback': rollbackPlaybook,
  'node-remove': removePlaybook,
};

/** The mutating commands, in the order `/talos help` lists them: the parser and the help text are built from these. */
export const PLAYBOOK_COMMANDS: readonly PlaybookCommand[] = [PLAYBOOKS['terraform-apply'].command, snapshotCommand, ...(['talos-upgrade', 'k8s-upgrade', 'node-rollback', 'node-remove'] as const).map((k) => PLAYBOOKS[k].command)];
