import { BOT_USER_ID, type EmulatorConfig } from './config.ts';
import type { EmulatorUser } from './types.ts';

/** Channels, users and user groups of the emulated workspace. */
export class Directory {
  readonly #config: EmulatorConfig;

  constructor(config: EmulatorConfig) {
    this.#config = config;
  }

  /**
   * Maps what a caller passed as `channel` (an id, a name, `#name`, or a user id for a DM)
   * to a channel id, or undefined when the workspace has no such channel.
   */
  resolveChannel(ref: string): string | undefined {
    if (ref === '') return undefined;
    if (this.#isUserRef(ref)) return `D${ref.slice(1)}`;
    const channels = this.#config.channels;
    if (channels === undefined) return ref;
    const name = ref.startsWith('#') ? ref.slice(1) : ref;
    const found = channels.find((c) => c.id === ref || c.name === name);
    if (found !== undefined) return found.id;
    // DM channels opened earlier through a user id stay addressable by their D id.
    return ref.startsWith('D') && this.#isUserRef(`U${ref.slice(1)}`) ? ref : undefined;
  }

  channelName(id: string): string {
    const found = this.#config.channels?.find((c) => c.id === id);
    if (found !== undefined) return found.name;
    return id.startsWith('D') ? 'directmessage' : id.toLowerCase();
  }

  user(id: string): EmulatorUser | undefined {
    if (id === BOT_USER_ID) return { id, name: this.#config.botName };
    const users = this.#config.users;
    if (users === undefined) return { id, name: id.toLowerCase() };
    return users.find((u) => u.id === id);
  }

  userName(id: string): string {
    return this.user(id)?.name ?? id.toLowerCase();
  }

  usergroupMembers(id: string): string[] | undefined {
    return this.#config.usergroups.find((g) => g.id === id)?.users;
  }

  #isUserRef(ref: string): boolean {
    if (!/^[UW][A-Z0-9]+$/.test(ref)) return false;
    return this.#config.users === undefined || this.user(ref) !== undefined;
  }
}
