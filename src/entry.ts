import { exitOnStartError, stopOnSignals } from './bootstrap/process-signals.ts';
import { takeEnvironment } from './bootstrap/process-env.ts';
import { ConfigError } from './config/config-error.ts';
import { loadConfig } from './config/env.ts';
import { loadInventory } from './config/inventory.ts';

/**
 * The process's entry (`npm start`, the image's CMD). It reads the settings and the inventory
 * before it loads the bot: a bad one is refused in the time it takes to parse it, not after
 * loading Bolt, BullMQ and every playbook. `startBot` reads both again; it is the one that
 * keeps them, and its own checks (secrets that clash, Redis) still end the start the same way.
 */
const isConfigError = (error: unknown): boolean => error instanceof ConfigError;

// Node ends the process on an unhandled rejection by default, and with it every talosctl or tofu child of a running job.
let onRejection = (reason: unknown): void =>
  void process.stderr.write(`talos-chatops: unhandled promise rejection while starting: ${String(reason)}\n`);
process.on('unhandledRejection', (reason) => onRejection(reason));

const env = takeEnvironment(process.env);
try {
  loadInventory(loadConfig(env).clustersFile);
} catch (error) {
  exitOnStartError(isConfigError)(error);
}
const { startBot } = await import('./main.ts');
const bot = await startBot(env).catch(exitOnStartError(isConfigError));
onRejection = (reason) => bot.unhandledRejection(reason);
stopOnSignals(bot);
