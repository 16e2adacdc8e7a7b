import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { evaluateEtcdStatus } from '../../src/health/rules/etcd-status.ts';
import { parseEtcdMembers } from '../../src/talos/parse-etcd-members.ts';
import { parseSnapshotOutput } from '../../src/talos/parse-etcd-snapshot.ts';
import { parseEtcdStatus, type EtcdStatusRow } from '../../src/talos/parse-etcd-status.ts';
import { ParseError } from '../../src/talos/parse-error.ts';
import { extensionsFromGet, machineStatusesFromGet, parseGetJson, schematicsFromGet } from '../../src/talos/parse-get.ts';
import { parseGoQuotedList, readGoQuoted, unquoteGo } from '../../src/talos/parse-go-quoted.ts';
import { parseHealthOutput } from '../../src/talos/parse-health.ts';
import { parseJsonStream } from '../../src/talos/parse-json-stream.ts';
import { parseNodeErrors } from '../../src/talos/parse-node-errors.ts';
import { parseServiceInfo, parseServiceList } from '../../src/talos/parse-service.ts';
import { parseTable, parseTableRows } from '../../src/talos/parse-table.ts';
import { parseUpgradeK8sOutput } from '../../src/talos/parse-upgrade-k8s.ts';
import {
  isFailureLine,
  isLegacyFallback,
  isPostCheckPassed,
  isUnavailableLine,
  isUpgradeCompleted,
  isWaitingForActorId,
  parseMachineStage,
  parseProgressLine,
  parseTaskEvent,
} from '../../src/talos/parse-upgrade-progress.ts';
import { parseTalosVersion, parseTalosVersionJson } from '../../src/talos/parse-version.ts';
import { corpusFiles } from './corpus.ts';

const RUNS = 500;

const SAMPLES = Object.fromEntries(corpusFiles('talosctl/samples', '').map((f) => [f.name, f.text]));
function sample(name: string): string {
  const text = SAMPLES[name];
  if (text === undefined) throw new Error(`no sample ${name}`);
  return text;
}

interface Parser {
  name: string;
  parse: (text: string) => unknown;
  /** Real output it must parse. */
  samples: string[];
  /** Never throws at all (it reports what it finds, or nothing), rather than only ParseError. */
  total?: boolean;
}

const progressLines = (text: string): unknown =>
  text
    .split('\n')
    .map((line) => [
      parseProgressLine(line),
      isPostCheckPassed(line),
      isUpgradeCompleted(line),
      isWaitingForActorId(line),
      isUnavailableLine(line),
      isLegacyFallback(line),
      isFailureLine(line),
      parseTaskEvent(line),
      parseMachineStage(line),
    ]);
const goQuoted = (text: string): unknown => [
  readGoQuoted(text),
  readGoQuoted(text, text.indexOf('"')),
  unquoteGo(text),
  parseGoQuotedList(text),
];

/** Every parser of `src/talos/parse-*.ts`, with the real output it is written for. */
const PARSERS: Parser[] = [
  {
    name: 'parseTable',
    parse: (t) => parseTable(t),
    samples: [sample('etcd-status.txt'), sample('etcd-members.txt'), sample('service-list.txt')],
  },
  { name: 'parseTableRows', parse: (t) => parseTableRows(t), samples: [sample('etcd-status-1.10-nospace.txt')] },
  { name: 'parseEtcdStatus', parse: parseEtcdStatus, samples: [sample('etcd-status.txt'), sample('etcd-status-1.10-nospace.txt')] },
  { name: 'parseEtcdMembers', parse: parseEtcdMembers, samples: [sample('etcd-members.txt')] },
  { name: 'parseSnapshotOutput', parse: parseSnapshotOutput, samples: [sample('etcd-snapshot.txt')] },
  { name: 'parseServiceInfo', parse: parseServiceInfo, samples: [sample('service-etcd.txt'), sample('service-etcd-preparing.txt')] },
  { name: 'parseServiceList', parse: parseServiceList, samples: [sample('service-list.txt')] },
  { name: 'parseTalosVersion', parse: parseTalosVersion, samples: [sample('version.txt')] },
  { name: 'parseTalosVersionJson', parse: parseTalosVersionJson, samples: [sample('version.json')] },
  {
    name: 'parseJsonStream',
    parse: (t) => parseJsonStream(t, 'talosctl get -o json'),
    samples: [sample('get-extensions.json'), sample('version.json')],
  },
  { name: 'parseGetJson', parse: parseGetJson, samples: [sample('get-extensions.json'), sample('get-machinestatus.json')] },
  { name: 'extensionsFromGet', parse: (t) => extensionsFromGet(parseGetJson(t)), samples: [sample('get-extensions.json')] },
  { name: 'schematicsFromGet', parse: (t) => schematicsFromGet(parseGetJson(t)), samples: [sample('get-extensions.json')] },
  { name: 'machineStatusesFromGet', parse: (t) => machineStatusesFromGet(parseGetJson(t)), samples: [sample('get-machinestatus.json')] },
  { name: 'parseHealthOutput', parse: parseHealthOutput, samples: [sample('health.txt'), sample('health-failed.txt')] },
  { name: 'parseUpgradeK8sOutput (stdout)', parse: (t) => parseUpgradeK8sOutput(t), samples: [sample('upgrade-k8s-dry-run.txt')] },
  {
    name: 'parseUpgradeK8sOutput (stderr)',
    parse: (t) => parseUpgradeK8sOutput('', t),
    samples: ['unsupported upgrade path 1.32->1.34 (the version skew is too large)\n'],
  },
  { name: 'parseNodeErrors', parse: parseNodeErrors, samples: [sample('node-errors.txt')], total: true },
  { name: 'upgrade progress lines', parse: progressLines, samples: [sample('upgrade-progress.txt')], total: true },
  {
    name: 'Go-quoted strings',
    parse: goQuoted,
    samples: ['"10.0.0.5": phase: drain', '["172.20.0.2" "172.20.0.3"]', '"a\\tb\\u00e9\\x41\\101"'],
    total: true,
  },
];

