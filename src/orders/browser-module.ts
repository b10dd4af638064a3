import { ORDER_EVENT_TYPES, ORDER_STATUSES } from "./machine.ts";

/**
 * The order statuses and event types as a browser module (assets/orders.js of the console and the
 * dashboard), written from the machine's own lists so the pages' filters never drift from the service.
 */
export const ordersBrowserModule = {
  name: "orders.js",
  source: `// Written by the service from src/orders/machine.ts.\nexport const ORDER_STATUSES = ${JSON.stringify(ORDER_STATUSES)};\nexport const ORDER_EVENT_TYPES = ${JSON.stringify(ORDER_EVENT_TYPES)};\n`,
};
