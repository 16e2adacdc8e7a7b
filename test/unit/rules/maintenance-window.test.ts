import { describe, expect, it } from 'vitest';
import { outsideWindowRefusal } from '../../../src/chat/window-refusal.ts';
import { outsideWindow } from '../../../src/rules/maintenance-window.ts';

const NIGHTLY = { start: '0 22 * * *', durationMinutes: 120, timeZone: 'Europe/Berlin' };

describe('outsideWindowRefusal', () => {
  it('says when the next window opens as a Slack date token, each reader in their own zone', () => {
    // Arrange: 10:00 UTC; the window opens at 22:00 in Berlin, 21:00 UTC.
    const now = new Date('2026-12-01T10:00:00Z');

    // Act
    const refusal = outsideWindowRefusal({ environment: 'production', maintenanceWindows: [NIGHTLY], allowOutsideWindows: false }, now);

    // Assert
    expect(refusal).toBe(
      'Production changes are taken only inside a maintenance window, and none is open now. ' +
        `The next window opens <!date^${Date.parse('2026-12-01T21:00:00Z') / 1000}^{date_short_pretty} {time}|2026-12-01 21:00 UTC>. ` +
        "(The inventory's allowOutsideWindows permits exceptions.)",
    );
  });

  it('refuses nothing inside a window, in staging, or where the inventory allows it', () => {
    // Arrange
    const inside = new Date('2026-12-01T21:30:00Z');
    const outside = new Date('2026-12-01T10:00:00Z');

    // Assert
    expect(
      outsideWindowRefusal({ environment: 'production', maintenanceWindows: [NIGHTLY], allowOutsideWindows: false }, inside),
    ).toBeUndefined();
    expect(
      outsideWindowRefusal({ environment: 'staging', maintenanceWindows: [NIGHTLY], allowOutsideWindows: false }, outside),
    ).toBeUndefined();
    expect(
      outsideWindowRefusal({ environment: 'production', maintenanceWindows: [NIGHTLY], allowOutsideWindows: true }, outside),
    ).toBeUndefined();
  });
});

describe('a production cluster without a declared window', () => {
  it('refuses every change until a window or `always` is declared, whatever allowOutsideWindows says', () => {
    // Arrange
    const now = new Date('2026-12-01T10:00:00Z');

    // Act
    const none = outsideWindow({ environment: 'production', maintenanceWindows: [], allowOutsideWindows: false }, now);
    const allowed = outsideWindow({ environment: 'production', maintenanceWindows: [], allowOutsideWindows: true }, now);
    const text = outsideWindowRefusal({ environment: 'production', maintenanceWindows: [], allowOutsideWindows: false }, now);

    // Assert
    expect(none).toEqual({ nextStart: undefined, undeclared: true });
    expect(allowed).toEqual({ nextStart: undefined, undeclared: true });
    expect(text).toContain('this cluster declares none, so it takes no change');
    expect(text).toContain('`maintenanceWindows: always`');
  });

  it('takes changes at any time with `always`, and staging needs no declaration', () => {
    // Arrange
    const now = new Date('2026-12-01T10:00:00Z');

    // Assert
    expect(outsideWindow({ environment: 'production', maintenanceWindows: 'always', allowOutsideWindows: false }, now)).toBeUndefined();
    expect(outsideWindow({ environment: 'staging', maintenanceWindows: [], allowOutsideWindows: false }, now)).toBeUndefined();
  });
});

describe('outsideWindow', () => {
  it('refuses with the next opening as a time, leaving the words to the presenter', () => {
    // Arrange: 10:00 UTC; the window opens at 22:00 in Berlin, 21:00 UTC.
    const now = new Date('2026-12-01T10:00:00Z');

    // Act
    const refusal = outsideWindow({ environment: 'production', maintenanceWindows: [NIGHTLY], allowOutsideWindows: false }, now);

    // Assert
    expect(refusal).toEqual({ nextStart: new Date('2026-12-01T21:00:00Z') });
  });

  it('refuses nothing inside a window', () => {
    // Act
    const refusal = outsideWindow(
      { environment: 'production', maintenanceWindows: [NIGHTLY], allowOutsideWindows: false },
      new Date('2026-12-01T22:59:00Z'),
    );

    // Assert
    expect(refusal).toBeUndefined();
  });
});
