/**
 * Preloaded into a bot child process (`NODE_OPTIONS=--import <this file>`): its
 * clock reads `TEST_CLOCK_SHIFT_MINUTES` later than the machine's, as if the bot had been down that long.
 * The composition root builds its clock on `Date`, so this is the child's injected clock: a test ages what
 * the bot stored (an approval's decision) without waiting for it. Timers are untouched.
 */
const shiftMs = Number(process.env['TEST_CLOCK_SHIFT_MINUTES'] ?? '0') * 60_000;
const RealDate = Date;

globalThis.Date = new Proxy(RealDate, {
  construct(target, args: unknown[], newTarget) {
    return Reflect.construct(target, args.length === 0 ? [RealDate.now() + shiftMs] : args, newTarget) as object;
  },
  get(target, property, receiver) {
    if (property === 'now') return () => RealDate.now() + shiftMs;
    return Reflect.get(target, property, receiver) as unknown;
  },
});
