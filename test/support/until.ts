/** Waiting on a condition with a bound, never on time alone: for tests in workerd and in Node. */

/** Polls `check` every `everyMs` until it holds or `timeoutMs` passes (then throws, naming `what`). */
export async function until(check: () => Promise<boolean>, timeoutMs: number, what: string, everyMs = 200): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
