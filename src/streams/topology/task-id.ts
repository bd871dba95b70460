/**
 * Task ids: `<subtopology>_<partition>`, as in Kafka Streams. A task processes one partition of
 * every source topic of its subtopology.
 */

export interface TaskCoordinates {
  readonly subtopology: number;
  readonly partition: number;
}

export function formatTaskId(subtopology: number, partition: number): string {
  return `${subtopology}_${partition}`;
}

/** The parts of a task id, or undefined when the text is not one. */
export function parseTaskId(taskId: string): TaskCoordinates | undefined {
  const match = /^(0|[1-9]\d*)_(0|[1-9]\d*)$/.exec(taskId);
  if (!match) return undefined;
  return { subtopology: Number(match[1]), partition: Number(match[2]) };
}
