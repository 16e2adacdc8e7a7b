import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseInventory } from '../../../src/config/inventory.ts';
import { clustersInDetail, clustersOperated, type HomeAudienceDeps } from '../../../src/home/home-audience.ts';
import { createLogger } from '../../../src/log/logger.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';

// Which clusters a viewer of the Home tab sees in detail: operators and approvers (ids and user
// groups) of the cluster and members of its channel; anyone else, or anyone Slack cannot place, not.

const INVENTORY = parseInventory(
  `clusters:
  production:
    environment: production
    channel: C0MAINTPRD
    terraformDir: /srv/infra/terraform/production
    controlPlanes: [10.0.30.11, 10.0.30.12, 10.0.30.13]
    installerPlatform: nocloud
    hostLabel: example.org/proxmox-host
    snapshotDir: /var/backups/talos-etcd
    operators: [U0ALICE]
    approvers: [U0CAROL, S0SRE]
  staging:
    environment: staging
    channel: C0MAINTSTG
    terraformDir: /srv/infra/terraform/staging
    controlPlanes: [10.0.20.11]
    installerPlatform: nocloud
    hostLabel: example.org/proxmox-host
    snapshotDir: /var/backups/talos-etcd
    operators: [U0BOB]
    approvers: [U0BOB]
`,
  'clusters.yaml',
);

const GROUPS: Record<string, string[]> = { S0SRE: ['U0DAVE'] };

interface Setup {
  /** People in each channel; a channel missing here cannot be read (Slack answers an error). */
  channels?: Record<string, string[]>;
  /** A user-group lookup that fails. */
  groupsFail?: boolean;
}

function audience(setup: Setup = {}): { deps: HomeAudienceDeps; logs: () => Record<string, unknown>[]; asked: string[] } {
  const channels = setup.channels ?? { C0MAINTPRD: [], C0MAINTSTG: [] };
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      callback();
    },
  });
  const asked: string[] = [];
  return {
    asked,
    logs: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
    deps: {
      isListed: (user, allowed) => {
        if (allowed.includes(user)) return Promise.resolve(true);
        const groups = allowed.filter((id) => id.startsWith('S'));
        if (groups.length > 0 && setup.groupsFail === true) return Promise.reject(new Error('usergroups.users.list: ratelimited'));
        return Promise.resolve(groups.some((g) => GROUPS[g]?.includes(user) === true));
      },
      channelMembers: {
        isMember: (channel, user) => {
          asked.push(channel);
          const members = channels[channel];
          return members === undefined
            ? Promise.reject(new Error('An API error occurred: fetch_members_failed'))
            : Promise.resolve(members.includes(user));
        },
      },
      logger: createLogger({ level: 'info', scrubber: new SecretScrubber(), destination }),
    },
  };
}

describe('clustersInDetail', () => {
  it("gives an operator, an approver and a member of an approver group their cluster's detail, without asking who is in its channel", async () => {
    // Arrange
    const { deps, asked } = audience();

    // Act
    const alice = await clustersInDetail('U0ALICE', INVENTORY.clusters, deps);
    const carol = await clustersInDetail('U0CAROL', INVENTORY.clusters, deps);
    const dave = await clustersInDetail('U0DAVE', INVENTORY.clusters, deps);

    // Assert: production only; staging is Bob's and none of them is in its channel.
    expect([...alice]).toEqual(['production']);
    expect([...carol]).toEqual(['production']);
    expect([...dave]).toEqual(['production']);
    expect(asked.filter((c) => c === 'C0MAINTPRD')).toEqual([]);
  });

  it("gives a member of a cluster's channel its detail, and nobody else's", async () => {
    // Arrange
    const { deps } = audience({ channels: { C0MAINTPRD: ['U0EVE'], C0MAINTSTG: ['U0BOB'] } });

    // Act
    const eve = await clustersInDetail('U0EVE', INVENTORY.clusters, deps);
    const mallory = await clustersInDetail('U0MALLORY', INVENTORY.clusters, deps);

    // Assert
    expect([...eve]).toEqual(['production']);
    expect([...mallory]).toEqual([]);
  });

  it('withholds a cluster whose channel members cannot be read, and logs it', async () => {
    // Arrange: Slack cannot list production's channel.
    const { deps, logs } = audience({ channels: { C0MAINTSTG: ['U0EVE'] } });

    // Act
    const eve = await clustersInDetail('U0EVE', INVENTORY.clusters, deps);

    // Assert
    expect([...eve]).toEqual(['staging']);
    expect(logs()).toEqual([
      expect.objectContaining({
        level: 40,
        user: 'U0EVE',
        cluster: 'production',
        channel: 'C0MAINTPRD',
        err: expect.stringContaining('fetch_members_failed'),
      }),
    ]);
  });

  it('withholds a cluster when the approver group cannot be read and its channel does not have the user, and logs it', async () => {
    // Arrange
    const { deps, logs } = audience({ groupsFail: true });

    // Act
    const dave = await clustersInDetail('U0DAVE', INVENTORY.clusters, deps);

    // Assert
    expect([...dave]).toEqual([]);
    expect(logs()).toEqual([
      expect.objectContaining({ level: 40, user: 'U0DAVE', cluster: 'production', err: expect.stringContaining('ratelimited') }),
    ]);
  });

  it('still gives the detail to a channel member whose group lookup failed', async () => {
    // Arrange
    const { deps } = audience({ groupsFail: true, channels: { C0MAINTPRD: ['U0DAVE'], C0MAINTSTG: [] } });

    // Act
    const dave = await clustersInDetail('U0DAVE', INVENTORY.clusters, deps);

    // Assert
    expect([...dave]).toEqual(['production']);
  });
});

describe('clustersOperated', () => {
  it('names the clusters whose operators include the viewer; an approver operates none', async () => {
    // Arrange
    const { deps } = audience();

    // Act
    const alice = await clustersOperated('U0ALICE', INVENTORY.clusters, deps);
    const bob = await clustersOperated('U0BOB', INVENTORY.clusters, deps);
    const carol = await clustersOperated('U0CAROL', INVENTORY.clusters, deps);

    // Assert
    expect([...alice]).toEqual(['production']);
    expect([...bob]).toEqual(['staging']);
    expect([...carol]).toEqual([]);
  });

  it('leaves out a cluster whose operators cannot be checked, and logs it', async () => {
    // Arrange: the operators' user group cannot be read.
    const { deps, logs } = audience();
    const failing: HomeAudienceDeps = { ...deps, isListed: () => Promise.reject(new Error('usergroups.users.list: ratelimited')) };

    // Act
    const alice = await clustersOperated('U0ALICE', INVENTORY.clusters.slice(0, 1), failing);

    // Assert
    expect([...alice]).toEqual([]);
    expect(logs()).toEqual([
      expect.objectContaining({ level: 40, user: 'U0ALICE', cluster: 'production', err: expect.stringContaining('ratelimited') }),
    ]);
  });
});
