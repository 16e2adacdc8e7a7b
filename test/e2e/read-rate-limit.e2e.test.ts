import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { READ_QUEUE } from '../../src/queue/job-schemas.ts';
import { CHANNELS, commandReply, startHarness, USERS, type AckedCommand, type Harness } from '../support/harness.ts';
import { parsePrometheusText, sampleValue } from '../support/prometheus-text.ts';

let h: Harness;
let connection: Redis;
let reads: Queue;

beforeAll(async () => {
  h = await startHarness({ env: { READ_COMMANDS_PER_MINUTE: '2' } });
  connection = new Redis(h.redis.url, { maxRetriesPerRequest: null });
  reads = new Queue(READ_QUEUE, { connection });
});

afterAll(async () => {
  await reads?.close();
  connection?.disconnect();
  await h?.stop();
});

/** Every job the read queue ever got, whatever its state. */
async function readJobs(): Promise<number> {
  return Object.values(await reads.getJobCounts()).reduce((a, b) => a + b, 0);
}

async function send(text: string, user: string, channel: string = CHANNELS.production): Promise<AckedCommand> {
  const result = await h.slack.sendSlashCommand({ user, channel, text });
  if (result.timedOut) throw new Error(`/talos ${text} was not acked (${result.reason})`);
  return result;
}

async function limitedCount(command: string): Promise<number | undefined> {
  const response = await fetch(`http://127.0.0.1:${h.httpPort}/metrics`);
  return sampleValue(parsePrometheusText(await response.text()), 'talos_chatops_commands_rate_limited_total', { command });
}

describe('read commands, limited per person and cluster', () => {
  it('refuses a read past the limit in the ack, saying when to try again, and runs nothing for it', async () => {
    // Arrange: alice spends her two reads about production
    for (const text of ['status', 'status']) expect(await commandReply(h.slack, await send(text, USERS.alice))).toContain('*production*');
    const jobsBefore = await readJobs();

    // Act
    const refused = await send('health', USERS.alice);

    // Assert
    expect(refused.payload.text).toMatch(
      /^Too many read commands: you sent more than 2 a minute about \*production\*\. Nothing was run; try `\/talos health` again in \d+ s\./,
    );
    expect(await limitedCount('health')).toBe(1);
    expect(await readJobs()).toBe(jobsBefore);
  }, 60_000);

  it('limits each person and each cluster apart, and never help', async () => {
    // Act
    const otherPerson = await send('status', USERS.eve);
    const otherCluster = await send('status', USERS.alice, CHANNELS.staging);
    const help = await send('help', USERS.alice);

    // Assert
    expect(await commandReply(h.slack, otherPerson)).toContain('*production*');
    expect(await commandReply(h.slack, otherCluster)).toContain('*staging*');
    expect(help.payload.text).toContain('*`/talos` commands*');
    expect(await limitedCount('status')).toBeUndefined();
  }, 60_000);
});
