import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/config-error.ts';
import { parseInventory } from '../../../src/config/inventory.ts';
import { inventoryWarnings } from '../../../src/config/inventory-warnings.ts';
import { dailySummaryCron } from '../../../src/config/schedules.ts';
import { desiredSchedules } from '../../../src/queue/schedules.ts';

function inventoryWith(schedules: string) {
  return parseInventory(
    `clusters:
  production:
    environment: production
    channel: C0MAINTPRD
    terraformDir: /srv/infra/terraform/production
    controlPlanes: [10.0.30.11]
    installerPlatform: nocloud
    hostLabel: example.org/proxmox-host
    snapshotDir: /var/backups/talos-etcd
    operators: [U0ALICE]
    approvers: [U0CAROL]
    schedules:
${schedules}`,
    'clusters.yaml',
  );
}

function problems(schedules: string): string[] {
  try {
    inventoryWith(schedules);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('the inventory was accepted');
}

describe('schedules in the inventory', () => {
  it('reads a gate with its zone and daily summary, and a snapshot with its retention', () => {
    // Act
    const { clusters } = inventoryWith(`      healthGate: { cron: "*/15 * * * *", timeZone: Europe/Berlin, dailySummary: "08:00" }
      snapshot: { cron: "0 * * * *", keepLast: 24, keepDays: 7 }`);

    // Assert
    expect(clusters[0]!.schedules).toEqual({
      healthGate: { cron: '*/15 * * * *', timeZone: 'Europe/Berlin', dailySummary: '08:00' },
      snapshot: { cron: '0 * * * *', timeZone: 'UTC', keepLast: 24, keepDays: 7 },
    });
    expect(clusters[0]!.deprecatedKeys).toBeUndefined();
    expect(inventoryWarnings({ clusters })).toEqual([]);
  });

  it('still reads the old spelling timezone for one release, under timeZone, with a start-up warning naming where', () => {
    // Act
    const { clusters } = inventoryWith(`      healthGate: { cron: "*/15 * * * *", timezone: Europe/Berlin }
      snapshot: { cron: "0 * * * *", timezone: Asia/Tokyo, keepLast: 2 }`);

    // Assert
    expect(clusters[0]!.schedules?.healthGate?.timeZone).toBe('Europe/Berlin');
    expect(clusters[0]!.schedules?.snapshot?.timeZone).toBe('Asia/Tokyo');
    expect(clusters[0]!.schedules?.healthGate).not.toHaveProperty('timezone');
    expect(clusters[0]!.deprecatedKeys).toEqual(['schedules.healthGate.timezone', 'schedules.snapshot.timezone']);
    const warnings = inventoryWarnings({ clusters }).filter((w) => w.includes('old way'));
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain('schedules.healthGate.timezone');
    expect(warnings[0]).toContain('write timeZone');
  });

  it('refuses a zone given under both spellings', () => {
    expect(problems('      healthGate: { cron: "*/5 * * * *", timeZone: UTC, timezone: UTC }')).toEqual([
      expect.stringContaining('healthGate.timezone: the zone is given twice: keep timeZone'),
    ]);
  });

  it('suggests timeZone for a zone key spelled another way', () => {
    expect(problems('      healthGate: { cron: "*/5 * * * *", tz: UTC }')).toEqual([expect.stringContaining('Unrecognized key: "tz"')]);
    expect(problems('      healthGate: { cron: "*/5 * * * *", time_zone: UTC }')).toEqual([
      expect.stringContaining('did you mean timeZone?'),
    ]);
  });

  it('turns them into one job scheduler each, the summary as a daily cron in the gate zone', () => {
    // Arrange
    const inventory = inventoryWith(`      healthGate: { cron: "*/15 * * * *", timeZone: Europe/Berlin, dailySummary: "08:30" }
      snapshot: { cron: "0 * * * *", keepLast: 3 }`);

    // Act
    const specs = desiredSchedules(inventory);

    // Assert
    expect(specs).toEqual([
      {
        queue: 'read',
        id: 'sched-gate-production',
        name: 'scheduled-gate',
        cluster: 'production',
        pattern: '*/15 * * * *',
        tz: 'Europe/Berlin',
      },
      {
        queue: 'read',
        id: 'sched-summary-production',
        name: 'scheduled-gate-summary',
        cluster: 'production',
        pattern: '30 8 * * *',
        tz: 'Europe/Berlin',
      },
      { queue: 'ops', id: 'sched-snapshot-production', name: 'scheduled-snapshot', cluster: 'production', pattern: '0 * * * *', tz: 'UTC' },
    ]);
    expect(dailySummaryCron('00:05')).toBe('5 0 * * *');
  });

  it('refuses a cron pattern croner cannot read, naming the field and the pattern', () => {
    expect(problems('      healthGate: { cron: "every 15 minutes" }')).toEqual([
      expect.stringMatching(/^clusters\.production\.schedules\.healthGate\.cron: not a usable cron pattern: "every 15 minutes"/),
    ]);
    expect(problems('      snapshot: { cron: "61 * * * *", keepLast: 2 }')).toEqual([
      expect.stringMatching(/^clusters\.production\.schedules\.snapshot\.cron: not a usable cron pattern: "61 \* \* \* \*"/),
    ]);
  });

  it('refuses an unknown time zone, a summary time that is not HH:MM, and a snapshot schedule that keeps nothing in particular', () => {
    expect(problems('      healthGate: { cron: "*/5 * * * *", timeZone: Mars/Olympus }')).toEqual([
      expect.stringContaining('healthGate.timeZone: must be an IANA time zone'),
    ]);
    expect(problems('      healthGate: { cron: "*/5 * * * *", dailySummary: "8am" }')).toEqual([
      expect.stringContaining('healthGate.dailySummary: must be a time of day as HH:MM'),
    ]);
    expect(problems('      snapshot: { cron: "0 * * * *" }')).toEqual([expect.stringContaining('say how many snapshots to keep')]);
    expect(problems('      snapshot: { cron: "0 * * * *", keepLast: 0 }')).toEqual([expect.stringContaining('snapshot.keepLast')]);
    expect(problems('      backup: { cron: "0 * * * *" }')).toEqual([expect.stringContaining('Unrecognized key: "backup"')]);
  });
});
