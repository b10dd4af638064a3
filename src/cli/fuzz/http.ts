// Requests as bytes: node:http sends the path, method and headers exactly as generated (fetch would
// normalise `..`, percent-encoding and letter case, refuse TRACE, and merge duplicated headers).
import http from "node:http";

export interface RawRequest {
  method: string;
  /** Sent as is: path and query, not normalised. */
  path: string;
  /** An array value sends the header once per element (duplicated header lines). */
  headers: Record<string, string | string[]>;
  body?: Buffer;
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  ms: number;
  /** Set when no response came (connection refused or reset, timeout). */
  transportError?: string;
}

export function createSender(baseUrl: string, options: { timeoutMs?: number; sockets?: number } = {}) {
  const url = new URL(baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.sockets ?? 16 });
  const timeoutMs = options.timeoutMs ?? 30_000;

  function send(request: RawRequest): Promise<RawResponse> {
    const started = performance.now();
    return new Promise((resolve) => {
      const done = (response: Omit<RawResponse, "ms">) => resolve({ ...response, ms: performance.now() - started });
      let req: http.ClientRequest;
      try {
        const headers = { ...request.headers };
        if (request.body !== undefined && !Object.keys(headers).some((name) => name.toLowerCase() === "content-length")) {
          headers["Content-Length"] = String(request.body.length);
        }
        req = http.request({ host: url.hostname, port: url.port, method: request.method, path: request.path, headers, agent, setHost: true });
      } catch (error) {
        done({ status: 0, headers: {}, body: Buffer.alloc(0), transportError: `not sendable: ${(error as Error).message}` });
        return;
      }
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`no response in ${timeoutMs} ms`)));
      req.on("response", (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => done({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on("error", (error) => done({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), transportError: error.message }));
      });
      req.on("error", (error) => done({ status: 0, headers: {}, body: Buffer.alloc(0), transportError: error.message }));
      req.end(request.body);
    });
  }

  return {
    send,
    close() {
      agent.destroy();
    },
  };
}

export type Sender = ReturnType<typeof createSender>;

/** Runs `tasks` with at most `limit` at a time, results in the tasks' order. */
export async function runLimited<T>(tasks: (() => Promise<T>)[], limit: number): Promise<T[]> {
  const results: T[] = new Array<T>(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const index = next;
      next += 1;
      results[index] = await tasks[index]!();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  return results;
}