/** The outcome of one parse: a value, a ParseError, or anything else (a crash). */
function attempt(parse: (text: string) => unknown, text: string): { ok: true; value: unknown } | { ok: false; error: unknown } {
  try {
    return { ok: true, value: parse(text) };
  } catch (error) {
    return { ok: false, error };
  }
}

/** A failure is only ever a ParseError that says what it could not parse, in bounded, single-line text. */
function expectCleanFailure(parser: Parser, text: string): void {
  const result = attempt(parser.parse, text);
  if (result.ok) return;
  if (parser.total === true) throw result.error;
  expect(result.error).toBeInstanceOf(ParseError);
  const message = (result.error as ParseError).message;
  expect(message).toMatch(/^cannot parse talosctl [a-z0-9 -]+(?:\([a-z]+\) )?output: \S/);
  expect(message).not.toContain('\n');
  expect(message.length).toBeLessThan(1_000);
}

/** Text close to talosctl output: its words, separators and quoting, with arbitrary text mixed in. */
const outputLike = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        'NODE',
        'MEMBER',
        'DB SIZE',
        'IN USE',
        'LEADER',
        'RAFT INDEX',
        'RAFT TERM',
        'RAFT APPLIED INDEX',
        'LEARNER',
        'ERRORS',
        'ID',
        'HOSTNAME',
        'PEER URLS',
        'CLIENT URLS',
      ),
      fc.constantFrom(
        'SERVICE',
        'STATE',
        'HEALTH',
        'LAST CHANGE',
        'LAST EVENT',
        'EVENTS',
        'LAST HEALTH MESSAGE',
        'Client:',
        'Server:',
        '\tNODE:',
        '\tTag:',
        'Talos',
      ),
      fc.constantFrom(
        'waiting for etcd to be healthy: ',
        'OK',
        'SKIP',
        '...',
        'discovered nodes: ',
        'WARNING: ',
        '1 error occurred:',
        '\t* ',
        'error from node ',
        'rpc error: code = Unavailable desc = ',
      ),
      fc.constantFrom(
        'etcd snapshot saved to ',
        'snapshot info: hash ',
        '(3m21s ago)',
        '[Running]: ',
        'updating "kube-apiserver" to version ',
        ' > ',
        ' < ',
        'automatically detected the lowest Kubernetes version ',
      ),
      fc.constantFrom(
        '10.0.30.11',
        'ecebb05b59a776f1',
        '0000000000000000',
        'v1.11.5',
        '1.34.0',
        'false',
        'true',
        '21 MB',
        '6.0 MB (29.08%)',
        '53391',
        '-1',
        '1e9',
        'NaN',
      ),
      fc.constantFrom('{', '}', '[', ']', '"', '\\', ':', ',', '{"node":"10.0.0.2","metadata":{"id":"x"},"spec":{}}', '\\u00', '\\x4'),
      fc.constantFrom('   ', '  ', ' ', '\n', '\t', '\r\n', '\r', '\u0000', '\u001b[32m', '\u00a0', '\u2028'),
      fc.string({ maxLength: 12 }),
    ),
    { maxLength: 80 },
  )
  .map((parts) => parts.join(''));

