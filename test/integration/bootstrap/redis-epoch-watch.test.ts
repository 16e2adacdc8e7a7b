import { describe, expect, it } from 'vitest';
import { startEpochWatch, type EpochWatch } from '../../../src/bootstrap/redis-epoch-watch.ts';
import { establishEpoch } from '../../../src/ops/redis-epoch.ts';
import { createLogger } from '../../../src/log/logger.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';
import { inventory, RecordingChat } from '../../support/engine-fixture.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

const redis = useRedisFixture();
const clusters = inventory(`  staging:
    environment: staging
    channel: C0MAINTSTG
    terraformDir: /srv/infra/terraform/staging
    controlPlanes: [10.0.20.11]
    installerPlatform: nocloud
    hostLabel: example.org/proxmox-host
    snapshotDir: /var/backups/talos-etcd
    operators: [U0ALICE]
    approvers: [U0CAROL]
`).clusters;
const logger = createLogger({ level: 'silent', pretty: false, scrubber: new SecretScrubber() });

/** One replica: its own connection, epoch and watch; the timer never fires within a test, the test ticks. */
async function replica(chat: RecordingChat): Promise<EpochWatch> {
  const client = redis.client();
  const epoch = await establishEpoch(client, { reseed: false, now: () => new Date(), onLost: () => undefined });
  return startEpochWatch({ epoch, redis: client, clusters: () => clusters, chat, logger, intervalMs: 3_600_000 });
}

describe('the epoch watch', () => {
  it('tells each cluster channel once that Redis lost the bot data, whatever the replicas and polls, and retries a failed post', async () => {
    // Arrange: two replicas; Slack fails the first post.
    const chat = new RecordingChat();
    const watches = [await replica(chat), await replica(chat)];
    await Promise.all(watches.map((w) => w.tick()));
    expect(chat.posts).toEqual([]);
    await redis.client().flushall();
    chat.failing.add('post');

    // Act: a poll of each while Slack fails, then three more each.
    await Promise.all(watches.map((w) => w.tick()));
    const whileFailing = chat.posts.length;
    chat.failing.delete('post');
    for (let i = 0; i < 3; i++) await Promise.all(watches.map((w) => w.tick()));
    for (const w of watches) w.stop();

    // Assert
    expect(whileFailing).toBe(0);
    expect(chat.posts.map((p) => p.channel).sort()).toEqual(['C0MAINTPRD', 'C0MAINTSTG']);
    expect(chat.posts[0]!.message.text).toMatch(/^:warning: \*(production|staging)\*: the bot lost what it kept in Redis/);
    expect(await redis.client().exists('talos:epoch-lost:production', 'talos:epoch-lost:staging')).toBe(2);
  });

  it('tells nothing while Redis is whole', async () => {
    // Arrange
    const chat = new RecordingChat();
    const watch = await replica(chat);

    // Act
    await watch.tick();
    await watch.tick();
    watch.stop();

    // Assert
    expect(chat.posts).toEqual([]);
  });
});
