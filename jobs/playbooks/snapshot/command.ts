import type { PlaybookCommand } from '../../engine/playbook.ts';

/** `/talos snapshot [cluster]`: its grammar and help line, declared with the other playbooks' commands. */
export const snapshotCommand: PlaybookCommand = {
  name: 'snapshot',
  words: ['snapshot'],
  argument: { kind: 'none' },
  help: 'etcd snapshot copied off-cluster (operators)',
  group: 'manage',
  example: '/talos snapshot production',
  request: {
    what: 'an etcd snapshot',
    refuseAtOnce: {},
    queued: (op, cluster) => `Taking an etcd snapshot of *${cluster.name}* (\`${op.id}\`).`,
  },
};