const anyText = fc.oneof(fc.string({ unit: 'binary', maxLength: 400 }), fc.string({ unit: 'grapheme', maxLength: 100 }), outputLike);

type Mutation =
  | { kind: 'truncate'; at: number }
  | { kind: 'duplicate-line'; line: number; times: number }
  | { kind: 'delete-line'; line: number }
  | { kind: 'swap-lines'; a: number; b: number }
  | { kind: 'insert'; at: number; text: string }
  | { kind: 'insert-words'; at: number; text: string }
  | { kind: 'squeeze-spaces'; to: string }
  | { kind: 'line-endings'; to: string }
  | { kind: 'replace-line'; line: number; text: string };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('duplicate-line' as const), line: fc.nat(), times: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ kind: fc.constant('delete-line' as const), line: fc.nat() }),
  fc.record({ kind: fc.constant('swap-lines' as const), a: fc.nat(), b: fc.nat() }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    text: fc.oneof(
      fc.string({ maxLength: 6 }),
      fc.constantFrom('   ', '\n', '\t', 'false', '0000000000000000', '"', '\\', '{', '}', ']', ': ', '\u0000', '\u00a0', 'ＭＢ', '%'),
    ),
  }),
  // Words inserted at the same place on every line: a column talosctl never printed, not aligned.
  fc.record({
    kind: fc.constant('insert-words' as const),
    at: fc.nat({ max: 200 }),
    text: fc.constantFrom('X   ', 'EXTRA   ', ' y', '   1   2', 'ERRORS   '),
  }),
  fc.record({ kind: fc.constant('squeeze-spaces' as const), to: fc.constantFrom(' ', '  ', '\t') }),
  fc.record({ kind: fc.constant('line-endings' as const), to: fc.constantFrom('\r\n', '\r', '\n\n') }),
  fc.record({ kind: fc.constant('replace-line' as const), line: fc.nat(), text: fc.string({ maxLength: 40 }) }),
);

function applyMutation(text: string, m: Mutation): string {
  const lines = text.split('\n');
  const pick = (n: number): number => n % Math.max(1, lines.length);
  switch (m.kind) {
    case 'truncate':
      return text.slice(0, m.at % (text.length + 1));
    case 'duplicate-line':
      return [
        ...lines.slice(0, pick(m.line) + 1),
        ...Array<string>(m.times).fill(lines[pick(m.line)] ?? ''),
        ...lines.slice(pick(m.line) + 1),
      ].join('\n');
    case 'delete-line':
      return lines.filter((_, i) => i !== pick(m.line)).join('\n');
    case 'swap-lines': {
      const [a, b] = [pick(m.a), pick(m.b)];
      const swapped = [...lines];
      [swapped[a], swapped[b]] = [lines[b] ?? '', lines[a] ?? ''];
      return swapped.join('\n');
    }
    case 'insert': {
      const at = m.at % (text.length + 1);
      return `${text.slice(0, at)}${m.text}${text.slice(at)}`;
    }
    case 'insert-words':
      return lines.map((l) => (l === '' ? l : `${l.padEnd(m.at).slice(0, m.at)}${m.text}${l.slice(m.at)}`)).join('\n');
    case 'squeeze-spaces':
      return text.replace(/ {2,}/g, m.to);
    case 'line-endings':
      return text.replace(/\n/g, m.to);
    case 'replace-line':
      return lines.map((l, i) => (i === pick(m.line) ? m.text : l)).join('\n');
  }
}

const mutated = (samples: string[]): fc.Arbitrary<string> =>
  fc
    .tuple(fc.constantFrom(...samples), fc.array(mutation, { minLength: 1, maxLength: 3 }))
    .map(([text, ms]) => ms.reduce(applyMutation, text));

describe('every talosctl output parser', () => {
  it.each(PARSERS.map((p) => [p.name, p] as const))('%s parses its real samples', (_, parser: Parser) => {
    for (const text of parser.samples) expect(attempt(parser.parse, text)).toMatchObject({ ok: true });
  });

  it.each(PARSERS.map((p) => [p.name, p] as const))(
    '%s fails on arbitrary text only with a ParseError that says what it could not parse',
    (_, parser: Parser) => {
      fc.assert(
        fc.property(anyText, (text) => {
          expectCleanFailure(parser, text);
        }),
        { numRuns: RUNS },
      );
    },
  );

  it.each(PARSERS.map((p) => [p.name, p] as const))(
    '%s fails on mutations of real output (truncated, duplicated lines, inserted columns) only with a ParseError',
    (_, parser: Parser) => {
      fc.assert(
        fc.property(mutated(parser.samples), (text) => {
          expectCleanFailure(parser, text);
        }),
        { numRuns: RUNS },
      );
    },
  );
});

