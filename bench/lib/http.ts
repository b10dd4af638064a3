// The bench's HTTP client for its hot loops (the API calls of figures 2 and 5, the wallets' JSON-RPC):
// node:http over kept-alive connections. The bench shares the 2 cores with the stack it measures, and
// fetch (undici's streams and request objects) cost it about twice the CPU a request.
import http from "node:http";

const agent = new http.Agent({ keepAlive: true });

export interface HttpAnswer {
  status: number;
  text: string;
}

export interface HttpRequestOptions {
  method: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs: number;
}

/** One attempt; a failure carries whether it went out on a kept-alive connection (`reusedSocket`). */
function send(url: string, options: HttpRequestOptions): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const headers = options.body === undefined ? (options.headers ?? {}) : { ...options.headers, "content-length": String(Buffer.byteLength(options.body)) };
    const request = http.request(url, { method: options.method, headers, agent, signal: AbortSignal.timeout(options.timeoutMs) }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (text += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, text }));
      response.on("error", reject);
    });
    request.on("error", (error: NodeJS.ErrnoException) => reject(Object.assign(error, { reusedSocket: request.reusedSocket })));
    request.end(options.body);
  });
}

/**
 * One request to a plain-HTTP URL; resolves with the status and the whole body as text. A kept-alive
 * connection the server closed as the request went out (it had been idle for the server's keep-alive
 * timeout) fails before any answer: the server never read the request, so it is sent once more on a new
 * connection, as Node's documentation advises (`request.reusedSocket`).
 */
export async function httpRequest(url: string, options: HttpRequestOptions): Promise<HttpAnswer> {
  try {
    return await send(url, options);
  } catch (error) {
    const { code, reusedSocket } = error as NodeJS.ErrnoException & { reusedSocket?: boolean };
    if (!reusedSocket || code !== "ECONNRESET") throw error;
    return send(url, options);
  }
}
