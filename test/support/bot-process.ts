import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileCacheDir } from './compile-cache.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface BotProcess {
  /** The `HTTP_PORT` it serves `/healthz`, `/readyz` and `/metrics` on. */
  readonly httpPort: number;
  /** Everything the bot wrote to stdout and stderr, across restarts. */
  logs(): string;
  /** Parsed JSON log lines. */
  logLines(): Record<string, unknown>[];
  start(): Promise<void>;
  /** SIGTERM and wait; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL at once, as a crash would. */
  kill(): Promise<void>;
  running(): boolean;
  pid(): number | undefined;
  /** Times the process ended by itself (a crash, an exit), not through `stop` or `kill`, across restarts. */
  exits(): number;
}

/** A log line as an object; a line that is not JSON (cut short, say) is an empty one. */
function parseLine(line: string): Record<string, unknown> {
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/** The real bot, `node src/entry.ts`, as a child process with only the environment given. */
export function botProcess(env: Record<string, string>, options: { onLine?: (line: string) => void } = {}): BotProcess {
  let child: ChildProcess | undefined;
  let output = '';
  /** The JSON lines of `output` that `logLines` has parsed so far, and the text after them, not parsed yet. */
  const parsed: Record<string, unknown>[] = [];
  let unparsed = '';
  let exits = 0;
  const exitOf = (proc: ChildProcess): Promise<number | null> =>
    proc.exitCode !== null || proc.signalCode !== null
      ? Promise.resolve(proc.exitCode)
      : new Promise((r) => proc.once('exit', (code) => r(code)));
  return {
    httpPort: Number(env.HTTP_PORT),
    logs: () => output,
    logLines: () => {
      // Complete lines are parsed once and kept: tests and the bench poll this while the bot logs thousands of lines.
      const end = unparsed.lastIndexOf('\n') + 1;
      if (end > 0) {
        for (const line of unparsed.slice(0, end).split('\n')) if (line.startsWith('{')) parsed.push(parseLine(line));
        unparsed = unparsed.slice(end);
      }
      // A line the bot is still writing is read as it stands, and again once it is complete.
      return unparsed.startsWith('{') ? [...parsed, parseLine(unparsed)] : [...parsed];
    },
    async start() {
      const proc = spawn(process.execPath, ['src/entry.ts'], {
        cwd: ROOT,
        // A test's own setting wins.
        env: { NODE_COMPILE_CACHE: compileCacheDir(), ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = proc;
      // `stop` and `kill` let go of the child first: an exit of the child still held is one nobody asked for.
      proc.once('exit', () => {
        if (child === proc) exits += 1;
      });
      const collect = (chunk: Buffer): void => {
        const text = chunk.toString('utf8');
        output += text;
        unparsed += text;
        if (options.onLine) for (const line of text.split('\n')) if (line !== '') options.onLine(line);
      };
      // Only this run's output counts as its start: the log keeps earlier runs too.
      const from = output.length;
      proc.stdout?.on('data', collect);
      proc.stderr?.on('data', collect);
      // Ready when the bot says so, or fail fast with its own words when it exits.
      await new Promise<void>((resolve, reject) => {
        // A safety net, not a measurement: generous, because a loaded CI machine can take long to start Node.
        const timer = setTimeout(() => reject(new Error(`bot did not start within 60 s:\n${output}`)), 60_000);
        const check = (): void => {
          // JSON, or the pretty line of LOG_PRETTY=true (`[12:00:00.000] INFO: bot started`).
          if (/"msg":"bot started"|\bINFO: bot started/.test(output.slice(from))) {
            clearTimeout(timer);
            proc.stdout?.off('data', check);
            resolve();
          }
        };
        proc.stdout?.on('data', check);
        proc.once('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`bot exited with ${code} during start:\n${output}`));
        });
      });
    },
    async stop() {
      if (!child) return null;
      const proc = child;
      child = undefined;
      if (proc.exitCode !== null) return proc.exitCode;
      proc.kill('SIGTERM');
      return exitOf(proc);
    },
    async kill() {
      if (!child) return;
      const proc = child;
      child = undefined;
      proc.kill('SIGKILL');
      await exitOf(proc);
    },
    // A process ended by a signal has no exit code, only a signal code.
    running: () => child !== undefined && child.exitCode === null && child.signalCode === null,
    pid: () => child?.pid,
    exits: () => exits,
  };
}

/**
 * The environment of a bot that never reaches Slack (its API is a closed port), on `redisUrl`, with
 * the inventory at `<dir>/clusters.yaml`: for the checks the bot makes at start, before Slack.
 */
export function offlineBotEnv(dir: string, redisUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: dir,
    SLACK_BOT_TOKEN: 'xoxb-offline-test',
    SLACK_APP_TOKEN: 'xapp-offline-test',
    SLACK_API_URL: 'http://127.0.0.1:1/api/',
    REDIS_URL: redisUrl,
    CLUSTERS_FILE: join(dir, 'clusters.yaml'),
    HTTP_PORT: '0',
    CREDENTIALS_DIR: dir,
    ...extra,
  };
}

/**
 * The first log line that names `text`, parsed, from a bot started with `env` whose start never
 * completes (Slack is unreachable): a warning it gives on the way. The bot is killed once it has.
 */
export async function warningAtStart(env: Record<string, string>, text: string): Promise<Record<string, unknown>> {
  let warned: (line: string) => void = () => undefined;
  const warning = new Promise<string>((resolve) => (warned = resolve));
  const bot = botProcess(env, {
    onLine: (line) => {
      if (line.includes(text)) warned(line);
    },
  });
  const starting = bot.start().catch(() => undefined);
  const line = JSON.parse(await warning) as Record<string, unknown>;
  await bot.kill();
  await starting;
  return line;
}
