import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LogLevel, WebClient } from '@slack/web-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/log/logger.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';
import { newOperation, type Operation } from '../../../src/ops/operation.ts';
import { createOperationStore } from '../../../src/ops/operation-store.ts';
import { createRecordExporter, maintenanceRecordJson, RECORD_SCHEMA } from '../../../src/ops/record-export.ts';
import { createUserNames } from '../../../src/slack/slack-user-names.ts';
import { startSlackEmulator, type SlackEmulator } from '../../slack-emulator/index.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

const redis = useRedisFixture();
let dir: string;

beforeEach(async () => {
  dir = join(await mkdtemp(join(tmpdir(), 'records-')), 'records');
});

afterEach(async () => {
  await rm(join(dir, '..'), { recursive: true, force: true });
});

const NOW = new Date('2026-12-01T08:00:00.000Z');

function running(): Operation {
  return newOperation({
    kind: 'talos-upgrade',
    cluster: 'production',
    channel: 'C0MAINTPRD',
    requestedBy: 'U0ALICE',
    createdAt: '2026-12-01T07:00:00.000Z',
    state: 'running',
    target: { version: 'v1.12.1' },
    planNonce: 'abc123',
    steps: [{ id: 'node-1', kind: 'upgrade-worker', node: '10.0.30.21', status: 'running' }],
    approvals: [
      {
        step: 'node-1',
        nonce: 'n1',
        messageTs: '1.1',
        requestedAt: '2026-12-01T07:10:00.000Z',
        expiresAt: '2026-12-01T08:10:00.000Z',
        state: 'approved',
        by: 'U0CAROL',
        shown: [{ type: 'section' }],
      },
    ],
    audit: [
      { seq: 1, at: '2026-12-01T07:05:00.000Z', actor: 'U0ALICE', event: 'started', ts: '1.2' },
      { seq: 2, at: '2026-12-01T07:06:00.000Z', actor: 'bot', event: 'step', post: { text: '#2 step' }, attempted: true },
    ],
  });
}

/** Waits for the exporter's file: it is written after the store's write returned. */
async function exported(id: string): Promise<string> {
  for (let i = 0; i < 200; i += 1) {
    const files = await readdir(dir).catch((): string[] => []);
    if (files.includes(`${id}.json`)) return readFile(join(dir, `${id}.json`), 'utf8');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`no record for ${id} in ${dir}`);
}

describe('the maintenance record as JSON', () => {
  it('carries the operation generically under a schema version, without the bot bookkeeping', () => {
    const op = { ...running(), futureField: { plan: 'tfplan-1', resources: 3 } } as Operation;

    const json = JSON.parse(maintenanceRecordJson(op, NOW)) as {
      schema: string;
      schemaVersion: number;
      exportedAt: string;
      record: Record<string, unknown>;
    };

    expect(json.schema).toBe(RECORD_SCHEMA);
    expect(json.schemaVersion).toBe(1);
    expect(json.exportedAt).toBe(NOW.toISOString());
    expect(json.record.futureField).toEqual({ plan: 'tfplan-1', resources: 3 });
    expect(json.record.target).toEqual({ version: 'v1.12.1' });
    expect(json.record).not.toHaveProperty('revision');
    expect(json.record).not.toHaveProperty('planNonce');
    expect(json.record.approvals).toEqual([
      {
        step: 'node-1',
        messageTs: '1.1',
        requestedAt: '2026-12-01T07:10:00.000Z',
        expiresAt: '2026-12-01T08:10:00.000Z',
        state: 'approved',
        by: 'U0CAROL',
      },
    ]);
    expect(json.record.audit).toEqual([
      { seq: 1, at: '2026-12-01T07:05:00.000Z', actor: 'U0ALICE', event: 'started', ts: '1.2' },
      { seq: 2, at: '2026-12-01T07:06:00.000Z', actor: 'bot', event: 'step' },
    ]);
  });
});

