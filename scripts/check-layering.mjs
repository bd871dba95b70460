// `node scripts/check-layering.mjs [root]` (run by `npm run lint`): no import circle between rooms.
// A room is a folder of the core (`src/log/`, `src/task/`, …), a file at the core's top
// (`src/application.ts`, `src/config.ts`, …) or a whole floor above it (`durable-objects/`,
// `platform/`, `workers/`, `client/`). Biome's import rules (biome.json) say which floor may not
// import which; what they cannot say is that rooms of one floor never import each other in a
// circle — `src/application.ts` → `src/connectors/` → `src/config.ts` → `src/restore/` →
// `src/task/` → `src/application.ts` was one, an arrow back up a floor (docs/design.md,
// dependency rules). Every import with a relative path counts, `import type` too. Prints each
// circle with one import per arrow, and exits 1 if there is any. Also holds every production file
// to `MAX_FILE_LINES`: a file past it holds more than one concept (issue #32).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";

const FLOORS = ["src", "durable-objects", "platform", "workers", "client"];
const SOURCE = /\.(ts|tsx|mts)$/;
const IMPORT = /(?:\bimport|\bexport)\s[^;]*?\bfrom\s*["'](\.{1,2}\/[^"']*)["']|\bimport\s*\(?\s*["'](\.{1,2}\/[^"']*)["']/g;

/** The most lines a production file of the floors may have. */
export const MAX_FILE_LINES = 450;

/** Production files of the floors longer than `max` lines: `{ file, lines }`. */
export function oversizedFiles(root, max = MAX_FILE_LINES) {
  const found = [];
  for (const floor of FLOORS) {
    for (const file of sourceFiles(root, floor)) {
      const lines = readFileSync(join(root, file), "utf8").split("\n").length - 1;
      if (lines > max) found.push({ file, lines });
    }
  }
  return found;
}

/** The room of a path relative to the root (extension dropped), or undefined outside the floors. */
export function roomOf(path) {
  const parts = path.replace(/\\/g, "/").replace(SOURCE, "").split("/");
  if (!FLOORS.includes(parts[0])) return undefined;
  if (parts[0] !== "src") return `${parts[0]}/`;
  return parts.length === 2 ? `src/${parts[1]}` : `src/${parts[1]}/`;
}

function* sourceFiles(root, folder) {
  let names;
  try {
    names = readdirSync(join(root, folder));
  } catch {
    return;
  }
  for (const name of names) {
    const path = `${folder}/${name}`;
    if (statSync(join(root, path)).isDirectory()) yield* sourceFiles(root, path);
    else if (SOURCE.test(name) && !name.endsWith(".d.ts") && !name.includes(".test.")) yield path;
  }
}

/** Arrows between rooms: `from → to` with the first import seen that draws it. */
export function roomArrows(root) {
  const arrows = new Map();
  for (const floor of FLOORS) {
    for (const file of sourceFiles(root, floor)) {
      const from = roomOf(file);
      for (const match of readFileSync(join(root, file), "utf8").matchAll(IMPORT)) {
        const target = relative(root, normalize(join(root, dirname(file), match[1] ?? match[2])));
        const to = roomOf(target);
        if (to === undefined || to === from) continue;
        const key = `${from}\n${to}`;
        if (!arrows.has(key)) arrows.set(key, { from, to, file, specifier: match[1] ?? match[2] });
      }
    }
  }
  return [...arrows.values()];
}

/** The circles: each a strongly connected set of more than one room (Tarjan), with its arrows. */
export function circles(arrows) {
  const next = new Map();
  for (const { from, to } of arrows) next.set(from, [...(next.get(from) ?? []), to]);
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const visit = (room) => {
    index.set(room, index.size);
    low.set(room, index.get(room));
    stack.push(room);
    onStack.add(room);
    for (const to of next.get(room) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(room, Math.min(low.get(room), low.get(to)));
      } else if (onStack.has(to)) low.set(room, Math.min(low.get(room), index.get(to)));
    }
    if (low.get(room) !== index.get(room)) return;
    const rooms = new Set();
    let top;
    do {
      top = stack.pop();
      onStack.delete(top);
      rooms.add(top);
    } while (top !== room);
    if (rooms.size > 1) found.push({ rooms: [...rooms].sort(), arrows: arrows.filter((a) => rooms.has(a.from) && rooms.has(a.to)) });
  };
  for (const room of [...next.keys()].sort()) if (!index.has(room)) visit(room);
  return found;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = process.argv[2] ?? process.cwd();
  const found = circles(roomArrows(root));
  for (const circle of found) {
    console.error(`import circle between rooms: ${circle.rooms.join(", ")}`);
    for (const { from, to, file, specifier } of circle.arrows) console.error(`  ${from} → ${to}: ${file} imports "${specifier}"`);
  }
  if (found.length > 0) console.error("Rooms of the core import each other in one direction only (docs/design.md, dependency rules).");
  const oversized = oversizedFiles(root);
  for (const { file, lines } of oversized) console.error(`${file}: ${lines} lines, over ${MAX_FILE_LINES}: split it along its concepts`);
  if (found.length > 0 || oversized.length > 0) process.exit(1);
  console.log(`layering: no import circle between rooms, no production file over ${MAX_FILE_LINES} lines`);
}
