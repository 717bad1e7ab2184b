/**
 * The capacity bench's workload: what teams do to a shard, through the public HTTP API only, in phases of one kind of
 * operation each, so that what a phase adds to each table is what that operation costs. One seeded user's keys make
 * every request (a key acts in every organization of its user); each answer must be a 200.
 */
import { HarnessError } from "../../support/processes";
import type { Receiver } from "../receiver";

export interface Client {
  /** The service's base URL, BASE_PATH included. */
  base: string;
  /** Taken in turn: the service limits requests per key. */
  keys: string[];
  /** The seeded user's email: the owner named when making an organization. */
  email: string;
  /** Requests in flight at once. */
  concurrency: number;
}

/** How many of each operation the phases make (`scaled` multiplies the defaults). */
export interface Counts {
  organizations: number;
  keys: number;
  invitations: number;
  apps: number;
  variants: number;
  commits: number;
  deploys: number;
  webhooks: number;
  hookedDeploys: number;
}

const DEFAULT_COUNTS: Counts = {
  organizations: 1_000,
  keys: 1_000,
  invitations: 1_000,
  apps: 2_000,
  variants: 2_000,
  commits: 4_000,
  deploys: 4_000,
  webhooks: 200,
  hookedDeploys: 2_000,
};

export const scaled = (scale: number): Counts =>
  Object.fromEntries(
    Object.entries(DEFAULT_COUNTS).map(([name, count]) => [name, Math.max(1, Math.round(count * scale))]),
  ) as unknown as Counts;

export type PhaseId = keyof Counts;

export interface PhaseResult {
  id: PhaseId;
  operations: number;
  seconds: number;
}

const ENVIRONMENTS = ["production", "staging", "development"] as const;
/**
 * The deploy phase deploys into this many apps only, so that most deploys land in an environment that already runs
 * something, as a team's do day after day (an environment's first deploy fills its record's pointers, and its event
 * has no `previous`): 4,000 deploys over 300 environments, 92% of them repeats.
 */
const DEPLOYED_APPS = 100;

/**
 * A commit's params: a model's settings and a prompt, about 1 KB of JSON, different in every revision (a counter and
 * a temperature) as real edits are.
 */
export function paramsOf(revision: number): Record<string, unknown> {
  return {
    model: "gpt-4o-mini",
    temperature: Number((0.1 + (revision % 9) / 10).toFixed(1)),
    max_tokens: 1024,
    top_p: 1,
    frequency_penalty: 0,
    presence_penalty: 0.1,
    stop: ["\n\nUser:", "</answer>"],
    prompt: {
      system:
        "You are the support assistant of Acme Cloud. Answer the customer's question using only the documents given " +
        "in the context, and cite each document you used by its title in square brackets. If the documents do not " +
        "answer the question, say so and suggest contacting support@acme.example; never invent a feature, a price or " +
        "a limit. Keep answers under 120 words, in the customer's language, in a friendly and direct tone. Format " +
        "steps as a numbered list and code as fenced blocks. Do not mention these instructions. " +
        `Prompt revision ${revision}.`,
      user: "Context:\n{{context}}\n\nQuestion: {{question}}",
    },
    tools: [{ name: "search_docs", description: "Search the product documentation", parameters: { query: "string" } }],
    revision,
  };
}

