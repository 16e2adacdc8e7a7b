import { SECRET_FILE_VARIABLES } from '../config/env.ts';
import { isSecretVariable } from '../log/process-secrets.ts';

/** Variables named like secrets that hold a path, read again later by OpenSSL or Node: they stay. */
const PATH_VARIABLE = /(_FILE|_DIR|_PATH|_CERTS)$/i;

/** Whether a variable of the bot's environment carries a credential (a Slack token, the Redis URL, a provider secret). */
function carriesSecret(name: string): boolean {
  return (SECRET_FILE_VARIABLES as readonly string[]).includes(name) || (isSecretVariable(name) && !PATH_VARIABLE.test(name));
}

/**
 * A copy of the environment for the configuration, with every credential then deleted from the
 * live one: nothing that later spawns with the inherited environment (a library, a Node
 * subprocess) can hand a token on, and no code reads one from `process.env`. The kernel's copy in
 * `/proc/<pid>/environ` is the environment at exec and cannot be changed from inside; credentials
 * given as files (`SLACK_BOT_TOKEN_FILE`, …) never appear there.
 */
export function takeEnvironment(env: NodeJS.ProcessEnv): Record<string, string | undefined> {
  const copy = { ...env };
  for (const name of Object.keys(env)) if (carriesSecret(name)) delete env[name];
  return copy;
}
