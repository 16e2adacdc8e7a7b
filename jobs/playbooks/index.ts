import type { Operation } from '../../src/ops/operation.ts';
import type { Playbook } from '../engine/playbook.ts';
import { k8sUpgradePlaybook } from './k8s-upgrade/index.ts';
import { removePlaybook } from './node-remove/index.ts';
import { rollbackPlaybook } from './node-rollback/index.ts';
import { talosUpgradePlaybook } from './talos-upgrade/index.ts';
import { terraformApplyPlaybook } from './terraform-apply/index.ts';

/** Every operation the engine runs, by kind. A new runbook procedure is one more playbook here. */
export const PLAYBOOKS: Readonly<Partial<Record<Operation['kind'], Playbook>>> = {
  'talos-upgrade': talosUpgradePlaybook,
  'k8s-upgrade': k8sUpgradePlaybook,
  'node-rollback': rollbackPlaybook,
  'node-remove': removePlaybook,
  'terraform-apply': terraformApplyPlaybook,
};
