import type { Operation } from './operation.ts';

/** Told of every operation write this process won, with the value before and after. */
export type OperationListener = (before: Operation, after: Operation) => void;

/**
 * Where the store tells what it wrote, and where metrics, the Home tab and the record exporter
 * listen: the store is built before any of them, and none of them is known to it.
 */
export interface OperationEvents {
  on(listener: OperationListener): void;
  /** Tells every listener in the order they subscribed; one that throws does not keep the others from hearing. */
  emit(before: Operation, after: Operation): void;
}

export function createOperationEvents(onListenerError: (error: unknown) => void = () => undefined): OperationEvents {
  const listeners: OperationListener[] = [];
  return {
    on(listener) {
      listeners.push(listener);
    },
    emit(before, after) {
      for (const listener of listeners) {
        try {
          listener(before, after);
        } catch (error) {
          onListenerError(error);
        }
      }
    },
  };
}
