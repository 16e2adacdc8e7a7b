import { createInterface } from 'node:readline';
import { execa } from 'execa';
import { OpsError } from '../errors.ts';
import { waitOn } from '../time/wait-clock.ts';
import type { SecretScrubber } from '../log/secret-scrubber.ts';
import { setImmediate as setImmediatePromise } from 'node:timers/promises';

export interface RunOptions {
  cwd?: string;
  /** The complete environment of the child: nothing is inherited, so no stray credential leaks in. */
  env?: Record<string, string>;
  /** Kill the child after this many ms (SIGTERM, then SIGKILL 5 s later). */
  timeoutMs: number;
  /** Aborting it kills the child: the job's cancellation reaches the process. */
  signal?: AbortSignal;
  /** Exit codes that count as success; `[0]` by default (`tofu plan -detailed-exitcode` adds 2). */
  okExitCodes?: number[];
  /**
   * stdout is the secret itself (`tofu output`): it is returned as printed, and must be registered
   * with the scrubber by the caller. Otherwise stdout, like stderr, is scrubbed before anything
   * (a parser, a truncation, a Slack message) sees it. Default false.
   */
  secretOutput?: boolean;
  /** Streamed lines are scrubbed first, like the buffered output. */
  onStdoutLine?: (line: string) => void;
  onStderrLine?: (line: string) => void;
}

export interface RunResult {
  /** The command as run, argv[0] first, for audit and tests. */
  command: string[];
  stdout: string;
  stderr: string;
  exitCode: number;
  durationMs: number;
}

export type ExecErrorCode =
  'exec-failed' | 'exec-timeout' | 'exec-cancelled' | 'exec-not-found' | 'exec-invalid-argument' | 'exec-output-too-large';

/** A child process that failed; its message and `stderr` are already free of known secrets. */
export class ExecError extends OpsError {
  readonly result: RunResult | undefined;

  constructor(code: ExecErrorCode, message: string, result?: RunResult) {
    super(code, message);
    this.name = 'ExecError';
    this.result = result;
  }
}

export interface CallRecord {
  file: string;
  args: string[];
  durationMs: number;
  outcome: 'ok' | ExecErrorCode;
}

export interface ProcessRunner {
  run(file: string, args: string[], options: RunOptions): Promise<RunResult>;
}

export interface ProcessRunnerOptions {
  scrubber: SecretScrubber;
  /** Called after every child process, for metrics. */
  onCall?: (call: CallRecord) => void;
  /**
   * Most characters a child may print on stdout, and separately on stderr, before it is killed
   * (default {@link DEFAULT_MAX_OUTPUT}, 16 MiB): a runaway tool cannot fill the bot's memory.
   */
  maxOutputChars?: number;
}

/** 16 Mi characters: far above a `tofu plan` of a large estate or a verbose `talosctl` call. */
export const DEFAULT_MAX_OUTPUT = 16 * 1024 * 1024;

/** Arguments come from operators through Slack: refuse anything a shell or a flag parser could misread. */
function assertPlainArgument(arg: string): void {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(arg)) {
    throw new ExecError('exec-invalid-argument', 'an argument contains a control character or a newline');
  }
}

function lastLines(text: string, count: number): string {
  return text.trim().split('\n').slice(-count).join('\n');
}

/** The only place that starts child processes: argv arrays, no shell, explicit env, timeout, cancellation. */
export function createProcessRunner(options: ProcessRunnerOptions): ProcessRunner {
  const { scrubber } = options;
  const maxOutput = options.maxOutputChars ?? DEFAULT_MAX_OUTPUT;
  // Spawns take turns: each waits for the previous one's turn of the event loop, so I/O runs between them.
  let turn: Promise<void> = Promise.resolve();
  const nextSpawnTurn = (): Promise<void> => {
    turn = turn.then(() => setImmediatePromise());
    return turn;
  };
  return {
    async run(file, args, runOptions) {
      for (const arg of args) assertPlainArgument(arg);
      // A spawn blocks the event loop for as long as the fork takes. Many at once (fifty health gates,
      // each with its probes) would block it for seconds and hold back every ack: one spawn per turn.
      await nextSpawnTurn();
      // execa spawns even for an already aborted signal and kills the child only afterwards:
      // a cancelled job's next `talosctl upgrade` could reach the node before it dies.
      if (runOptions.signal?.aborted === true) {
        throw new ExecError('exec-cancelled', `${file.split('/').pop() ?? file} was cancelled before it started`);
      }
      const started = performance.now();
      const command = [file, ...args];
      const subprocess = execa(file, args, {
        cwd: runOptions.cwd,
        env: runOptions.env ?? {},
        extendEnv: false,
        timeout: runOptions.timeoutMs,
        cancelSignal: runOptions.signal,
        forceKillAfterDelay: 5000,
        reject: false,
        stdin: 'ignore',
        encoding: 'utf8',
        maxBuffer: maxOutput,
      });
      const { onStdoutLine, onStderrLine } = runOptions;
      if (onStdoutLine && subprocess.stdout)
        createInterface({ input: subprocess.stdout }).on('line', (line) => onStdoutLine(scrubber.scrub(line)));
      if (onStderrLine && subprocess.stderr)
        createInterface({ input: subprocess.stderr }).on('line', (line) => onStderrLine(scrubber.scrub(line)));
      const outcome = await waitOn(async () => subprocess);
      const durationMs = performance.now() - started;
      const result: RunResult = {
        command,
        // Scrubbed here, before any parser or truncation cuts a secret into pieces; `tofu output` is the secret itself.
        stdout: runOptions.secretOutput === true ? String(outcome.stdout ?? '') : scrubber.scrub(String(outcome.stdout ?? '')),
        stderr: scrubber.scrub(String(outcome.stderr ?? '')),
        exitCode: outcome.exitCode ?? -1,
        durationMs,
      };
      const name = file.split('/').pop() ?? file;
      // The subcommand words only (`etcd status`, `upgrade`), never flag values such as images or paths.
      const firstFlag = args.findIndex((a) => a.startsWith('-'));
      const verb = (firstFlag < 0 ? args : args.slice(0, firstFlag)).slice(0, 2).join(' ');
      const what = [name, verb].filter((part) => part !== '').join(' ');
      let error: ExecError | undefined;
      if ((outcome as { code?: string }).code === 'ENOENT') {
        error = new ExecError(
          'exec-not-found',
          `${name} was not found; set its path in the environment (TALOSCTL_BIN or TOFU_BIN)`,
          result,
        );
      } else if (outcome.isMaxBuffer) {
        error = new ExecError(
          'exec-output-too-large',
          `${what} printed more than ${maxOutput} characters on one stream and was stopped: narrow what it is asked for, or look for a tool writing in a loop`,
          result,
        );
      } else if (outcome.isCanceled) {
        error = new ExecError('exec-cancelled', `${what} was cancelled`, result);
      } else if (outcome.timedOut) {
        error = new ExecError('exec-timeout', `${what} timed out after ${Math.round(runOptions.timeoutMs / 1000)}s`, result);
      } else if (!(runOptions.okExitCodes ?? [0]).includes(result.exitCode)) {
        const detail = scrubber.scrub(lastLines(result.stderr || result.stdout, 3));
        error = new ExecError('exec-failed', `${what} exited with ${result.exitCode}${detail ? `: ${detail}` : ''}`, result);
      }
      options.onCall?.({ file: name, args, durationMs, outcome: error ? (error.code as ExecErrorCode) : 'ok' });
      if (error) throw error;
      return result;
    },
  };
}
