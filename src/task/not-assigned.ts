/**
 * An instance asked to act before it has an assignment. The instance has not taken an assignment yet (the coordinator has not reached it): there is
 * nothing to describe or act on. Recognised across RPC by its message.
 */
export class NotAssigned extends Error {
  override name = "NotAssigned";
  constructor() {
    super("NotAssigned: the task instance has no assignment yet");
  }
}

export function isNotAssigned(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith("NotAssigned: ");
}
