import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/config-error.ts';
import { loadInventory, parseInventory } from '../../src/config/inventory.ts';
import { botProcess } from '../support/bot-process.ts';
import { corpusFiles, expectation, type CorpusFile } from './corpus.ts';
import { VALID_INVENTORY } from './inventory-fixture.ts';

const INVENTORIES = corpusFiles('inventories', '.yaml');

/** A stack frame as Node prints it. */
const STACK_FRAME = /^\s+at .+[(:]\d+/m;

function loadError(path: string): unknown {
  try {
    loadInventory(path);
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('the bad-inventory corpus through loadInventory', () => {
  it('has a corpus worth running, and its base inventory is valid', () => {
    expect(INVENTORIES.length).toBeGreaterThan(40);
    expect(parseInventory(VALID_INVENTORY, 'valid.yaml').clusters.map((c) => c.name)).toEqual(['staging', 'production']);
  });

  it.each(INVENTORIES.map((f) => [f.name, f] as const))(
    '%s is refused with a ConfigError naming the file and the problem',
    (_, file: CorpusFile) => {
      // Act
      const error = loadError(file.path);

      // Assert
      expect(error).toBeInstanceOf(ConfigError);
      const message = (error as ConfigError).message;
      expect(message).toContain(`The cluster inventory ${file.path} is invalid:`);
      expect(message).toContain(expectation(file));
      // One line per problem: nothing from the file can add lines of its own.
      expect((error as ConfigError).problems.every((p) => !p.includes('\n') && p.length <= 300)).toBe(true);
    },
  );

  it.each([
    ['a missing file', '/nonexistent/clusters.yaml', 'cannot read /nonexistent/clusters.yaml: ENOENT'],
    ['a directory', tmpdir(), `cannot read ${tmpdir()}: EISDIR`],
  ])('refuses %s with the reason it cannot be read', (_, path, problem) => {
    // Act
    const error = loadError(path);

    // Assert
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([problem]);
  });
});

describe('the bad-inventory corpus through the real bot', () => {
  let dir: string;
  const outcomes = new Map<string, Started>();
  const missing = (): string => join(dir, 'missing.yaml');

  interface Started {
    started: boolean;
    code: number | null;
    output: string;
  }

  /** Starts `node src/entry.ts` with the inventory; the rest of its environment is valid and unused. */
  async function startWith(clustersFile: string): Promise<Started> {
    const bot = botProcess({
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: dir,
      SLACK_BOT_TOKEN: 'xoxb-inventory-test',
      SLACK_APP_TOKEN: 'xapp-inventory-test',
      // Nothing listens here: the bot must stop at its inventory, before it connects anywhere.
      REDIS_URL: 'redis://127.0.0.1:1',
      CLUSTERS_FILE: clustersFile,
      HTTP_PORT: '0',
    });
    const started = await bot.start().then(
      () => true,
      () => false,
    );
    // On a busy machine loading the bot can outlast the start timeout; the process still ends by itself.
    for (let i = 0; i < 1_200 && !started && bot.running(); i += 1) await new Promise((r) => setTimeout(r, 50));
    return { started, code: await bot.stop(), output: bot.logs() };
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'talos-chatops-inventory-'));
    // Two at a time, one per core.
    const queue = [...INVENTORIES.map((f) => f.path), missing()];
    const worker = async (): Promise<void> => {
      for (let path = queue.shift(); path !== undefined; path = queue.shift()) outcomes.set(path, await startWith(path));
    };
    await Promise.all([worker(), worker()]);
  }, 600_000);

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each(INVENTORIES.map((f) => [f.name, f] as const))('exits with 2 and a readable message for %s', (_, file: CorpusFile) => {
    // Act
    const outcome = outcomes.get(file.path);

    // Assert
    expect(outcome).toMatchObject({ started: false, code: 2 });
    expect(outcome?.output).toContain(`talos-chatops cannot start. The cluster inventory ${file.path} is invalid:`);
    expect(outcome?.output).toContain(expectation(file));
    expect(outcome?.output).not.toMatch(STACK_FRAME);
  });

  it('exits with 2 naming CLUSTERS_FILE when the inventory cannot be read', () => {
    // Act
    const outcome = outcomes.get(missing());

    // Assert
    expect(outcome).toEqual({
      started: false,
      code: 2,
      output: `talos-chatops cannot start. CLUSTERS_FILE is invalid:\n  - cannot read ${missing()}: ENOENT\n`,
    });
  });
});
