/**
 * Test projects: `workers` runs the real Worker and Durable Objects inside workerd
 * (@cloudflare/vitest-pool-workers); `standby` is the same with NUM_STANDBYS=1; `page-views` runs
 * the second example application and `shop` the third; `operators` a test application with the
 * DSL's operators the examples do not use; `drivers` a test application for TestDriver's reads of
 * every kind of store; `queues` the default example fed by Cloudflare Queues; `connectors` the fourth example (a Queue in, a webhook and a Queue out, R2); `policies` a test application with wall-clock
 * punctuators and every uncaught-error policy; `unit` pure logic in plain Node (test/unit: every
 * test that needs no workerd, Kafka's ported operator tests among them; no per-file isolation,
 * seconds in all); `node` drives a real `wrangler dev` with real clients (among them the example
 * at 256 partitions with standbys, test/node/scale.test.ts), one per file.
 *
 * Speed on 2 cores: each workerd project file starts its own workerd and imports the library anew
 * (fresh storage per file; 10-15 s a file on a loaded machine, most of it the import), so pure tests
 * belong in `unit`; files whose tests each take objects of their own may share a workerd
 * (`isolate: false`, the `log` project); three files run at once, the `node` files among the others.
 */
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig, type Plugin } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import { TEST_API_TOKEN, TEST_SCOPED_TOKENS } from "./test/support/tokens";

// Read in Node by vitest (the project's types are the Workers' only); vitest runs from the root.
declare const process: { cwd(): string; pid: number; env: Record<string, string | undefined> };

/**
 * The ports of the webhook endpoints (test/node/webhook-server.ts, the globalSetup of the `queues`
 * and `connectors` projects, one server each: their requests never mix): chosen here, where the
 * Workers' vars are, and told to the servers by the environment (project name → port). Per
 * process, so that runs side by side do not meet.
 */
const WEBHOOK_PORTS = { queues: 20_000 + (process.pid % 20_000), connectors: 20_000 + ((process.pid + 1) % 20_000) };
process.env.EDGE_STREAMS_WEBHOOK_PORTS = JSON.stringify(WEBHOOK_PORTS);
/** The test secret the webhook sinks sign with. */
const WEBHOOK_SECRET = "test-webhook-secret";

function isInjectedCrash(error: unknown): boolean {
  const { message, durableObjectReset } = (error ?? {}) as { message?: unknown; durableObjectReset?: unknown };
  return durableObjectReset === true && typeof message === "string" && message.startsWith("injected crash");
}

const TEST_TOPICS = "ingest-test=4,retention-test=1(cleanup.policy=compact,delete retention.ms=60000 retention.bytes=1000000)";

/**
 * Topics for the Log contract run through the Worker's own `/kafka` (test/kafka-rest/upstash-log.test.ts):
 * each contract test takes an empty one.
 */
const LOG_CONTRACT_TOPICS = 20;
const logContractTopics = Array.from({ length: LOG_CONTRACT_TOPICS }, (_, i) => `log-contract-${i}=2`).join(",");

/** The examples and tests import the library by its package name: here, from its source. */
const library = {
  alias: [
    { find: /^edge-streams$/, replacement: `${process.cwd()}/workers/index.ts` },
    { find: /^edge-streams\/testing$/, replacement: `${process.cwd()}/workers/testing.ts` },
    { find: /^edge-streams\/client$/, replacement: `${process.cwd()}/client/index.ts` },
  ],
};

/** `edge-streams` (and its `testing`) without the Durable Objects, which need workerd: the DSL, TopologyTestDriver. */
const topologyOnly = {
  alias: [
    { find: /^edge-streams(\/testing)?$/, replacement: `${process.cwd()}/workers/topology.ts` },
    { find: /^edge-streams\/client$/, replacement: `${process.cwd()}/client/index.ts` },
  ],
};

/**
 * The example app's changelog never compacted (records younger than a day are left alone): tests
 * that check a changelog's whole history — exactly once, crash points, the model — see every
 * record. Compaction itself is tested in the `compaction` project, with the defaults.
 */
const NO_COMPACTION = {
  TOPICS: `${TEST_TOPICS},edge-streams-totals-changelog=4(cleanup.policy=compact min.compaction.lag.ms=86400000)`,
};

