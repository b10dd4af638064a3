import { pino, type Logger } from "pino";

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: "offramp" },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      // Secrets never reach the logs, whichever field they hide in.
      paths: ["req.headers['x-api-key']", "req.headers.authorization", "apiKey", "webhookSecret", "*.apiKey", "*.webhookSecret"],
      censor: "[redacted]",
    },
  });
}
