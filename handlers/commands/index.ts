import { HELP_TEXT, type Command } from '../parse-command.ts';
import type { CommandHandler } from './command-context.ts';
import { cancel } from './cancel.ts';
import { record } from './record.ts';
import { gates } from './gates.ts';
import { health } from './health.ts';
import { plan } from './plan.ts';
import { snapshot } from './snapshot.ts';
import { status } from './status.ts';
import { upgradeTalos } from './upgrade-talos.ts';
import { upgradeK8s } from './upgrade-k8s.ts';
import { rollback } from './rollback.ts';
import { remove } from './remove.ts';

type Handlers = { [K in Command['kind']]?: CommandHandler<K> };

/** One handler per subcommand; each file owns its parsing-to-job step. */
export const COMMAND_HANDLERS: Handlers = {
  help: () => ({ reply: HELP_TEXT }),
  health,
  gates,
  plan,
  snapshot,
  'upgrade-talos': upgradeTalos,
  'upgrade-k8s': upgradeK8s,
  rollback,
  remove,
  status,
  cancel,
  record,
};