/**
 * A workerd test's bound, when its project has none longer: vitest's 5 s default was passed by
 * whole-pipeline tests (a standby's metrics, a seeded scenario, a dropped record counted end to end)
 * on a 2-core machine running other work beside the suite. Tests wait on conditions, so a longer
 * bound only matters when something is wrong.
 */
const WORKERD_TEST_TIMEOUT = 20_000;

/**
 * Workerd files of the `workers` project whose every test takes objects of its own, by a name no
 * other file uses (`refused-crash@x`, `settings-migration-kept`, …), and topics of its own (their
 * applications' catalogs): they share a workerd, the `objects` project, as test/log does.
 */
const OWN_OBJECTS = [
  "test/commit-rows.test.ts",
  "test/coordinator-settings-migration.test.ts",
  "test/outbox-window.test.ts",
  "test/record-cache-commits.test.ts",
  "test/record-cache-old-values.test.ts",
  "test/refused-sends.test.ts",
  "test/restore-positions.test.ts",
  "test/restore-timestamps.test.ts",
  "test/row-caps.test.ts",
  "test/storage-migrations.test.ts",
  "test/store-pages.test.ts",
  "test/task-book-migration.test.ts",
  "test/task-policies.test.ts",
  "test/task-store-cache.test.ts",
];

/** The `workers` project's vars on top of the example's (the `log` and `objects` projects' too). */
const WORKERS_BINDINGS = {
  TOPICS: `${NO_COMPACTION.TOPICS},${logContractTopics}`,
  // Few sockets per key on a subscription hub, so test/watch-socket.test.ts reaches the limit.
  HUB_MAX_SOCKETS_PER_KEY: "3",
};

/**
 * The packages the library imports, pre-bundled once per project by Vite's dependency optimizer:
 * the pool inlines every dependency, and each workerd file then fetched hono's and zod's modules one
 * by one (dozens of round trips into workerd per file) where it now fetches one file per entry.
 */
const PREBUNDLED = [
  "zod",
  "hono",
  "hono/cookie",
  "hono/http-exception",
  "hono/method-not-allowed",
  "hono/secure-headers",
  "hono/streaming",
  "hono/utils/cookie",
  "hono/utils/encode",
  "hono/utils/http-status",
  "@hono/zod-validator",
  "@upstash/kafka",
];

/** Turns the optimizer on for a workerd project (its modules run in the `ssr` environment). */
const prebundle: Plugin = {
  name: "edge-streams:prebundle",
  config: () => ({ test: { deps: { optimizer: { ssr: { enabled: true, include: PREBUNDLED } } } } }),
};

/** A Worker in workerd (by default the root wrangler.toml's, the orders-totals example), with test bindings on top of its config's. */
function workerd(bindings: Record<string, string> = {}, configPath = "./wrangler.toml", main?: string): Plugin[] {
  return [prebundle, workerdPool(bindings, configPath, main)];
}

function workerdPool(bindings: Record<string, string>, configPath: string, main?: string) {
  return cloudflareTest({
    ...(main ? { main } : {}),
    wrangler: { configPath },
    miniflare: {
      bindings: {
        API_TOKEN: TEST_API_TOKEN,
        ...TEST_SCOPED_TOKENS,
        ENVIRONMENT: "test",
        FAULT_INJECTION: "on",
        // Warnings and errors only: a green run stays short. Tests that check logging opt in (overrideLogLevel).
        LOG_LEVEL: "warn",
        MAX_BODY_BYTES: "65536",
        // Small restore batches and windows (two batches, compacted), so restoration takes many windows in tests.
        RESTORE_BATCH_RECORDS: "25",
        RESTORE_READ_AHEAD: "1",
        // Topics no task reads, for tests of the log and ingest alone.
        TOPICS: "ingest-test=4,retention-test=1(cleanup.policy=compact,delete retention.ms=60000 retention.bytes=1000000)",
        ...bindings,
      },
    },
  });
}

/**
 * The suite's longest files, started first: with three files at once, a long file started last
 * would run alone at the end (a fresh clone has no timings cached, and vitest then orders files
 * by size). Measured in CI's run (seconds, on 2 cores, 2026-12-06).
 */
const SLOW_FIRST = [
  "test/node/scale.test.ts", // 65
  "test/healing.test.ts", // 49
  "test/model-more-seeds.test.ts", // 48
  "test/model.test.ts", // 38
  "test/http-security.test.ts", // 31
  "test/restore-faults.test.ts", // 25
  "test/node/upstash-client.test.ts", // 18
  "test/task-wake.test.ts", // 17
  "test/node/client-browser.test.ts", // 16
  "test/watch.test.ts", // 15
  "test/queues/sinks.test.ts", // 13
  "test/shop/shop.test.ts", // 12
];

