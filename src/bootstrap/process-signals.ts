import type { Logger } from '../log/logger.ts';

/** What the signal handlers need of a running bot. */
export interface StoppableBot {
  logger: Logger;
  /** How long `stop()` lets running jobs finish, in ms. */
  shutdownGraceMs: number;
  stop(): Promise<void>;
}

function exit(code: number, message?: string): never {
  if (message !== undefined) process.stderr.write(`talos-chatops ${message}\n`);
  return process.exit(code);
}

/**
 * SIGTERM and SIGINT stop the bot gracefully; a second one stops it at once. `on`, not `once`:
 * execa's exit hook re-raises a signal it believes nobody else handles, which kills the process
 * mid-shutdown whenever a child (talosctl, tofu) is running.
 */
export function stopOnSignals(bot: StoppableBot): void {
  let signalled = false;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      // A second Ctrl-C means now; a forced job resumes elsewhere like after a crash.
      if (signalled) exit(1);
      signalled = true;
      bot.logger.info({ signal }, 'shutdown requested');
      // Closing queues and Redis after the grace is quick; a Redis that never answers must not keep the process alive.
      setTimeout(() => exit(1, 'did not finish stopping in time; exiting'), bot.shutdownGraceMs + 15_000).unref();
      void bot.stop().then(
        () => exit(0),
        (error: unknown) => exit(1, `did not stop cleanly: ${(error as Error).message}`),
      );
    });
  }
}

/** Exits with the start-up error's text when it is one the operator fixes (a configuration error); rethrows any other. */
export function exitOnStartError(isConfigError: (error: unknown) => boolean) {
  return (error: unknown): never => {
    if (!isConfigError(error)) throw error;
    return exit(2, `cannot start. ${(error as Error).message}`);
  };
}
