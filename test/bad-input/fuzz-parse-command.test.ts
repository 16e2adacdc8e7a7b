import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseCommand, type Command } from '../../handlers/parse-command.ts';
import { isNodeAddress, isSafeToken } from '../../src/rules/argument-safety.ts';
import { parseKubernetesVersionInput, parseTalosVersionInput } from '../../src/rules/versions.ts';
import { readStringLines } from './corpus.ts';

const RUNS = 1000;

/** Words a `/talos` command is made of, odd address and version forms, and fragments of attacks. */
const token = fc.oneof(
  fc.constantFrom(
    'health',
    'gates',
    'plan',
    'snapshot',
    'upgrade',
    'talos',
    'k8s',
    'kubernetes',
    'rollback',
    'remove',
    'status',
    'cancel',
    'record',
    'help',
    'HEALTH',
    'Upgrade',
  ),
  fc.constantFrom('production', 'staging', 'edge-1', '__proto__', 'constructor', 'op-1a2b3c4d', 'op-', 'worker-3', 'localhost'),
  fc.stringMatching(/^v?[0-9]{1,4}(\.[0-9]{1,4}){0,4}$/),
  fc.ipV4(),
  fc.ipV4Extended(),
  fc.ipV6(),
  fc.domain(),
  fc.constantFrom('--force', '-n', '--nodes=10.0.0.2', '$(id)', '`id`', ';', '|', '&&', '>', '"', "'", '*', '../', '%eth0', ':50000'),
  fc.constantFrom(
    '１',
    '\u0432',
    '\u043e',
    '\u2174',
    '\u066b',
    '\u2024',
    '\u200b',
    '\u200d',
    '\u202e',
    '\ufeff',
    '\u0000',
    '\u001b[31m',
    '\ud800',
    '\u0338',
  ),
  fc.string({ maxLength: 8 }),
);
const separator = fc.constantFrom(' ', '  ', '\t', '\n', '\r\n', '\u00a0', '\u2028', '\u3000', '');
const commandLike = fc.array(fc.tuple(token, separator), { maxLength: 8 }).map((parts) => parts.map(([t, s]) => `${t}${s}`).join(''));
const mutatedCorpus = fc
  .tuple(fc.constantFrom(...readStringLines('commands.txt')), fc.nat(), token)
  .map(([text, at, insert]) => `${text.slice(0, at % (text.length + 1))}${insert}${text.slice(at % (text.length + 1))}`);
const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.string({ unit: 'grapheme', maxLength: 60 }),
  commandLike,
  mutatedCorpus,
);

/** Control, format (zero-width, bidi), surrogate, private-use and unassigned characters. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}]/u;

/** The grammar of every value that may reach a command line, per field of a command. */
function strictProblem(command: Command): string | undefined {
  for (const [key, value] of Object.entries(command) as [string, unknown][]) {
    if (key === 'kind' || value === undefined) continue;
    if (typeof value !== 'string' || !isSafeToken(value) || !/^[A-Za-z0-9._:-]+$/.test(value))
      return `${key} ${JSON.stringify(value)} is not a plain token`;
  }
  if ('cluster' in command && command.cluster !== undefined && !/^[a-z][a-z0-9-]{0,39}$/.test(command.cluster))
    return `cluster ${command.cluster}`;
  if (command.kind === 'talos-upgrade') {
    const canonical = parseTalosVersionInput(command.version);
    if (!canonical.ok || canonical.version !== command.version) return `Talos version ${command.version}`;
  }
  if (command.kind === 'k8s-upgrade') {
    const canonical = parseKubernetesVersionInput(command.version);
    if (!canonical.ok || `v${canonical.version}` !== command.version) return `Kubernetes version ${command.version}`;
  }
  if ((command.kind === 'node-rollback' || command.kind === 'node-remove') && !isNodeAddress(command.node)) return `node ${command.node}`;
  if ((command.kind === 'cancel' || command.kind === 'record') && !/^op-[a-z0-9]{4,40}$/.test(command.op)) return `op ${command.op}`;
  return undefined;
}

describe('parseCommand under fuzzing', () => {
  it('never throws, and answers every text with a command or a reason', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const result = parseCommand(text);
        expect(result.ok ? typeof result.command.kind : result.reason.length > 0).toBeTruthy();
      }),
      { numRuns: RUNS },
    );
  });

  it('accepts only values of the strict grammar: safe tokens, known cluster names, canonical versions, addresses, operation ids', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const result = parseCommand(text);
        expect(result.ok ? strictProblem(result.command) : undefined).toBeUndefined();
      }),
      { numRuns: RUNS },
    );
  });

  it('takes every accepted value from the text itself, save the leading v of a version', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const result = parseCommand(text);
        if (!result.ok) return;
        const words = text.trim().split(/\s+/);
        for (const [key, value] of Object.entries(result.command) as [string, unknown][]) {
          // `playbook` names the command a guided modal stands for, not a value from the text.
          if (key === 'kind' || key === 'playbook' || typeof value !== 'string') continue;
          expect(words.includes(value) || (key === 'version' && words.includes(value.slice(1)))).toBe(true);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('refuses in readable text: no control, zero-width or bidi character, and never longer than the help', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const result = parseCommand(text);
        if (result.ok) return;
        expect(result.reason.replaceAll('\n', '')).not.toMatch(INVISIBLE);
        expect(result.reason.length).toBeLessThan(1_500);
        expect(result.reason).toMatch(/`\/talos|e\.g\. `|Usage: `|Give the node's name or IP address/);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('parseCommand on the findings of the fuzzer', () => {
  it.each([
    ['a zero-width joiner', 'health production\u200d', '`production[U+200D]` contains characters a `/talos` argument never has (U+200D).'],
    [
      'a right-to-left override',
      'upgrade talos v1.12.11\u202e',
      '`v1.12.11[U+202E]` contains characters a `/talos` argument never has (U+202E).',
    ],
    ['a Cyrillic o', 'health pr\u043eduction', '`pr\u043eduction` contains characters a `/talos` argument never has (U+043E).'],
    ['a NUL', 'health\u0000', '`health[U+0000]` contains characters a `/talos` argument never has (U+0000).'],
    ['a semicolon', 'rollback 10.0.30.11;id', '`10.0.30.11;id` contains characters a `/talos` argument never has (`;`).'],
  ])('names %s instead of showing a word that looks plain', (_, text, start) => {
    // Act
    const result = parseCommand(text);

    // Assert
    expect(result).toEqual({ ok: false, reason: `${start} Use plain names, versions and addresses; see \`/talos help\`.` });
  });

  it.each([
    ['rollback 999.999.999.999', 'is not a node address'],
    ['remove 167779851', 'is not a node address'],
    ['rollback :::::', 'is not a node address'],
    ['rollback 10.0.30.011', 'is not a node address'],
    ['upgrade talos v01.12.11', 'is not a Talos version'],
    ['upgrade k8s 001.35.0', 'is not a Kubernetes version'],
  ])('refuses %j, which only looks like an address or a version', (text, why) => {
    // Act
    const result = parseCommand(text);

    // Assert
    expect(result.ok).toBe(false);
    expect(result.ok ? '' : result.reason).toContain(why);
  });
});
