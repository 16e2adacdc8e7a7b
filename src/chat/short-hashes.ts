/** A run of hex as long as a git commit or a sha256 (40 or more): what a person never reads whole in a channel. */
const FULL_HASH = /\b[0-9a-f]{40,}\b/g;

/** Characters of a hash shown in the channel; the whole hash is in the maintenance record or the attached file. */
export const HASH_PREFIX = 12;

/** `text` with every full hash cut to its first 12 characters and `…`: enough to tell two apart and to search the record. */
export function shortHashes(text: string): string {
  return text.replace(FULL_HASH, (hash) => `${hash.slice(0, HASH_PREFIX)}…`);
}
