/** Validation failures as the 400 body of docs/http-api.md, naming the first problem's path (`records[0].key`). */
import type { Context } from "hono";
import { formatPath } from "../../src/util/path";

interface Issue {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}
type Result = { success: true } | { success: false; error: { readonly issues: readonly Issue[] } };

/** The hook for `zValidator`: answers 400 `invalid_input` with a readable message. */
export function invalidInput(result: Result, c: Context): Response | undefined {
  if (result.success) return undefined;
  const issue = result.error.issues[0];
  const path = issue?.path.length ? `${formatPath(issue.path)}: ` : "";
  return c.json({ error: "invalid_input", message: `${path}${issue?.message ?? "invalid input"}` }, 400);
}
