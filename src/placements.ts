/**
 * Placements: named slots where task instances and their restore workers live, each optionally
 * with a Cloudflare location hint (where its objects are created) and a jurisdiction (where they
 * may run and store data). `PLACEMENTS` lists them: `name`, `name:hint` or `name:hint:jurisdiction`
 * (`name::jurisdiction` without a hint), comma-separated — e.g. `eu:weur:eu,us:enam`. Pure.
 */

/** Cloudflare's Durable Object location hints. */
export const LOCATION_HINTS = ["wnam", "enam", "sam", "weur", "eeur", "apac", "apac-ne", "apac-se", "oc", "afr", "me"] as const;
/** Cloudflare's Durable Object jurisdictions. */
export const JURISDICTIONS = ["eu", "fedramp", "fedramp-high"] as const;

export type LocationHint = (typeof LOCATION_HINTS)[number];
export type Jurisdiction = (typeof JURISDICTIONS)[number];

export interface Placement {
  readonly name: string;
  readonly locationHint?: LocationHint;
  readonly jurisdiction?: Jurisdiction;
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The placements of a `PLACEMENTS` value; throws an Error saying what is wrong with an entry. */
export function parsePlacements(text: string): Placement[] {
  const entries = text
    .split(",")
    .map((e) => e.trim())
    .filter(Boolean);
  if (entries.length === 0) throw new Error("name at least one placement");
  const placements = entries.map((entry): Placement => {
    const [name = "", hint = "", jurisdiction = "", ...rest] = entry.split(":").map((p) => p.trim());
    if (rest.length > 0) throw new Error(`"${entry}" is not name, name:hint or name:hint:jurisdiction`);
    if (!NAME.test(name)) throw new Error(`"${name}": placement names are 1-64 letters, digits, _ or -`);
    if (hint !== "" && !(LOCATION_HINTS as readonly string[]).includes(hint))
      throw new Error(`placement ${name}: "${hint}" is not a location hint (${LOCATION_HINTS.join(", ")})`);
    if (jurisdiction !== "" && !(JURISDICTIONS as readonly string[]).includes(jurisdiction))
      throw new Error(`placement ${name}: "${jurisdiction}" is not a jurisdiction (${JURISDICTIONS.join(", ")})`);
    return {
      name,
      ...(hint ? { locationHint: hint as LocationHint } : {}),
      ...(jurisdiction ? { jurisdiction: jurisdiction as Jurisdiction } : {}),
    };
  });
  const names = new Set<string>();
  for (const p of placements) {
    if (names.has(p.name)) throw new Error(`placement ${p.name} is listed twice`);
    names.add(p.name);
  }
  return placements;
}
