import { pino, type DestinationStream, type Logger } from 'pino';
import type { SecretScrubber } from './secret-scrubber.ts';

export type { Logger } from 'pino';

export interface LoggerOptions {
  level: string;
  /** Human-readable output for local use; JSON otherwise. */
  pretty?: boolean;
  scrubber: SecretScrubber;
  /** Where lines go; standard output when unset. */
  destination?: DestinationStream;
}

/** Field names whose values are credentials wherever they appear in a log object. */
const REDACT_PATHS = [
  'token',
  'botToken',
  'appToken',
  'signingSecret',
  'kubeconfig',
  'talosconfig',
  'password',
  'authorization',
  '*.token',
  '*.kubeconfig',
  '*.talosconfig',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
];

/** The one root logger; jobs take children with `{ op, cluster, node }`. */
export function createLogger(options: LoggerOptions): Logger {
  const destination =
    options.destination ??
    (options.pretty === true
      ? // The transport's worker thread cannot see the terminal, so whether to colour is decided here.
        pino.transport({ target: 'pino-pretty', options: { colorize: process.stdout.isTTY === true, translateTime: 'SYS:HH:MM:ss.l' } })
      : pino.destination({ sync: false }));
  return pino(
    {
      level: options.level,
      base: { service: 'talos-chatops' },
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      hooks: {
        // Last line of defence: a secret that slipped into a message or an error text.
        streamWrite: (line: string) => options.scrubber.scrub(line),
      },
    },
    destination,
  );
}
