import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { ConfigError } from './config-error.ts';
import { parseInventory, type Inventory } from './inventory.ts';
import type { InventoryHolder } from './inventory-holder.ts';

export interface InventoryReloadOptions {
  path: string;
  holder: InventoryHolder;
  /** How often the file is read; its content hash says whether it changed. */
  intervalMs: number;
  onApplied: (inventory: Inventory) => void | Promise<void>;
  /** Called once per refused content, with every problem named; the holder keeps the last good inventory. */
  onRefused: (problems: string[]) => void | Promise<void>;
  /** Problems the schema cannot see (a value that equals a secret), named with the others. */
  alsoCheck?: (inventory: Inventory) => string[];
  /** Turns `#channel` and `@handle` entries into ids; a ConfigError refuses the edit with its problems. */
  resolve?: (inventory: Inventory) => Promise<Inventory>;
  /** A read that failed for another reason than a bad file (permissions, a callback that threw). */
  onError: (error: unknown) => void;
}

export interface InventoryReloader {
  /** Reads the file now; resolves once a change is applied or refused. */
  check(): Promise<'unchanged' | 'applied' | 'refused'>;
  stop(): void;
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * Reads the inventory file again every `intervalMs` and applies it when its content changed. The
 * content is polled rather than the file watched: a ConfigMap update swaps a symlink of the
 * mount's directory, which a watch on the file itself never sees.
 */
export async function watchInventory(options: InventoryReloadOptions): Promise<InventoryReloader> {
  const { path, holder } = options;
  let seen = sha256(await readFile(path, 'utf8').catch(() => ''));
  let running: Promise<'unchanged' | 'applied' | 'refused'> | undefined;

  async function read(): Promise<'unchanged' | 'applied' | 'refused'> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      // A file gone for a moment (mid-swap) is not an edit; the next read tells.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'unchanged';
      throw error;
    }
    const hash = sha256(text);
    if (hash === seen) return 'unchanged';
    seen = hash;
    let next: Inventory;
    try {
      next = parseInventory(text, path);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      await options.onRefused(error.problems);
      return 'refused';
    }
    if (options.resolve !== undefined) {
      try {
        next = await options.resolve(next);
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        await options.onRefused(error.problems);
        return 'refused';
      }
    }
    const more = options.alsoCheck?.(next) ?? [];
    if (more.length > 0) {
      await options.onRefused(more);
      return 'refused';
    }
    holder.replace(next);
    await options.onApplied(next);
    return 'applied';
  }

  const check = (): Promise<'unchanged' | 'applied' | 'refused'> => {
    running ??= read().finally(() => (running = undefined));
    return running;
  };
  const timer = options.intervalMs > 0 ? setInterval(() => void check().catch(options.onError), options.intervalMs) : undefined;
  timer?.unref();
  return { check, stop: () => clearInterval(timer) };
}
