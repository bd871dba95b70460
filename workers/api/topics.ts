/**
 * The topics the Worker serves: those of the example application (API.md: `orders` in, `totals`
 * out, 4 partitions each) plus any declared with the `TOPICS` var.
 */
import type { Config } from "../../src/config";
import { TopicCatalog } from "../../src/log/topics";

const applicationTopics = new TopicCatalog({
  orders: 4,
  totals: 4,
});

const catalogs = new WeakMap<Config, TopicCatalog>();

export function topicCatalog(config: Config): TopicCatalog {
  let catalog = catalogs.get(config);
  if (!catalog) catalogs.set(config, (catalog = applicationTopics.with(config.TOPICS)));
  return catalog;
}
