import type { ApiResponse, TestService } from "../support/service.ts";

// A dashboard client: keeps the session cookie as a browser would, and sends the CSRF header on changes.

export interface DashboardClient {
  cookie: string | undefined;
  csrfToken: string | undefined;
  /** `/dashboard/v1` + path. `csrf: false` leaves the header out; a string sends that value. */
  call<T = Record<string, unknown>>(method: string, path: string, options?: { body?: unknown; csrf?: boolean | string; headers?: Record<string, string> }): Promise<ApiResponse<T>>;
  signIn(email: string, password: string): Promise<ApiResponse>;
}

export function dashboardClient(service: Pick<TestService, "baseUrl">): DashboardClient {
  const client: DashboardClient = {
    cookie: undefined,
    csrfToken: undefined,
    async call<T>(method: string, path: string, options: { body?: unknown; csrf?: boolean | string; headers?: Record<string, string> } = {}): Promise<ApiResponse<T>> {
      const headers: Record<string, string> = { ...options.headers };
      if (client.cookie) headers.Cookie = client.cookie;
      const csrf = options.csrf ?? true;
      if (typeof csrf === "string") headers["X-CSRF-Token"] = csrf;
      else if (csrf && client.csrfToken && method !== "GET") headers["X-CSRF-Token"] = client.csrfToken;
      let body: string | undefined;
      if (options.body !== undefined) {
        body = JSON.stringify(options.body);
        headers["Content-Type"] = "application/json";
      }
      const response = await fetch(`${service.baseUrl}/dashboard/v1${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
      const setCookie = response.headers.getSetCookie();
      for (const line of setCookie) {
        const [pair] = line.split(";");
        const [name, value] = pair!.split("=");
        if (name === "offramp_dashboard") client.cookie = value ? `${name}=${value}` : undefined;
      }
      const text = await response.text();
      const parsed = text ? (JSON.parse(text) as T) : (undefined as T);
      if (response.status === 201 && parsed && typeof (parsed as unknown as { csrfToken?: unknown }).csrfToken === "string") {
        client.csrfToken = (parsed as unknown as { csrfToken: string }).csrfToken;
      }
      return { status: response.status, headers: response.headers, body: parsed };
    },
    signIn(email, password) {
      return client.call("POST", "/session", { body: { email, password }, csrf: false });
    },
  };
  return client;
}

/** Invites a member through the admin API and accepts the invitation; returns a signed-in client. */
export async function memberOf(
  service: TestService,
  partnerId: string,
  role: "OWNER" | "DEVELOPER" | "VIEWER",
  email = `${role.toLowerCase()}-${Math.random().toString(36).slice(2, 8)}@example.com`,
  password = "correct horse battery staple",
): Promise<DashboardClient & { email: string; password: string; memberId: string }> {
  const invited = await service.admin<{ id: string; inviteUrl: string }>("POST", `/partners/${partnerId}/members`, { email, role });
  if (invited.status !== 201) throw new Error(`invite: ${invited.status} ${JSON.stringify(invited.body)}`);
  const client = dashboardClient(service);
  const accepted = await client.call("POST", `/invitations/${inviteToken(invited.body.inviteUrl)}`, { body: { password }, csrf: false });
  if (accepted.status !== 201) throw new Error(`accept: ${accepted.status} ${JSON.stringify(accepted.body)}`);
  return Object.assign(client, { email, password, memberId: invited.body.id });
}

export function inviteToken(inviteUrl: string): string {
  const match = /#\/invitation\/([A-Za-z0-9_-]+)$/.exec(inviteUrl);
  if (!match) throw new Error(`not an invitation URL: ${inviteUrl}`);
  return match[1]!;
}