/** The three control planes of the etcd-status sample. */
const CONTROL_PLANES = ['10.0.30.11', '10.0.30.12', '10.0.30.13'];

/** The gate's reading of `talosctl etcd status` stdout, as its probe does it. */
function etcdVerdict(text: string): { status: 'passed' | 'warning' | 'failed' | 'unparseable'; rows: EtcdStatusRow[] } {
  try {
    const rows = text.trim() === '' ? [] : parseEtcdStatus(text);
    return { status: evaluateEtcdStatus(rows, CONTROL_PLANES).status, rows };
  } catch (error) {
    if (error instanceof ParseError) return { status: 'unparseable', rows: [] };
    throw error;
  }
}

/** What a leader-agreed verdict rests on, per node. */
function evidence(row: EtcdStatusRow): unknown {
  return { member: row.member, leader: row.leader, learner: row.learner, errors: row.errors };
}

describe('the etcd verdict on output it has never seen', () => {
  const original = parseEtcdStatus(sample('etcd-status.txt'));

  it('passes the real three-member table', () => {
    expect(etcdVerdict(sample('etcd-status.txt')).status).toBe('passed');
  });

  it('never says the leader is agreed for arbitrary text', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        expect(etcdVerdict(text).status).toMatch(/^(failed|unparseable)$/);
      }),
      { numRuns: 1_000 },
    );
  });

  it("says the leader is agreed for a mutated table only when every node's member, leader, learner and errors are intact", () => {
    fc.assert(
      fc.property(mutated([sample('etcd-status.txt')]), (text) => {
        const verdict = etcdVerdict(text);
        if (verdict.status !== 'passed' && verdict.status !== 'warning') return;
        for (const node of CONTROL_PLANES) {
          const rows = verdict.rows.filter((r) => r.node === node);
          expect(rows).toHaveLength(1);
          expect(evidence(rows[0]!)).toEqual(evidence(original.find((r) => r.node === node)!));
        }
      }),
      { numRuns: 1_000 },
    );
  });
});

/** Inserts a column into a talosctl table where tabwriter would have put it: every line shifts alike. */
function insertAlignedColumn(text: string, index: number, name: string, value: string): string {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const header = lines[0] ?? '';
  const starts = [...header.matchAll(/\S+(?: \S+)*/g)].map((m) => m.index);
  const at = index < starts.length ? starts[index]! : Math.max(...lines.map((l) => l.trimEnd().length)) + 3;
  const width = Math.max(name.length, value.length) + 3;
  return `${lines.map((line, i) => `${line.padEnd(at).slice(0, at)}${(i === 0 ? name : value).padEnd(width)}${line.slice(at)}`).join('\n')}\n`;
}

describe('a column talosctl adds in a later release', () => {
  const column = fc.record({
    index: fc.nat({ max: 13 }),
    name: fc.stringMatching(/^Z[A-Z]{1,5}(?: [A-Z]{1,5})?$/),
    value: fc.stringMatching(/^[a-z0-9.%]{1,6}(?: [a-z0-9]{1,4})?$/),
  });

  it.each([
    ['parseEtcdStatus', parseEtcdStatus, 'etcd-status.txt'],
    ['parseEtcdStatus (≤1.10, an alarm)', parseEtcdStatus, 'etcd-status-1.10-nospace.txt'],
    ['parseEtcdMembers (empty cells)', parseEtcdMembers, 'etcd-members.txt'],
    ['parseServiceList', parseServiceList, 'service-list.txt'],
  ] as const)('%s reads the same rows wherever it is inserted', (_, parse: (text: string) => unknown, name) => {
    const text = sample(name);
    const expected = parse(text);
    fc.assert(
      fc.property(column, ({ index, name: header, value }) => {
        expect(parse(insertAlignedColumn(text, index, header, value))).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('keeps every known cell of the generic table parser', () => {
    const text = sample('etcd-status.txt');
    const expected = parseTable(text);
    fc.assert(
      fc.property(column, ({ index, name: header, value }) => {
        const records = parseTable(insertAlignedColumn(text, index, header, value));
        expect(records.map((r) => r[header])).toEqual(expected.map(() => value));
        expect(records.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => k !== header)))).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });
});
