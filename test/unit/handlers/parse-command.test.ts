import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HELP_TEXT, parseCommand, type Command } from '../../../handlers/parse-command.ts';

/** The command `text` parses to; fails the test with the refusal when it does not parse. */
function accepted(text: string): Command {
  const result = parseCommand(text);
  if (!result.ok) throw new Error(`refused ${JSON.stringify(text)}: ${result.reason}`);
  return result.command;
}

/** The reason `text` is refused; fails the test when it parses. */
function refused(text: string): string {
  const result = parseCommand(text);
  if (result.ok) throw new Error(`accepted ${JSON.stringify(text)} as ${JSON.stringify(result.command)}`);
  expect(result.reason.length).toBeGreaterThan(0);
  return result.reason;
}

describe('parseCommand: subcommands', () => {
  it.each([
    ['', { kind: 'help' }],
    ['   ', { kind: 'help' }],
    ['help', { kind: 'help' }],
    ['HELP', { kind: 'help' }],
    ['health', { kind: 'health', cluster: undefined }],
    ['health staging', { kind: 'health', cluster: 'staging' }],
    ['  Health   production  ', { kind: 'health', cluster: 'production' }],
    ['gates production', { kind: 'gates', cluster: 'production' }],
    ['plan', { kind: 'terraform-apply', cluster: undefined }],
    ['snapshot edge-1', { kind: 'snapshot', cluster: 'edge-1' }],
    ['upgrade talos v1.12.11', { kind: 'talos-upgrade', version: 'v1.12.11', cluster: undefined }],
    ['upgrade talos 1.12.11 production', { kind: 'talos-upgrade', version: 'v1.12.11', cluster: 'production' }],
    ['upgrade TALOS v1.12.11', { kind: 'talos-upgrade', version: 'v1.12.11', cluster: undefined }],
    ['upgrade k8s 1.35.0', { kind: 'k8s-upgrade', version: 'v1.35.0', cluster: undefined }],
    ['upgrade kubernetes v1.35.0 staging', { kind: 'k8s-upgrade', version: 'v1.35.0', cluster: 'staging' }],
    ['rollback 10.0.30.12', { kind: 'node-rollback', node: '10.0.30.12', cluster: undefined }],
    ['rollback fd00::12 production', { kind: 'node-rollback', node: 'fd00::12', cluster: 'production' }],
    ['remove 10.0.30.21 staging', { kind: 'node-remove', node: '10.0.30.21', cluster: 'staging' }],
    ['remove worker-3', { kind: 'node-remove', node: 'worker-3', cluster: undefined }],
    ['replace talos-prd-cp-2 production', { kind: 'node-replace', node: 'talos-prd-cp-2', cluster: 'production' }],
    ['status', { kind: 'status' }],
    ['cancel op-1a2b3c4d', { kind: 'cancel', op: 'op-1a2b3c4d' }],
    ['record op-0123456789', { kind: 'record', op: 'op-0123456789' }],
  ] as const)('parses %j', (text, command) => {
    // Act
    const result = accepted(text);

    // Assert
    expect(result).toEqual(command);
  });

  it('normalizes a version to its leading v and keeps one that has it', () => {
    // Act
    const bare = accepted('upgrade talos 1.12.11');
    const prefixed = accepted('upgrade talos v1.12.11');

    // Assert
    expect(bare).toEqual(prefixed);
    expect(bare).toEqual({ kind: 'talos-upgrade', version: 'v1.12.11', cluster: undefined });
  });
});

