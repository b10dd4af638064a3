// Values the tests, the bench and the service processes they start share. No imports with effects: the
// service processes and the bench import it without the tests' machinery.
import { withCheckDigit } from "../../src/domain/clabe.ts";

export const ADMIN_TOKEN = "test-admin-token-0123456789";

/** A valid CLABE at BBVA (prefix 012) for test sellers. */
export const SELLER_CLABE = withCheckDigit("01218000118359719");
