import assert from "node:assert/strict";
import type { ApiResponse } from "./service.ts";

/** The spec's error body: exactly `{ error, message }`, both non-empty strings, with the code's HTTP status. */
export function assertError(response: ApiResponse<unknown>, status: number, code: string): void {
  const body = response.body as Record<string, unknown>;
  assert.equal(response.status, status, `expected ${status} ${code}, got ${response.status} ${JSON.stringify(body)}`);
  assert.deepEqual(Object.keys(body).sort(), ["error", "message"], `error body ${JSON.stringify(body)}`);
  assert.equal(body.error, code);
  assert.equal(typeof body.message, "string");
  assert.notEqual(body.message, "");
}

/** A 2xx answer, with the body in the failure message. */
export function assertStatus(response: ApiResponse<unknown>, status: number): void {
  assert.equal(response.status, status, `expected ${status}, got ${response.status} ${JSON.stringify(response.body)}`);
}

/** `2026-11-21T17:05:09.123Z`: ISO 8601 UTC with milliseconds (decisions section 2). */
export const ISO_MILLIS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * Waits, when needed, until the current UTC minute has at least `seconds` left: a burst counted against a
 * per-minute window the service reads from the wall clock (failed admin authentications) then falls in
 * one window. Started in a minute's last moments, its attempts were split between two windows and up to
 * twice the limit were judged (13 of 30 parallel guesses answered 401 against a limit of 10, once).
 */
export async function clearOfMinuteEnd(seconds = 5): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < seconds * 1000) await new Promise((resolve) => setTimeout(resolve, left + 50));
}

/** A moment in the middle of a UTC minute, an hour ahead (so the rate-limit pruning job never sees it). */
export function midMinute(offsetSeconds = 30): number {
  return Math.floor(Date.now() / 60_000) * 60_000 + 3_600_000 + offsetSeconds * 1000;
}