describe('parseCommand: usage errors', () => {
  it.each([
    ['health staging production', 'Too many arguments. Usage: `/talos health [cluster]`.'],
    ['gates a b', 'Too many arguments. Usage: `/talos gates [cluster]`.'],
    ['status now', 'Too many arguments. Usage: `/talos status`.'],
    ['upgrade talos v1.12.11 production now', 'Too many arguments. Usage: `/talos upgrade talos <version> [cluster]`.'],
    ['rollback 10.0.30.12 production now', 'Too many arguments. Usage: `/talos rollback <node> [cluster]`.'],
    ['cancel op-1a2b3c4d op-5e6f7a8b', 'Too many arguments. Usage: `/talos cancel <op>`.'],
    ['upgrade', 'Say what to upgrade: `/talos upgrade talos <version> [cluster]` or `/talos upgrade k8s <version> [cluster]`.'],
    [
      'upgrade cilium 1.16.0',
      'Say what to upgrade: `/talos upgrade talos <version> [cluster]` or `/talos upgrade k8s <version> [cluster]`.',
    ],
    ['upgrade talos 1.12', '`1.12` is not a Talos version. Write it as MAJOR.MINOR.PATCH with or without a leading v, e.g. `v1.12.11`.'],
    [
      'upgrade talos latest',
      '`latest` is not a Talos version. Write it as MAJOR.MINOR.PATCH with or without a leading v, e.g. `v1.12.11`.',
    ],
    [
      'upgrade talos v1.12.11-beta.0',
      '`v1.12.11-beta.0` is not a Talos version. Write it as MAJOR.MINOR.PATCH with or without a leading v, e.g. `v1.12.11`.',
    ],
    [
      'upgrade talos V1.12.11',
      '`V1.12.11` is not a Talos version. Write it as MAJOR.MINOR.PATCH with or without a leading v, e.g. `v1.12.11`.',
    ],
    [
      'health Production',
      '`Production` is not a cluster name. Cluster names are lower-case letters, digits and dashes, e.g. `production`.',
    ],
    [
      'upgrade talos v1.12.11 -production',
      '`-production` is not a cluster name. Cluster names are lower-case letters, digits and dashes, e.g. `production`.',
    ],
    ['remove --all', "`--all` is not a node address or name. Give the node's name or IP address as listed in the inventory."],
    ['cancel', 'Name the operation, e.g. `/talos cancel op-1a2b3c4d` (see `/talos status`).'],
    ['record 1a2b3c4d', '`1a2b3c4d` is not an operation id; ids look like `op-1a2b3c4d` (see `/talos status`).'],
    ['cancel op-ABCDEF12', '`op-ABCDEF12` is not an operation id; ids look like `op-1a2b3c4d` (see `/talos status`).'],
  ])('refuses %j', (text, reason) => {
    // Act
    const result = parseCommand(text);

    // Assert
    expect(result).toEqual({ ok: false, reason });
  });

  it('answers an unknown subcommand with the help text', () => {
    // Act
    const reason = refused('reboot 10.0.30.11');

    // Assert
    expect(reason).toBe(`\`/talos reboot\` is not a command.\n${HELP_TEXT}`);
  });
});

