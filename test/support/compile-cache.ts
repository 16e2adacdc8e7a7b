import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Node's compile cache (`NODE_COMPILE_CACHE`) for the Node processes a test run starts (the bot,
 * a script importing its modules): hundreds of starts compile the same modules, and a later start
 * reads them from here. One directory per run, named by `vitest.config.ts` and removed when the
 * run ends; a script started outside vitest gets one of its own.
 */
export function compileCacheDir(): string {
  return process.env.TALOS_TEST_COMPILE_CACHE ?? join(tmpdir(), `talos-chatops-compile-cache-${process.pid}`);
}
