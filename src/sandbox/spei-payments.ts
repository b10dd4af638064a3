import type { Pool } from "../db/pool.ts";
import type { SharedSpeiPayment, SharedSpeiPayments } from "./simulators/cep-portal.ts";

/**
 * The sandbox's simulated SPEI payments in the database (table sandbox_spei_payments), so every instance's
 * CEP portal simulator finds a payment whichever instance recorded it.
 */
export function databaseSpeiPayments(pool: Pool): SharedSpeiPayments {
  return {
    async save(payment: SharedSpeiPayment) {
      await pool.query("INSERT INTO sandbox_spei_payments (tracking_key, reference, payment) VALUES ($1, $2, $3) ON CONFLICT (tracking_key) DO NOTHING", [
        payment.trackingKey,
        payment.reference,
        JSON.stringify(payment),
      ]);
    },
    async find(criterio: string) {
      const { rows } = await pool.query<{ payment: SharedSpeiPayment }>(
        "SELECT payment FROM sandbox_spei_payments WHERE upper(tracking_key) = upper($1) OR reference = $1",
        [criterio],
      );
      return rows.map((row) => row.payment);
    },
  };
}
