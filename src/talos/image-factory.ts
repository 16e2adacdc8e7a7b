import { z } from 'zod';
import { OpsError } from '../errors.ts';

const Versions = z.array(z.string());

/** Image Factory's public API: the list of Talos releases it can build. */
export interface ImageFactory {
  versions(signal?: AbortSignal): Promise<string[]>;
}

export function createImageFactory(baseUrl: string, timeoutMs: number): ImageFactory {
  const base = baseUrl.replace(/\/+$/, '');
  return {
    async versions(signal) {
      const timeout = AbortSignal.timeout(timeoutMs);
      let response: Response;
      try {
        response = await fetch(`${base}/versions`, { signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
      } catch (error) {
        throw new OpsError('factory-unreachable', `Image Factory at ${base} did not answer: ${(error as Error).message}`, {
          hint: 'check IMAGE_FACTORY_URL and the network path to it',
        });
      }
      if (!response.ok) {
        throw new OpsError('factory-error', `Image Factory answered ${response.status} to GET /versions`);
      }
      const parsed = Versions.safeParse(await response.json());
      if (!parsed.success) throw new OpsError('factory-error', 'Image Factory /versions did not return a list of versions');
      return parsed.data;
    },
  };
}
