import { describe, expect, it } from 'vitest';
import {
  assertNodeAddress,
  assertSafeArgument,
  isNodeAddress,
  isSafeToken,
  UnsafeArgumentError,
} from '../../../src/rules/argument-safety.ts';

describe('isSafeToken', () => {
  it.each(['10.0.30.11', 'fd00::11', 'v1.12.11', 'factory.talos.dev/nocloud-installer/abc:v1.12.11', './db.snapshot', 'a=b,c'])(
    'accepts %j',
    (value) => {
      expect(isSafeToken(value)).toBe(true);
    },
  );

  it.each([
    '',
    '-n',
    '--nodes=x',
    'a b',
    'a\tb',
    'a\nb',
    'a;id',
    'a|b',
    'a&b',
    '$(id)',
    '`id`',
    "a'b",
    'a"b',
    'a>b',
    '~root',
    'a\u0000b',
    'ａ',
    5,
  ])('refuses %j', (value) => {
    expect(isSafeToken(value)).toBe(false);
  });
});

describe('assertSafeArgument', () => {
  it('says why an argument is refused', () => {
    expect(() => assertSafeArgument('-rf')).toThrow('refusing the argument "-rf": it starts with "-" and would be read as a flag');
    expect(() => assertSafeArgument('10.0.0.1; reboot')).toThrow(UnsafeArgumentError);
  });
});

describe('isNodeAddress', () => {
  it.each(['10.0.30.11', '192.168.1.254', 'fd00::11', '::1', 'fe80::1%eth0', 'talos-cp-1', 'cp-1.example.com', 'cp-1.example.com.'])(
    'accepts %j',
    (value) => {
      expect(isNodeAddress(value)).toBe(true);
    },
  );

  it.each([
    '10.0.0.256',
    '10.0.0',
    '010.0.0.1',
    '-cp-1',
    'cp_1',
    'cp..example',
    'a'.repeat(64),
    'http://10.0.0.1',
    '10.0.0.1:50000',
    '10.0.0.1 ',
    '',
  ])('refuses %j', (value) => {
    expect(isNodeAddress(value)).toBe(false);
  });

  it('names the accepted forms when asserting', () => {
    expect(() => assertNodeAddress('10.0.0.256')).toThrow('"10.0.0.256" is not a node address: use an IPv4 or IPv6 address or a DNS name');
  });
});
