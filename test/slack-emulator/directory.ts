import { BOT_USER_ID, type EmulatorConfig } from './config.ts';
import type { EmulatorUser } from './types.ts';

/** A public channel, a private one (`G…` or `isPrivate`) or a direct message (`D…`). */
export type ChannelKind = 'public' | 'private' | 'im';

export interface ChannelAccess {
  id: string;
  kind: ChannelKind;
  /** Whether the bot user is a member, as after `/invite @bot`. */
  botMember: boolean;
}

/** Channels, users and user groups of the emulated workspace. */
export class Directory {
  readonly #config: EmulatorConfig;
  /** Channels the bot is not in; every other channel has the bot as a member. */
  readonly #botAbsent = new Set<string>();
  /** People in each channel whose members were set; any other channel has every known user. */
  readonly #members = new Map<string, string[]>();

  constructor(config: EmulatorConfig) {
    this.#config = config;
    for (const channel of config.channels ?? []) {
      if (channel.botMember === false) this.#botAbsent.add(channel.id);
      if (channel.members !== undefined) this.#members.set(channel.id, [...channel.members]);
    }
  }

  /** Kind and bot membership of a channel, or undefined when the workspace has no such channel. */
  channelAccess(ref: string): ChannelAccess | undefined {
    const id = this.resolveChannel(ref);
    if (id === undefined) return undefined;
    const configured = this.#config.channels?.find((c) => c.id === id);
    const kind: ChannelKind = configured?.isPrivate === true || id.startsWith('G') ? 'private' : id.startsWith('D') ? 'im' : 'public';
    return { id, kind, botMember: !this.#botAbsent.has(id) };
  }

  /** The bot joins (`/invite @bot`) or leaves a channel. */
  setBotMember(ref: string, member: boolean): void {
    const id = this.resolveChannel(ref);
    if (id === undefined) throw new Error(`unknown channel ${ref}`);
    if (member) this.#botAbsent.delete(id);
    else this.#botAbsent.add(id);
  }

  /** Who is in a channel now (people join and leave): the people set for it, or every known user; the bot when it is in. */
  channelMembers(id: string): string[] {
    const people = this.#members.get(id) ?? (this.#config.users ?? []).map((u) => u.id);
    return this.#botAbsent.has(id) ? people : [...people, BOT_USER_ID];
  }

  /** Sets the people in a channel, as joins, leaves and removals would. */
  setChannelMembers(ref: string, users: readonly string[]): void {
    const id = this.resolveChannel(ref);
    if (id === undefined) throw new Error(`unknown channel ${ref}`);
    this.#members.set(id, [...users]);
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

  /** Every user group, with its handle. */
  usergroups(): { id: string; handle: string; users: string[] }[] {
    return this.#config.usergroups.map((g) => ({ id: g.id, handle: g.handle ?? g.id.toLowerCase(), users: [...g.users] }));
  }

  /** Every known user, the bot included. */
  users(): EmulatorUser[] {
    return [...(this.#config.users ?? []), { id: BOT_USER_ID, name: this.#config.botName }];
  }

  /** Every known channel the bot may list: public ones, and private ones it is in. */
  listableChannels(): { id: string; name: string; kind: ChannelKind }[] {
    return (this.#config.channels ?? []).flatMap((c) => {
      const access = this.channelAccess(c.id)!;
      if (access.kind === 'private' && !access.botMember) return [];
      return [{ id: c.id, name: c.name, kind: access.kind }];
    });
  }

  usergroupMembers(id: string): string[] | undefined {
    return this.#config.usergroups.find((g) => g.id === id)?.users;
  }

  #isUserRef(ref: string): boolean {
    if (!/^[UW][A-Z0-9]+$/.test(ref)) return false;
    return this.#config.users === undefined || this.user(ref) !== undefined;
  }
}
