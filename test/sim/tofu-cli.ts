/** The fake `tofu` executable (started by the `bin/tofu` wrapper). */
import { runCli } from './cli-client.ts';

runCli('tofu');