describe('exporting records when operations end', () => {
  it('writes one 0640 file per operation when it fails, and again when it is cancelled afterwards, never while it runs', async () => {
    // Arrange
    const exporter = createRecordExporter({
      dir,
      now: () => NOW,
      logger: createLogger({ level: 'silent', scrubber: new SecretScrubber() }),
    });
    const store = createOperationStore(redis.client(), { onChange: (before, after) => exporter.operationChanged(before, after) });
    const op = running();
    await store.create(op);

    // Act
    await store.update(op.id, (o) => ({ ...o, startedBy: 'U0BOB' }));
    const whileRunning = await readdir(dir).catch((): string[] => []);
    await store.update(op.id, (o) => ({ ...o, state: 'failed', reason: 'node did not come back', endedAt: '2026-12-01T07:30:00.000Z' }));
    const failed = JSON.parse(await exported(op.id)) as { record: Operation };
    await store.update(op.id, (o) => ({ ...o, state: 'cancelled', endedAt: '2026-12-01T07:45:00.000Z', cancelRequestedBy: 'U0BOB' }));
    let cancelled = failed;
    for (let i = 0; i < 200 && cancelled.record.state !== 'cancelled'; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      cancelled = JSON.parse(await exported(op.id)) as { record: Operation };
    }

    // Assert
    expect(whileRunning).toEqual([]);
    expect(failed.record).toEqual(
      expect.objectContaining({ id: op.id, state: 'failed', reason: 'node did not come back', startedBy: 'U0BOB' }),
    );
    expect(cancelled.record).toEqual(
      expect.objectContaining({ state: 'cancelled', cancelRequestedBy: 'U0BOB', endedAt: '2026-12-01T07:45:00.000Z' }),
    );
    expect(await readdir(dir)).toEqual([`${op.id}.json`]);
    expect((await stat(join(dir, `${op.id}.json`))).mode & 0o777).toBe(0o640);
  });

  it('replaces a record atomically: no temporary file is left beside it', async () => {
    const exporter = createRecordExporter({
      dir,
      now: () => NOW,
      logger: createLogger({ level: 'silent', scrubber: new SecretScrubber() }),
    });
    const op = { ...running(), state: 'completed' as const, endedAt: '2026-12-01T07:50:00.000Z' };

    await Promise.all([exporter.write(op), exporter.write(op), exporter.write(op)]);

    expect(await readdir(dir)).toEqual([`${op.id}.json`]);
    expect(JSON.parse(await readFile(join(dir, `${op.id}.json`), 'utf8'))).toEqual(JSON.parse(maintenanceRecordJson(op, NOW)));
  });
});

describe('the people a record names', () => {
  let emu: SlackEmulator;
  beforeEach(async () => {
    emu = await startSlackEmulator({
      channels: [{ id: 'C0MAINTPRD', name: 'maint-prd' }],
      users: [
        { id: 'U0ALICE', name: 'alice', realName: 'Alice Moreau', displayName: 'alice.m' },
        // Set no display name: Slack answers "", and the record falls back to the full name.
        { id: 'U0CAROL', name: 'carol', realName: 'Carol Ng' },
      ],
    });
  });
  afterEach(async () => {
    await emu.close();
  });

  const slack = (apiUrl = emu.apiUrl): WebClient =>
    new WebClient(emu.botToken, { slackApiUrl: apiUrl, logLevel: LogLevel.ERROR, retryConfig: { retries: 0 } });
  const logger = createLogger({ level: 'silent', scrubber: new SecretScrubber() });
  const ended = (): Operation => ({ ...running(), state: 'completed', endedAt: '2026-12-01T07:50:00.000Z', startedBy: 'U0ALICE' });
  const peopleIn = async (path: string): Promise<unknown> => (JSON.parse(await readFile(path, 'utf8')) as { people: unknown }).people;

  it('names each person once by id and Slack display name, read once within the cache time', async () => {
    const exporter = createRecordExporter({ dir, now: () => NOW, logger, displayName: createUserNames(slack()) });

    const first = await exporter.write(ended());
    await exporter.write(ended());

    expect(await peopleIn(first)).toEqual([
      { id: 'U0ALICE', displayName: 'alice.m' },
      { id: 'U0CAROL', displayName: 'Carol Ng' },
    ]);
    // The bot's own audit entries (`actor: bot`) are no person; each person was looked up once for both writes.
    expect(emu.apiCalls.filter((c) => c.method === 'users.info').map((c) => c.args.user)).toEqual(['U0ALICE', 'U0CAROL']);
  });

  it('names people by id only, and still writes the record, without users:read or without Slack', async () => {
    emu.setScopes(emu.scopes.filter((s) => s !== 'users:read'));
    const noScope = createRecordExporter({ dir, now: () => NOW, logger, displayName: createUserNames(slack()) });
    const unreachable = createRecordExporter({
      dir: join(dir, 'offline'),
      now: () => NOW,
      logger,
      displayName: createUserNames(slack('http://127.0.0.1:9/api/')),
    });

    const withoutScope = await noScope.write(ended());
    const withoutSlack = await unreachable.write(ended());

    expect(await peopleIn(withoutScope)).toEqual([{ id: 'U0ALICE' }, { id: 'U0CAROL' }]);
    expect(await peopleIn(withoutSlack)).toEqual([{ id: 'U0ALICE' }, { id: 'U0CAROL' }]);
    expect(emu.apiCalls.filter((c) => c.method === 'users.info').map((c) => c.error)).toEqual(['missing_scope', 'missing_scope']);
  });
});
