import type { SlashCommand } from '@slack/bolt';
import { WebClient } from '@slack/web-api';
import { describe, expect, it } from 'vitest';
import { createAuthorizer } from '../../../../handlers/authorize.ts';
import type { CommandDeps } from '../../../../handlers/commands/command-context.ts';
import { doctor } from '../../../../handlers/commands/doctor.ts';
import { parseCommand } from '../../../../handlers/parse-command.ts';
import { parseInventory } from '../../../../src/config/inventory.ts';
import type { DoctorFinding } from '../../../../src/chat/doctor-report.ts';

const INVENTORY = parseInventory(
  `clusters:
  production:
    environment: production
    channel: C0MAINTPRD
    terraformDir: /srv/tf/production
    controlPlanes: [10.0.30.11]
    installerPlatform: nocloud
    hostLabel: example.org/proxmox-host
    snapshotDir: /var/backups/talos-etcd
    operators: [U0ALICE]
    approvers: [U0CAROL]
  staging:
    environment: staging
    channel: C0MAINTSTG
    terraformDir: /srv/tf/staging
    controlPlanes: [10.0.20.11]
    installerPlatform: nocloud
    hostLabel: example.org/proxmox-host
    snapshotDir: /var/backups/talos-etcd
    operators: [U0BOB]
    approvers: [U0CAROL]
`,
  'clusters.yaml',
);

const FINDINGS: DoctorFinding[] = [
  { status: 'ok', check: 'Slack scopes', found: 'all 8 scopes of the app manifest are granted' },
  {
    status: 'fail',
    check: 'talosctl',
    cluster: 'staging',
    found: 'the cluster runs v1.12.5',
    fix: 'put talosctl-v1.12.5 in the TALOSCTL_BIN directory',
  },
];

function setup(): { deps: CommandDeps; runs: () => number } {
  let runs = 0;
  // Only user ids in the lists: the authorizer decides without asking Slack.
  const deps = {
    inventory: INVENTORY,
    authorizer: createAuthorizer(new WebClient('xoxb-unused')),
    doctor: () => {
      runs++;
      return Promise.resolve(FINDINGS);
    },
  } as unknown as CommandDeps;
  return { deps, runs: () => runs };
}

const asked = (user: string): SlashCommand => ({ user_id: user, channel_id: 'D0DIRECT', trigger_id: 't1' }) as SlashCommand;

describe('/talos doctor', () => {
  it('parses, without arguments only', () => {
    expect(parseCommand('doctor')).toEqual({ ok: true, command: { kind: 'doctor' } });
    expect(parseCommand('doctor production').ok).toBe(false);
  });

  it('answers an operator of any one cluster with the report, the problems first, each with its fix', async () => {
    // Arrange
    const { deps, runs } = setup();

    // Act
    const outcome = await doctor({ kind: 'doctor' }, asked('U0BOB'), deps);

    // Assert
    expect(runs()).toBe(1);
    const lines = outcome.reply.split('\n');
    expect(lines[0]).toContain('1 problem');
    expect(lines[1]).toMatch(/^⛔ \*talosctl · staging\*: .* \*Fix:\* put talosctl-v1\.12\.5/);
    expect(lines[2]).toMatch(/^✅ \*Slack scopes\*/);
  });

  it('refuses anyone who operates no cluster, naming who may, and checks nothing', async () => {
    // Arrange
    const { deps, runs } = setup();

    // Act
    const outcome = await doctor({ kind: 'doctor' }, asked('U0MALLORY'), deps);

    // Assert
    expect(runs()).toBe(0);
    expect(outcome.reply).toContain('*production*: <@U0ALICE>');
    expect(outcome.reply).toContain('*staging*: <@U0BOB>');
    expect(outcome.reply).toContain('Nothing was checked');
  });
});