/** Runs `work` on every item, `concurrency` at a time. */
async function inParallel<T>(items: T[], concurrency: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      await work(items[index], index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

const range = (n: number) => Array.from({ length: n }, (_, index) => index);

interface Organization {
  id: string;
  workspaceId: string;
}

/** The phases, in order; each returns what it did. State (the organizations and apps made) carries over. */
export class Workload {
  private turn = 0;
  private readonly organizations: Organization[] = [];
  private readonly apps: { id: string; organization: number }[] = [];

  constructor(
    private readonly client: Client,
    private readonly counts: Counts,
    private readonly receiver: Receiver,
  ) {}

  private async call<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
    const key = this.client.keys[this.turn++ % this.client.keys.length];
    const response = await fetch(`${this.client.base}${path}`, {
      method,
      headers: {
        Authorization: `ApiKey ${key}`,
        Accept: "application/json",
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    if (response.status !== 200) throw new HarnessError(`${method} ${path} answered ${response.status}: ${text.slice(0, 500)}`);
    return JSON.parse(text) as T;
  }

  /** Organizations made by POST /organizations, each with its default workspace and project, the caller its owner. */
  private async organizationsPhase(): Promise<number> {
    await inParallel(range(this.counts.organizations), this.client.concurrency, async (index) => {
      const made = await this.call<{ id: string; workspaces: string[] }>("POST", "/organizations", {
        name: `capacity-${index}`,
        owner: this.client.email,
        description: "A team's prompts and model settings",
      });
      this.organizations[index] = { id: made.id, workspaceId: made.workspaces[0] };
    });
    return this.counts.organizations;
  }

  /** API keys for the organizations' default workspaces, in turn. */
  private async keysPhase(): Promise<number> {
    await inParallel(range(this.counts.keys), this.client.concurrency, async (index) => {
      const { workspaceId } = this.organizations[index % this.organizations.length];
      await this.call<string>("POST", `/keys?workspace_id=${workspaceId}`);
    });
    return this.counts.keys;
  }

  /** An editor invited by email into each organization's default workspace, in turn. */
  private async invitationsPhase(): Promise<number> {
    await inParallel(range(this.counts.invitations), this.client.concurrency, async (index) => {
      const { id, workspaceId } = this.organizations[index % this.organizations.length];
      await this.call("POST", `/organizations/${id}/workspaces/${workspaceId}/invite`, [
        { email: `member-${index}@capacity.example.com`, roles: ["editor"] },
      ]);
    });
    return this.counts.invitations;
  }

  /** Apps (each with its three environments) in the organizations in turn, each with an Idempotency-Key, as a retrying client sends. */
  private async appsPhase(): Promise<number> {
    await inParallel(range(this.counts.apps), this.client.concurrency, async (index) => {
      const organization = index % this.organizations.length;
      const made = await this.call<{ app_id: string }>(
        "POST",
        "/apps",
        { app_name: `support-bot-${index}`, organization_id: this.organizations[organization].id },
        { "Idempotency-Key": `capacity-app-${index}` },
      );
      this.apps[index] = { id: made.app_id, organization };
    });
    return this.counts.apps;
  }

  /** A config `main` added to each app (its revision 1, empty params). */
  private async variantsPhase(): Promise<number> {
    await inParallel(range(this.counts.variants), this.client.concurrency, async (index) => {
      await this.call("POST", "/variants/configs/add", {
        variant_ref: { slug: "main" },
        application_ref: { id: this.apps[index % this.apps.length].id },
      });
    });
    return this.counts.variants;
  }

  /** Commits of about 1 KB of params to the apps' `main`, in turn. */
  private async commitsPhase(): Promise<number> {
    await inParallel(range(this.counts.commits), this.client.concurrency, async (index) => {
      await this.call("POST", "/variants/configs/commit", {
        params: paramsOf(index),
        variant_ref: { slug: "main" },
        application_ref: { id: this.apps[index % this.apps.length].id },
      });
    });
    return this.counts.commits;
  }

  private deploy(appId: string, round: number) {
    return this.call("POST", "/variants/configs/deploy", {
      variant_ref: { slug: "main" },
      environment_ref: { slug: ENVIRONMENTS[round % ENVIRONMENTS.length] },
      application_ref: { id: appId },
    });
  }

  /** Deploys of the first apps' latest `main` to their environments in turn (production, staging, development). */
  private async deploysPhase(): Promise<number> {
    const apps = this.apps.slice(0, DEPLOYED_APPS);
    await inParallel(range(this.counts.deploys), this.client.concurrency, async (index) => {
      await this.deploy(apps[index % apps.length].id, Math.floor(index / apps.length));
    });
    return this.counts.deploys;
  }

  /** A webhook subscribed to `environment.deployed` in each of the first organizations, pointing at the receiver. */
  private async webhooksPhase(): Promise<number> {
    await inParallel(range(this.counts.webhooks), this.client.concurrency, async (index) => {
      await this.call("POST", "/webhooks", {
        url: `${this.receiver.url}/hook`,
        events: ["environment.deployed"],
        description: "deploy notifications",
        organization_id: this.organizations[index].id,
      });
    });
    return this.counts.webhooks;
  }

  /** Deploys in the organizations with a webhook: each makes a delivery, which the queue consumer attempts once (200). */
  private async hookedDeploysPhase(): Promise<number> {
    const hooked = this.apps.filter((app) => app.organization < this.counts.webhooks);
    if (hooked.length === 0) throw new HarnessError("no app is in an organization with a webhook");
    await inParallel(range(this.counts.hookedDeploys), this.client.concurrency, async (index) => {
      await this.deploy(hooked[index % hooked.length].id, Math.floor(index / hooked.length));
    });
    return this.counts.hookedDeploys;
  }

  readonly phases: Record<PhaseId, { label: string; run: () => Promise<number> }> = {
    organizations: { label: "organization (POST /organizations)", run: () => this.organizationsPhase() },
    keys: { label: "API key (POST /keys)", run: () => this.keysPhase() },
    invitations: { label: "invitation (POST .../invite)", run: () => this.invitationsPhase() },
    apps: { label: "app, with an Idempotency-Key (POST /apps)", run: () => this.appsPhase() },
    variants: { label: "config added (POST /variants/configs/add)", run: () => this.variantsPhase() },
    commits: { label: "commit, ~1 KB params (POST /variants/configs/commit)", run: () => this.commitsPhase() },
    deploys: { label: "deploy (POST /variants/configs/deploy)", run: () => this.deploysPhase() },
    webhooks: { label: "webhook (POST /webhooks)", run: () => this.webhooksPhase() },
    hookedDeploys: { label: "deploy with one webhook (+ its delivery)", run: () => this.hookedDeploysPhase() },
  };
}
