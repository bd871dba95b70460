/**
 * Who may do what, as Kafka has ACLs: every credential is a token kept in a secret, and each secret
 * grants roles. `API_TOKEN` is all-powerful for people and services (read, produce, admin); the
 * scoped tokens grant one role each (admin also reads: an operator sees what it acts on). `log` is
 * the runtime's own role: another Edge Streams deployment whose log is this one's `/kafka`
 * (`LOG_BACKEND=upstash`) sends its tasks' producer identities and group epochs with it, and no
 * other credential may (workers/api/owned.ts). Each secret holds one token or a comma-separated
 * list, so a token is rotated without downtime: add the new one beside the old, move the clients,
 * drop the old. Which role each route needs is in access.ts.
 */
import type { Config } from "../../src/config";
import { secretMatches } from "../../src/util/secret-matches";
import { ApiError } from "./http-error";
import { missingTokenMessage } from "./missing-token";

export type Role = "read" | "produce" | "admin" | "log";

/** The secrets that hold tokens, and the roles each grants. */
export const TOKEN_SECRETS = {
  API_TOKEN: ["read", "produce", "admin"],
  ADMIN_TOKEN: ["admin", "read"],
  PRODUCE_TOKEN: ["produce"],
  READ_TOKEN: ["read"],
  LOG_TOKEN: ["log"],
} as const satisfies Record<string, readonly Role[]>;

export type TokenSecret = keyof typeof TOKEN_SECRETS;

/** What an open local development Worker (no token set, `ENVIRONMENT=development`) grants anyone: everything but the runtime's role. */
export const OPEN_ROLES: ReadonlySet<Role> = new Set<Role>(["read", "produce", "admin"]);

interface Token {
  readonly token: string;
  readonly secret: TokenSecret;
  readonly roles: ReadonlySet<Role>;
}

export interface Credentials {
  readonly tokens: readonly Token[];
  /** No token is set and the Worker runs for local development: every request is let in (with OPEN_ROLES). */
  readonly open: boolean;
}

/** The tokens of one secret's value: comma-separated, blanks around them ignored. */
export function tokensOf(value: string | undefined): string[] {
  return (value ?? "")
    .split(",")
    .map((t) => t.trim())
    .filter((t) => t.length > 0);
}

const cache = new WeakMap<Config, Credentials>();

/**
 * The configured tokens. Outside local development a Worker without any token refuses to serve
 * rather than serve openly (500 misconfigured, saying how to set one where it runs: `requestUrl`
 * tells `wrangler dev` from a deployment); a token set in two secrets is refused too, since
 * it would mix their roles (an API token that is also the log token could forge the runtime's
 * identities, which the API token must never do).
 */
export function credentialsOf(config: Config, requestUrl = ""): Credentials {
  const cached = cache.get(config);
  if (cached) return cached;
  const tokens: Token[] = [];
  const seen = new Map<string, TokenSecret>();
  for (const secret of Object.keys(TOKEN_SECRETS) as TokenSecret[]) {
    for (const token of tokensOf(config[secret])) {
      const other = seen.get(token);
      if (other !== undefined && other !== secret) {
        throw new ApiError(500, "misconfigured", `the same token is set in ${other} and ${secret}: each secret needs tokens of its own; refusing to serve`);
      }
      seen.set(token, secret);
      tokens.push({ token, secret, roles: new Set(TOKEN_SECRETS[secret]) });
    }
  }
  if (tokens.length === 0 && !config.localDevelopment) {
    throw new ApiError(500, "misconfigured", missingTokenMessage(requestUrl));
  }
  const credentials = { tokens, open: tokens.length === 0 };
  cache.set(config, credentials);
  return credentials;
}

/**
 * The roles a presented token grants, or null when it is none of the configured tokens. Every
 * token is compared, each in constant time, without an early exit: the time taken says nothing
 * about which token (if any) came close.
 */
export function rolesOf(credentials: Credentials, presented: string): ReadonlySet<Role> | null {
  let roles: Set<Role> | null = null;
  for (const { token, roles: granted } of credentials.tokens) {
    if (secretMatches(presented, token)) {
      roles ??= new Set();
      for (const role of granted) roles.add(role);
    }
  }
  return roles;
}

/** Whether a token grants `role` (the sign-in form takes any token that may read). */
export function grants(roles: ReadonlySet<Role> | null, role: Role): boolean {
  return roles?.has(role) === true;
}
