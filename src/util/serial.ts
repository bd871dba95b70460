/**
 * Runs async operations one at a time, in call order. A Durable Object's input gate lets another
 * request in whenever the current one awaits I/O; task lifecycle operations (step, assign, wipe,
 * revoke) must not interleave, so each object funnels them through one of these.
 */
export class Serial {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(operation: () => Promise<T> | T): Promise<T> {
    const result = this.tail.then(operation, operation);
    this.tail = result.catch(() => undefined);
    return result;
  }
}
