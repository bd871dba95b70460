/**
 * The topics the Worker serves: every topic of the application (its inputs, outputs, changelogs
 * and repartition topics) plus any declared with the `TOPICS` var.
 */
import type { Config } from "../../src/config";
import type { TopicCatalog } from "../../src/log/topics";
import { application } from "#application";

const catalogs = new WeakMap<Config, TopicCatalog>();

export function topicCatalog(config: Config): TopicCatalog {
  let catalog = catalogs.get(config);
  if (!catalog) catalogs.set(config, (catalog = application.catalog.with(config.TOPICS)));
  return catalog;
}
