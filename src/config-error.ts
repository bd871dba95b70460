/**
 * The error of a configuration that cannot run: a bad var (`readConfig`, src/config.ts) or a bad
 * option of the application (its sinks, src/connectors/sink-config.ts). On the ground floor, so
 * that whatever checks configuration can throw it without importing what reads the vars.
 */
export class ConfigError extends Error {
  override name = "ConfigError";
}
