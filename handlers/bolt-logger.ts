import { LogLevel, type Logger as BoltLogger } from '@slack/bolt';
import type { Logger } from '../src/log/logger.ts';

/** Routes Bolt's own logging through the scrubbed pino root. */
export function boltLogger(logger: Logger): BoltLogger {
  const log = logger.child({ component: 'bolt' });
  let level = LogLevel.INFO;
  const text = (msg: unknown[]): string =>
    msg.map((m) => (typeof m === 'string' ? m : m instanceof Error ? m.message : JSON.stringify(m))).join(' ');
  return {
    debug: (...msg) => log.debug(text(msg)),
    info: (...msg) => log.info(text(msg)),
    warn: (...msg) => log.warn(text(msg)),
    error: (...msg) => log.error(text(msg)),
    setLevel: (l) => {
      level = l;
    },
    getLevel: () => level,
    setName: () => undefined,
  };
}