class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const index = SLOW_FIRST.findIndex((name) => file.moduleId.endsWith(name));
      return index < 0 ? SLOW_FIRST.length : index;
    };
    const sorted = [...(await super.sort(files))].sort((a, b) => rank(a) - rank(b));
    // A project whose files share a workerd (isolate: false) has them one after another, where its
    // first stands: vitest hands a finished file's runner on only to the next file in its queue.
    const shared = (file: TestSpecification) => file.project.config.isolate === false;
    const placed = new Set<string>();
    return sorted.flatMap((file) => {
      if (!shared(file)) return [file];
      if (placed.has(file.project.name)) return [];
      placed.add(file.project.name);
      return sorted.filter((other) => shared(other) && other.project.name === file.project.name);
    });
  }
}

export default defineConfig({
  test: {
    // A green run prints its summary; a failing test still shows everything it logged.
    silent: "passed-only",
    // Only tests slower than this are listed by name under their file's line (the model test's
    // seeds and the Node tests take seconds each): a green run is one line per file.
    slowTestThreshold: 10_000,
    // Crash tests kill Durable Objects on purpose (`ctx.abort`); workerd reports the reset of the
    // dead object's pending work. Only those expected deaths are ignored.
    onUnhandledError: (error) => !isInjectedCrash(error),
    // Three test files at once on 2 cores: most workerd and `wrangler dev` tests wait on alarms and
    // I/O, and vitest's default (cores - 1) would run the whole suite one file at a time.
    maxWorkers: 3,
    sequence: { sequencer: SlowFirst },
    projects: [
      {
        plugins: [workerd(WORKERS_BINDINGS)],
        resolve: library,
        test: {
          name: "workers",
          include: ["test/**/*.test.ts"],
          testTimeout: WORKERD_TEST_TIMEOUT,
          exclude: [
            "test/node/**",
            "test/standby/**",
            "test/page-views/**",
            "test/policies/**",
            "test/compaction/**",
            "test/shop/**",
            "test/operators/**",
            "test/drivers/**",
            "test/queues/**",
            "test/tiered/**",
            "test/connectors/**",
            "test/unit/**",
            "test/log/**",
            ...OWN_OBJECTS,
          ],
        },
      },
      {
        // The log partition's parts (test/log): the `workers` project's Worker and vars, its files
        // one after another in a workerd they share (isolate: false: one start-up and one import of
        // the library for up to three files, not one per file). They may share storage: each test
        // takes a partition object of its own, named after the file (`compaction-scratch-3`,
        // `rb7/0`, …), and a file that aborts every object does so between its own tests.
        plugins: [workerd(WORKERS_BINDINGS)],
        resolve: library,
        test: { name: "log", include: ["test/log/**/*.test.ts"], testTimeout: WORKERD_TEST_TIMEOUT, isolate: false },
      },
      {
        // Task instances, partitions and coordinators on objects of their own (OWN_OBJECTS), sharing a workerd as `log` does.
        plugins: [workerd(WORKERS_BINDINGS)],
        resolve: library,
        test: { name: "objects", include: OWN_OBJECTS, testTimeout: WORKERD_TEST_TIMEOUT, isolate: false },
      },
      {
        // Retention and compaction with the topics' defaults: a changelog compacts when due.
        plugins: [workerd()],
        resolve: library,
        test: { name: "compaction", include: ["test/compaction/**/*.test.ts"], testTimeout: WORKERD_TEST_TIMEOUT },
      },
      {
        plugins: [workerd({ ...NO_COMPACTION, NUM_STANDBYS: "1", ACCEPTABLE_RECOVERY_LAG: "0" })],
        resolve: library,
        test: { name: "standby", include: ["test/standby/**/*.test.ts"], testTimeout: WORKERD_TEST_TIMEOUT },
      },
      {
        // The second example application, its own Worker and wrangler.toml.
        plugins: [workerd({}, "./examples/page-views/wrangler.toml")],
        resolve: library,
        // Each test runs the whole pipeline (three subtopologies): slow on a loaded 2-core machine.
        test: { name: "page-views", include: ["test/page-views/**/*.test.ts"], testTimeout: 30_000 },
      },
      {
        // The third example application: a global table, a foreign-key join and KTable.groupBy.
        plugins: [workerd({}, "./examples/shop/wrangler.toml")],
        resolve: library,
        // Three subtopologies of four tasks each, all wiped and restored: slow on a loaded 2-core machine.
        test: { name: "shop", include: ["test/shop/**/*.test.ts"], testTimeout: 120_000 },
      },
      {
        // The operators the examples do not use (cogroup, repartition, emit strategies, an asymmetric
        // join, a bounded final-results buffer) on the real runtime, through wipes: a test application.
        plugins: [workerd({}, "./wrangler.toml", "./test/operators/worker.ts")],
        resolve: library,
        test: { name: "operators", include: ["test/operators/**/*.test.ts"], testTimeout: 120_000 },
      },
      {
        // TestDriver's reads of key-value, window and session stores by typed (JSON) keys: a test application.
        plugins: [workerd({}, "./wrangler.toml", "./test/drivers/worker.ts")],
        resolve: library,
        test: { name: "drivers", include: ["test/drivers/**/*.test.ts"], testTimeout: WORKERD_TEST_TIMEOUT },
      },
      {
        // The default example fed by Cloudflare Queues (miniflare's, local), its topics delivered to a
        // Queue and to a webhook (a real server on 127.0.0.1): its own Worker and wrangler.toml.
        plugins: [
          workerd({ SINK_WEBHOOK_URL: `http://127.0.0.1:${WEBHOOK_PORTS.queues}/hook`, SINK_WEBHOOK_SECRET: WEBHOOK_SECRET }, "./test/queues/wrangler.toml"),
        ],
        resolve: library,
        test: { name: "queues", include: ["test/queues/**/*.test.ts"], testTimeout: 30_000, globalSetup: ["./test/node/webhook-server.ts"] },
      },
      {
        // The connectors example (examples/connectors): events from miniflare's Queue, its input
        // tiered to miniflare's R2 (at once: local.retention.bytes=0), its output delivered to a
        // Queue and to a webhook (its own server on 127.0.0.1).
        plugins: [
          workerd(
            {
              TOPICS: "events=4(remote.storage.enable=true retention.ms=-1 local.retention.bytes=0)",
              ACTIVITY_WEBHOOK_URL: `http://127.0.0.1:${WEBHOOK_PORTS.connectors}/hook`,
              ACTIVITY_WEBHOOK_SECRET: WEBHOOK_SECRET,
            },
            "./examples/connectors/wrangler.toml",
          ),
        ],
        resolve: library,
        test: { name: "connectors", include: ["test/connectors/**/*.test.ts"], testTimeout: 30_000, globalSetup: ["./test/node/webhook-server.ts"] },
      },
      {
        // Tiered storage (docs/retention-and-compaction.md): the default example with miniflare's R2 bucket, its input tiered.
        plugins: [
          workerd(
            {
              TOPICS: `${TEST_TOPICS},orders=4(remote.storage.enable=true local.retention.bytes=0),tiered-log=1(remote.storage.enable=true local.retention.bytes=0)`,
            },
            "./test/tiered/wrangler.toml",
          ),
        ],
        resolve: library,
        test: { name: "tiered", include: ["test/tiered/**/*.test.ts"], testTimeout: WORKERD_TEST_TIMEOUT },
      },
      {
        // Wall-clock punctuation on the task's alarm and the uncaught-error policies, on the real runtime.
        // Its own Worker (a test application) with the default example's bindings.
        plugins: [workerd({ RETRY_BACKOFF_MS: "50" }, "./wrangler.toml", "./test/policies/worker.ts")],
        resolve: library,
        // Vitest's 5 s default is too short for a whole shutdown and resume with three files at once on 2 cores.
        test: { name: "policies", include: ["test/policies/**/*.test.ts"], testTimeout: 20_000 },
      },
      {
        // Pure logic (no workerd): plain Node, so a change-test loop over the core is seconds. The
        // examples' topologies import `edge-streams`: here its part without Durable Objects.
        resolve: topologyOnly,
        test: { name: "unit", environment: "node", include: ["test/unit/**/*.test.ts"], isolate: false },
      },
      {
        test: {
          name: "node",
          environment: "node",
          include: ["test/node/**/*.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          // Each file starts its own `wrangler dev` (a free port, its own storage): files run beside
          // the workerd projects' (fileParallelism: false would hold them all to the very end, one by one).
        },
      },
    ],
  },
});
