/**
 * The route → role table: which roles (credentials.ts) may call each route, in one place. A
 * request needs a credential granting one of its route's roles (403 otherwise). Paths are matched
 * by segments: `:name` is one segment, a final `*` any rest. The first entry that matches wins.
 * A path no entry names — a route you add to `streams.app`, or none at all — needs `admin`.
 *
 * Besides roles, an entry says how its callers authenticate: the API takes a bearer token, `/kafka`
 * HTTP Basic (the dialect's scheme), and the read-only pages a browser opens (`cookie`) also the
 * session cookie of `/login`, for GET only. `public` entries need no credential.
 */
import type { Role } from "./credentials";

export type Scheme = "bearer" | "basic";

export interface AccessRule {
  /** The path pattern (documentation and matching). */
  readonly path: string;
  /** Roles any one of which lets a request in; empty for `public` routes. */
  readonly roles: readonly Role[];
  readonly scheme: Scheme;
  /** A browser's session cookie is taken too (GET and HEAD only). */
  readonly cookie?: boolean;
  /** No credential needed (sign-in pages, liveness). */
  readonly public?: boolean;
}

const api = (path: string, roles: Role[], extra: Partial<AccessRule> = {}): AccessRule => ({ path, roles, scheme: "bearer", ...extra });
const kafka = (path: string, roles: Role[]): AccessRule => ({ path: `/kafka${path}`, roles, scheme: "basic" });

export const ACCESS_RULES: readonly AccessRule[] = [
  api("/healthz", [], { public: true }),
  api("/login", [], { public: true }),
  api("/logout", [], { public: true }),
  api("/", ["read"], { cookie: true }),
  api("/tasks", ["read"], { cookie: true }),
  // The status page follows it with its cookie (EventSource cannot send Authorization).
  api("/tasks/watch", ["read"], { cookie: true }),
  api("/metrics", ["read"], { cookie: true }),
  api("/sinks", ["read"], { cookie: true }),
  api("/health", ["read"], { cookie: true }),
  // Listing topics is metadata a producer needs too (Kafka's Write implies Describe).
  api("/topics", ["read", "produce"]),
  api("/topics/:topic", ["read"]),
  // Tailing a topic reads its records, as `GET /topics/:topic` reads its offsets.
  api("/topics/:topic/watch", ["read"]),
  api("/topics/:topic/records", ["produce"]),
  api("/stores/*", ["read"]),
  api("/admin/*", ["admin"]),
  // The log role: another deployment's UpstashLog calls topics, produce, fetch, offsets, commit, committed.
  kafka("/topics", ["read", "produce", "log"]),
  kafka("/produce", ["produce", "log"]),
  kafka("/produce/*", ["produce", "log"]),
  kafka("/fetch", ["read", "log"]),
  kafka("/offsets/*", ["read", "log"]),
  kafka("/committed/*", ["read", "log"]),
  // Consuming in a group commits that group's offsets: Kafka's ACLs put it under Read (of the topic and the group).
  kafka("/commit/*", ["read", "log"]),
  kafka("/consume/*", ["read"]),
  kafka("/consumers", ["read"]),
  kafka("/delete-consumer/*", ["read"]),
  // Anything else of the dialect (a 404 or 405): any credential may learn it does not exist.
  kafka("/*", ["read", "produce", "admin", "log"]),
  { path: "/kafka", roles: ["read", "produce", "admin", "log"], scheme: "basic" },
];

/** Paths no entry names: routes added to `streams.app`, or none. */
export const DEFAULT_RULE: AccessRule = api("/*", ["admin"]);

function matches(want: readonly string[], got: readonly string[]): boolean {
  for (let i = 0; i < want.length; i++) {
    const segment = want[i]!;
    if (segment === "*" && i === want.length - 1) return got.length > i && got.slice(i).join("/") !== "";
    if (i >= got.length) return false;
    if (segment.startsWith(":")) {
      if (got[i] === "") return false;
    } else if (segment !== got[i]) return false;
  }
  return got.length === want.length;
}

/** Each entry's pattern split into segments once, not on every request for every entry before its own. */
const SPLIT_RULES = ACCESS_RULES.map((rule) => ({ rule, want: rule.path.split("/") }));

/** The entry governing `path` (percent-encoded, as in the request line). */
export function accessRule(path: string): AccessRule {
  const got = path.split("/");
  return SPLIT_RULES.find(({ want }) => matches(want, got))?.rule ?? DEFAULT_RULE;
}
