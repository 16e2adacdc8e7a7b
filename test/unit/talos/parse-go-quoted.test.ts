import { describe, expect, it } from 'vitest';
import { parseGoQuotedList, readGoQuoted, unquoteGo } from '../../../src/talos/parse-go-quoted.ts';

describe('Go %q strings', () => {
  it('unquotes escapes Go produces', () => {
    expect(unquoteGo('"a\\"b\\\\c\\n\\t\\x41\\u00e9\\U0001F600\\101"')).toBe('a"b\\c\n\tAé😀A');
  });

  it('refuses unterminated strings, bad escapes and trailing text', () => {
    expect(unquoteGo('"abc')).toBeUndefined();
    expect(unquoteGo('"a\\qb"')).toBeUndefined();
    expect(unquoteGo('"a" tail')).toBeUndefined();
    expect(unquoteGo('"\\xZZ"')).toBeUndefined();
  });

  it('reads a quoted string and where it ends', () => {
    expect(readGoQuoted('x "10.0.0.5": y', 2)).toEqual({ value: '10.0.0.5', end: 12 });
  });

  it('parses string slices', () => {
    expect(parseGoQuotedList('["172.20.0.2" "172.20.0.3"]')).toEqual(['172.20.0.2', '172.20.0.3']);
    expect(parseGoQuotedList('[]')).toEqual([]);
    expect(parseGoQuotedList('[172.20.0.2]')).toBeUndefined();
    expect(parseGoQuotedList('"a"')).toBeUndefined();
  });
});
