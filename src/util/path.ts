/**
 * The one spelling of where in a value a problem is: `records[0].key`, `lines[2].amount` —
 * indexes in brackets, property names after dots — for validation errors of requests and of
 * schema serdes alike.
 */

/** A step into a value: a property name or index, or Standard Schema's `{ key }` wrapper of one. */
export type PathSegment = PropertyKey | { readonly key: PropertyKey };

export function formatPath(path: readonly PathSegment[]): string {
  let text = "";
  for (const segment of path) {
    const key = typeof segment === "object" && segment !== null ? segment.key : segment;
    if (typeof key === "number") text += `[${key}]`;
    else text += text === "" ? String(key) : `.${String(key)}`;
  }
  return text;
}
