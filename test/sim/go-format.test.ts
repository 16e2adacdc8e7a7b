import { describe, expect, it } from 'vitest';
import { formatGoDuration, humanizeBytes, parseGoDuration, tabwrite } from './go-format.ts';

describe('Go formatting helpers', () => {
  it('pads every tab-terminated cell by three spaces over the column block, leaving the last cell unpadded', () => {
    expect(
      tabwrite([
        ['NODE', 'ID', 'LEARNER'],
        ['10.0.0.1', '2ba6e48b8cf1a0c1', 'false'],
      ]),
    ).toBe('NODE       ID                 LEARNER\n10.0.0.1   2ba6e48b8cf1a0c1   false\n');
  });

  it('aligns a column only across consecutive rows that have it', () => {
    expect(tabwrite([['a', 'b', 'c'], ['long-cell'], ['x', 'y']])).toBe('a   b   c\nlong-cell\nx   y\n');
  });

  it('parses and prints durations like the time package', () => {
    expect(parseGoDuration('1m30s')).toBe(90_000);
    expect(parseGoDuration('250ms')).toBe(250);
    expect(parseGoDuration('20m0s')).toBe(1_200_000);
    expect(parseGoDuration('soon')).toBeUndefined();
    expect(formatGoDuration(201_400)).toBe('3m21s');
    expect(formatGoDuration(3_605_000)).toBe('1h0m5s');
  });

  it('prints SI byte sizes like go-humanize', () => {
    expect(humanizeBytes(21_037_056)).toBe('21 MB');
    expect(humanizeBytes(6_017_376)).toBe('6.0 MB');
    expect(humanizeBytes(512)).toBe('512 B');
  });
});
