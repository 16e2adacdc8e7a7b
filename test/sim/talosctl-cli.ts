/** The fake `talosctl` executable (started by the `bin/talosctl*` wrappers). */
import { runCli } from './cli-client.ts';

runCli('talosctl');
