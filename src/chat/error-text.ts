import { OpsError } from '../errors.ts';

/** The one place an error becomes the sentence an operator reads: what happened, then what to do. */
export function errorText(error: unknown): string {
  if (error instanceof OpsError) {
    return error.hint ? `${error.message}. ${capitalize(error.hint)}.` : error.message;
  }
  if (error instanceof Error) return error.message;
  return String(error);
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
