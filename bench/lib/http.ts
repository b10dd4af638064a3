// The bench's HTTP client for its hot loops (the API calls of figures 2 and 5, the wallets' JSON-RPC):
// node:http over kept-alive connections. The bench shares the 2 cores with the stack it measures, and
// fetch (undici's streams and request objects) cost it about twice the CPU a request.
import http from "node:http";

const agent = new http.Agent({ keepAlive: true });

export interface HttpAnswer {
  status: number;
  text: string;
}

/** One request to a plain-HTTP URL; resolves with the status and the whole body as text. */
export function httpRequest(url: string, options: { method: string; headers?: Record<string, string>; body?: string; timeoutMs: number }): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const headers = options.body === undefined ? (options.headers ?? {}) : { ...options.headers, "content-length": String(Buffer.byteLength(options.body)) };
    const request = http.request(url, { method: options.method, headers, agent, signal: AbortSignal.timeout(options.timeoutMs) }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (text += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, text }));
      response.on("error", reject);
    });
    request.on("error", reject);
    request.end(options.body);
  });
}
