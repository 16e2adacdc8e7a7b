import type { OperationKind } from '../../src/ops/operation.ts';
import type { Playbook, PlaybookCommand } from '../engine/playbook.ts';
import { k8sUpgradePlaybook } from './k8s-upgrade/index.ts';
import { removePlaybook } from './node-remove/index.ts';
import { rollbackPlaybook } from './node-rollback/index.ts';
import { snapshotPlaybook } from './snapshot/index.ts';
import { talosUpgradePlaybook } from './talos-upgrade/index.ts';
import { terraformApplyPlaybook } from './terraform-apply/index.ts';

/** The kinds the engine runs: every operation kind. */
export type EngineKind = OperationKind;

/**
 * Every operation the engine runs, by kind. A complete record: a kind without its playbook fails
 * the type check. A new runbook procedure is its folder and one line here.
 */
export const PLAYBOOKS: Readonly<Record<EngineKind, Playbook>> = {
  'terraform-apply': terraformApplyPlaybook,
  'talos-upgrade': talosUpgradePlaybook,
  'k8s-upgrade': k8sUpgradePlaybook,
  'node-rollback': rollbackPlaybook,
  'node-remove': removePlaybook,
  snapshot: snapshotPlaybook,
};

/** The mutating commands, in the order `/talos help` lists them: the parser and the help text are built from these. */
export const PLAYBOOK_COMMANDS: readonly PlaybookCommand[] = (['terraform-apply', 'snapshot', 'talos-upgrade', 'k8s-upgrade', 'node-rollback', 'node-remove'] as const).map((k) => PLAYBOOKS[k].command);
