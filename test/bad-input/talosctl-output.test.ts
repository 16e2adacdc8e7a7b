import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CannedOutput } from '../sim/index.ts';
import type { Message } from '../slack-emulator/index.ts';
import { runGate, type GateRun } from '../support/gate-run.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { corpusFiles } from './corpus.ts';

/**
 * The gate's talosctl probes, by the corpus file prefix: the command the simulator answers with
 * the file, the stream talosctl prints it on, and the check's title in the thread.
 */
const PROBES = {
  version: { command: 'version', stream: 'stdout', title: 'talosctl version' },
  health: { command: 'health', stream: 'stderr', title: 'talosctl health' },
  'service-etcd': { command: 'service etcd', stream: 'stdout', title: 'talosctl service etcd' },
  'etcd-status': { command: 'etcd status', stream: 'stdout', title: 'talosctl etcd status' },
} as const;
type Probe = keyof typeof PROBES;

interface Case {
  name: string;
  probe: Probe;
  expect: 'pass' | 'fail';
  text: string;
}

const ONE_MB = 1024 * 1024;

/** `<probe>--<what>.<pass|fail>.txt`; the output is printed as it is, with exit code 0. */
const CASES: Case[] = [
  ...corpusFiles('talosctl', '.txt').map((file) => {
    const match = /^([a-z-]+?)--[a-z0-9-]+\.(pass|fail)\.txt$/.exec(file.name);
    if (match === null || !(match[1]! in PROBES)) throw new Error(`${file.name} does not name its probe and expectation`);
    return { name: file.name, probe: match[1] as Probe, expect: match[2] as 'pass' | 'fail', text: file.text };
  }),
  // Generated: a megabyte on one line, under the header where there is one.
  ...(Object.keys(PROBES) as Probe[]).map((probe) => ({
    name: `${probe}--one-megabyte-line (generated)`,
    probe,
    expect: 'fail' as const,
    text: `${probe === 'etcd-status' ? 'NODE   MEMBER   DB SIZE   IN USE   LEADER   RAFT INDEX   RAFT TERM   RAFT APPLIED INDEX   LEARNER   ERRORS\n' : ''}${'A1 '.repeat(ONE_MB / 3)}\n`,
  })),
];

/** The etcd member IDs the corpus files were written with. */
const MEMBERS = { '10.0.30.11': '3ffc6ed7e30c7bf8', '10.0.30.12': 'b62345c92b27704a', '10.0.30.13': '07556897edbd6acf' };
interface Outcome {
  /** The check's own reply, which a failing or warning check gets. */
  reply: Message | undefined;
  /** The check's line in the one reply of passing checks. */
  passedLine: string | undefined;
  root: Message;
  running: boolean;
}

let h: Harness;
const outcomes = new Map<string, Outcome>();

/** A probe's check as the finished gate shows it: its own reply, or its line among the passing checks. */
function outcomeOf(run: GateRun, probe: Probe): Omit<Outcome, 'running'> {
  const { title } = PROBES[probe];
  return {
    root: run.root,
    reply: run.replies.find((r) => r.text.includes(`${title} (`)),
    passedLine: run.replies.flatMap((r) => r.text.split('\n')).find((line) => line.startsWith(`✅ ${title}: `)),
  };
}

beforeAll(async () => {
  h = await startHarness();
  // One gate run answers one case of each probe at once: the probes share nothing.
  const byProbe = (Object.keys(PROBES) as Probe[]).map((probe) => CASES.filter((c) => c.probe === probe));
  const rounds = Math.max(...byProbe.map((list) => list.length));
  for (let round = 0; round < rounds; round += 1) {
    const cases = byProbe.map((list) => list[round]).filter((c): c is Case => c !== undefined);
    const output: Record<string, CannedOutput> = {};
    for (const c of cases) output[PROBES[c.probe].command] = { [PROBES[c.probe].stream]: c.text, exitCode: 0 };
    h.sim.faults.set('production', { output });
    const run = await runGate(h);
    for (const c of cases) outcomes.set(c.name, { ...outcomeOf(run, c.probe), running: h.bot.running() });
  }
  h.sim.faults.clear('production');
}, 600_000);

afterAll(async () => {
  await h?.stop();
});

describe('talosctl output the bot has never seen, through the health gate', () => {
  it('has a corpus worth running, and the healthy cluster passes without it', async () => {
    expect(CASES.length).toBeGreaterThan(40);
    expect(Object.keys(MEMBERS).map((node) => h.sim.node('production', node).etcdMemberId)).toEqual(Object.values(MEMBERS));
    const { root } = await runGate(h);
    expect(root.text).toMatch(/^✅ Health gate passed: production/);
  });

  it.each(CASES.filter((c) => c.expect === 'fail').map((c) => [c.name, c] as const))(
    '%s is a failed check with a sentence, never a pass or a crash',
    (_, c: Case) => {
      // Arrange
      const outcome = outcomes.get(c.name);

      // Assert
      expect(outcome?.running).toBe(true);
      const text = outcome?.reply?.text ?? '';
      const failed = new RegExp(`^❌ ${PROBES[c.probe].title} \\([^)]*\\): `);
      expect(text.slice(0, 300)).toMatch(failed);
      const summary = text.replace(failed, '');
      expect(summary).toMatch(/^[\w"(`].*[a-z]{3,} [a-z]{2,}/s);
      expect(summary.length).toBeLessThan(700);
      expect(summary).not.toMatch(/^\s+at /m);
      expect(JSON.stringify(outcome?.reply?.blocks ?? []).length).toBeLessThan(12_000);
      expect(outcome?.root.text).toMatch(/^❌ Health gate failed: production/);
    },
  );

  it.each(CASES.filter((c) => c.expect === 'pass').map((c) => [c.name, c] as const))(
    '%s is a variation talosctl may print, and passes',
    (_, c: Case) => {
      // Arrange
      const outcome = outcomes.get(c.name);

      // Assert
      expect(outcome?.running).toBe(true);
      expect(outcome?.reply).toBeUndefined();
      expect(outcome?.passedLine).toMatch(new RegExp(`^✅ ${PROBES[c.probe].title}: \\S`));
    },
  );
});
