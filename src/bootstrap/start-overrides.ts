import type { DestinationStream } from 'pino';
import type { Clock } from '../time/clock.ts';

/** What a test may replace when it starts the bot in-process; production passes none. */
export interface StartOverrides {
  /** Every deadline, wait and timestamp. Default the system's clock. */
  clock?: Clock;
  /** Where log lines go. Default standard output. */
  logDestination?: DestinationStream;
}
