import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseKubernetesVersionInput, parseTalosVersionInput } from '../../../src/rules/versions.ts';
import { parseEtcdStatus } from '../../../src/talos/parse-etcd-status.ts';
import { ParseError } from '../../../src/talos/parse-error.ts';
import { parseTable } from '../../../src/talos/parse-table.ts';
import { parseTalosVersion } from '../../../src/talos/parse-version.ts';

/** Whether `parse` either returned or threw a ParseError (anything else is a crash). */
function throwsOnlyParseError(parse: (text: string) => unknown, text: string): boolean {
  try {
    parse(text);
    return true;
  } catch (error) {
    return error instanceof ParseError;
  }
}

/** Strings close to talosctl output: table-ish words, tabs, newlines, and arbitrary text. */
const outputLike = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc
    .array(
      fc.oneof(
        fc.constantFrom('NODE', 'MEMBER', 'DB SIZE', 'LEADER', 'ERRORS', 'Client:', 'Server:', '\tTag:', '\tNODE:', 'v1.11.0', 'false'),
        fc.constantFrom('   ', '  ', ' ', '\n', '\t', '\r\n'),
        fc.string({ maxLength: 12 }),
      ),
      { maxLength: 60 },
    )
    .map((parts) => parts.join('')),
);

describe('parsers on arbitrary input', () => {
  it.each([
    ['parseTable', parseTable],
    ['parseEtcdStatus', parseEtcdStatus],
    ['parseTalosVersion', parseTalosVersion],
  ] as const)('%s throws nothing but ParseError', (_, parse) => {
    fc.assert(
      fc.property(outputLike, (text) => {
        expect(throwsOnlyParseError(parse, text)).toBe(true);
      }),
    );
  });
});

describe('version input on arbitrary strings', () => {
  it('never accepts a character outside [v0-9.]', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), fc.stringMatching(/^v?[0-9.]{1,12}[^v0-9.]?[0-9.]{0,4}$/)),
        (input) => {
          const accepted = parseTalosVersionInput(input).ok || parseKubernetesVersionInput(input).ok;
          expect(accepted && !/^[v0-9.]+$/.test(input)).toBe(false);
        },
      ),
    );
  });

  it('accepts every plain release and normalises it', () => {
    fc.assert(
      fc.property(fc.nat(99), fc.nat(99), fc.nat(999), fc.boolean(), (major, minor, patch, v) => {
        const result = parseTalosVersionInput(`${v ? 'v' : ''}${major}.${minor}.${patch}`);
        expect(result).toEqual({ ok: true, version: `v${major}.${minor}.${patch}` });
      }),
    );
  });
});