describe('parseCommand: hostile input', () => {
  it.each([
    ['command substitution', 'health $(id)'],
    ['backticks', 'health `id`'],
    ['a semicolon', 'rollback 10.0.30.12;reboot'],
    ['a pipe', 'health staging|sh'],
    ['an and-list', 'remove 10.0.30.12&&id'],
    ['a redirect', 'record op-1a2b3c4d>/etc/passwd'],
    ['double quotes', 'health "staging"'],
    ['single quotes', "health 'staging'"],
    ['a variable', 'upgrade talos $VERSION'],
    ['a glob', 'remove 10.0.30.*'],
    ['a path', 'health ../../etc'],
    ['a full-width digit', 'upgrade talos １.12.11'],
    ['a Cyrillic в for a v', 'upgrade talos \u04321.12.11'],
    ['a Cyrillic е in a cluster name', 'health stag\u0435ing'],
    ['a zero-width space', 'health stag\u200bing'],
    ['a NUL', 'health staging\u0000'],
  ])('refuses %s before interpreting it', (_, text) => {
    // Act
    const reason = refused(text);

    // Assert
    expect(reason).toMatch(/contains characters a `\/talos` argument never has/);
  });

  it('treats a newline as a separator, so a second line is an extra argument', () => {
    // Act
    const reason = refused('rollback 10.0.30.12\nreboot now');

    // Assert
    expect(reason).toBe('Too many arguments. Usage: `/talos rollback <node> [cluster]`.');
  });

  it.each([
    ['rollback 10.0.0.1 --force'],
    ['remove 10.0.0.1 --nodes 10.0.0.2'],
    ['upgrade talos v1.12.11 --preserve'],
    ['health --talosconfig=/tmp/x'],
    ['snapshot -n'],
  ])('refuses a flag-like extra argument in %j', (text) => {
    // Act
    const result = parseCommand(text);

    // Assert
    expect(result.ok).toBe(false);
  });

  it('refuses a Cyrillic v in a version with the characters it found', () => {
    // Arrange: U+0432 looks like a Latin v in many fonts.
    const text = 'upgrade talos \u04321.12.11';

    // Act
    const reason = refused(text);

    // Assert
    expect(reason).toBe(
      '`\u04321.12.11` contains characters a `/talos` argument never has (U+0432). Use plain names, versions and addresses; see `/talos help`.',
    );
  });

  it('never lets a backtick through into its own Markdown', () => {
    // Act
    const reason = refused('health `rm -rf /`');

    // Assert
    expect(reason.startsWith("`'rm` contains characters")).toBe(true);
  });

  it('refuses very long input by its length, without echoing it', () => {
    // Arrange
    const text = `health ${'a'.repeat(10_000)}`;

    // Act
    const reason = refused(text);

    // Assert
    expect(reason).toBe('That command is 10007 characters long; `/talos` commands are short. Try `/talos help`.');
  });

  it('accepts the longest command that fits', () => {
    // Arrange: a 40-character cluster name after 191 characters of spacing makes 200 in all.
    const cluster = `a${'b'.repeat(39)}`;
    const text = `health${' '.repeat(200 - 6 - cluster.length)}${cluster}`;

    // Act
    const command = accepted(text);

    // Assert
    expect(text).toHaveLength(200);
    expect(command).toEqual({ kind: 'health', cluster });
    expect(parseCommand(` ${text}`).ok).toBe(false);
  });
});

describe('parseCommand on arbitrary input', () => {
  /** Text close to real commands: known words, versions, addresses and hostile characters. */
  const commandLike = fc
    .array(
      fc.oneof(
        fc.constantFrom(
          'health',
          'gates',
          'plan',
          'snapshot',
          'upgrade',
          'talos',
          'k8s',
          'rollback',
          'remove',
          'status',
          'cancel',
          'record',
          'help',
        ),
        fc.constantFrom('v1.12.11', '1.35.0', '10.0.30.12', 'fd00::1', 'production', 'op-1a2b3c4d', '--force', '-n'),
        fc.constantFrom(' ', '  ', '\n', '\t', '$(id)', '`', ';', '|', '&&', '"', "'", '１', '\u0432', '\u200b', '\u0000'),
        fc.string({ maxLength: 8 }),
      ),
      { maxLength: 8 },
    )
    .map((parts) => parts.join(' '));

  const anyText = fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), fc.string({ maxLength: 60 }), commandLike);

  it('never throws', () => {
    // Assert
    fc.assert(
      fc.property(anyText, (text) => {
        expect(() => parseCommand(text)).not.toThrow();
      }),
      { numRuns: 2000 },
    );
  });

  it('lets only plain tokens through in every string field of an accepted command', () => {
    // Assert
    fc.assert(
      fc.property(anyText, (text) => {
        const result = parseCommand(text);
        if (!result.ok) return;
        for (const [key, value] of Object.entries(result.command)) {
          if (key === 'kind' || value === undefined) continue;
          expect(value).toMatch(/^[A-Za-z0-9._:-]+$/);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('a playbook command without its version or node', () => {
  it.each([
    ['upgrade talos', 'talos-upgrade'],
    ['upgrade k8s', 'k8s-upgrade'],
    ['rollback', 'node-rollback'],
    ['remove', 'node-remove'],
    ['replace', 'node-replace'],
  ])('%j asks for it in a modal', (text, playbook) => {
    // Act
    const result = parseCommand(text);

    // Assert
    expect(result).toEqual({ ok: true, command: { kind: 'guided', playbook } });
  });

  it('takes a node by name where it takes an address', () => {
    // Act
    const result = parseCommand('rollback talos-prd-cp-2');

    // Assert
    expect(result).toEqual({ ok: true, command: { kind: 'node-rollback', node: 'talos-prd-cp-2', cluster: undefined } });
  });
});
