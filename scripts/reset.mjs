// `npm run reset`: deletes the local state of `npm start` (every log partition, task object,
// coordinator and consumer group that `wrangler dev` persisted), for the default example and the
// page-views, shop and connectors ones (the last with its local Queues and R2 bucket). Stop `npm start` first.
import { existsSync, rmSync } from "node:fs";

for (const dir of [".wrangler/state", "examples/page-views/.wrangler/state", "examples/shop/.wrangler/state", "examples/connectors/.wrangler/state"]) {
  if (!existsSync(dir)) continue;
  rmSync(dir, { recursive: true, force: true });
  console.log(`deleted ${dir}`);
}
console.log("local state reset: the next `npm start` begins with empty topics and stores");
