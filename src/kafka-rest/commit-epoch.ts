/**
 * How a committer's epoch travels through the Kafka REST dialect, whose commit call has no field
 * for it: as the consumer instance id, `edge-epoch-<epoch>`. An Edge Streams `/kafka` endpoint
 * turns it back into the commit's epoch, so that commits of the application's consumer group stay
 * fenced (I3) when a deployment's log is another deployment's `/kafka`; a plain Kafka REST
 * endpoint sees an ordinary instance id.
 */

const PREFIX = "edge-epoch-";

export function epochInstanceId(epoch: number): string {
  return `${PREFIX}${epoch}`;
}

/** The epoch an instance id carries; undefined for any other id. */
export function epochFromInstanceId(instance: string): number | undefined {
  if (!instance.startsWith(PREFIX)) return undefined;
  const digits = instance.slice(PREFIX.length);
  if (!/^(0|[1-9][0-9]{0,15})$/.test(digits)) return undefined;
  const epoch = Number(digits);
  return Number.isSafeInteger(epoch) ? epoch : undefined;
}
