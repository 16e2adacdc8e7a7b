import type { Operation } from '../../src/ops/operation.ts';
import type { Playbook } from '../engine/playbook.ts';
import { k8sUpgradePlaybook } from './k8s-upgrade.ts';
import { removePlaybook } from './node-remove.ts';
import { rollbackPlaybook } from './node-rollback.ts';
import { talosUpgradePlaybook } from './talos-upgrade.ts';
import { terraformApplyPlaybook } from './terraform-apply.ts';

/** Every operation the engine runs, by kind. A new runbook procedure is one more playbook here. */
export const PLAYBOOKS: Readonly<Partial<Record<Operation['kind'], Playbook>>> = {
  'talos-upgrade': talosUpgradePlaybook,
  'k8s-upgrade': k8sUpgradePlaybook,
  'node-rollback': rollbackPlaybook,
  'node-remove': removePlaybook,
  'terraform-apply': terraformApplyPlaybook,
};
