/** The earliest of some times, ignoring those not set; undefined when none is. */
export function earliestOf(...times: readonly (number | undefined)[]): number | undefined {
  let earliest: number | undefined;
  for (const at of times) if (at !== undefined && (earliest === undefined || at < earliest)) earliest = at;
  return earliest;
}
