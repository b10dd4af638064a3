import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CepParseError, mexicoCityToUtc, parseCepXml, verifyCepConcept, verifyCepReceipt } from "../../src/integrations/cep-receipt.ts";
import type { CepExpectation, CepReceipt } from "../../src/integrations/cep-receipt.ts";

// Shaped like the portal's 2024 receipts (attribute order, cadenaCDA layout, lowercase claveRastreo);
// the people, accounts and seal are invented.
const SELLER_CLABE = "723969000011000077";
const CADENA =
  "||1|08112024|08112024|105336|90723|BaBien|Ana Ordenante Prueba|40|166180026480316602|XAXX010101000|Cuenca|" +
  "Beto Beneficiario Prueba|40|723969000011000077|XEXX010101000|PAGO ORDEN 1|0.00|3414.95|NA|NA|0|0|NA|0|0.00|" +
  "NA|NA|NA|NA|NA|NA|NA|NA|NA|NA|NA|NA|NA|NA|NA|NA|00000100000100099999||c2VsbG8gZGUgcHJ1ZWJh";

function cepXml(overrides: { root?: Record<string, string | undefined>; ben?: Record<string, string | undefined>; ord?: Record<string, string | undefined> } = {}): string {
  const attrs = (base: Record<string, string>, extra: Record<string, string | undefined> = {}): string =>
    Object.entries({ ...base, ...extra })
      .filter((e): e is [string, string] => e[1] !== undefined)
      .map(([k, v]) => `${k}="${v}"`)
      .join(" ");
  const root = attrs(
    {
      FechaOperacion: "2024-11-08",
      Hora: "10:53:36",
      ClaveSPEI: "90723",
      sello: "c2VsbG8gZGUgcHJ1ZWJh",
      numeroCertificado: "00000100000100099999",
      cadenaCDA: CADENA,
      claveRastreo: "BiB202411081016248360",
    },
    overrides.root,
  );
  const ben = attrs(
    {
      BancoReceptor: "Cuenca",
      Nombre: "Beto Beneficiario Prueba",
      TipoCuenta: "40",
      Cuenta: SELLER_CLABE,
      RFC: "XEXX010101000",
      Concepto: "PAGO ORDEN 1",
      IVA: "0.00",
      MontoPago: "3414.95",
    },
    overrides.ben,
  );
  const ord = attrs(
    { BancoEmisor: "BaBien", Nombre: "Ana Ordenante Prueba", TipoCuenta: "40", Cuenta: "166180026480316602", RFC: "XAXX010101000" },
    overrides.ord,
  );
  return `<?xml version="1.0" encoding="UTF-8"?>\r\n<SPEI_Tercero ${root}>\r\n    <Beneficiario ${ben}/>\r\n    <Ordenante ${ord}/>\r\n</SPEI_Tercero>`;
}

describe("parseCepXml", () => {
  test("parses a receipt in the portal's shape", () => {
    const r = parseCepXml(cepXml());
    assert.equal(r.trackingKey, "BiB202411081016248360");
    assert.equal(r.operationDate, "2024-11-08");
    assert.equal(r.creditDate, "2024-11-08");
    assert.equal(r.operationTime, "10:53:36");
    // Mexico City is UTC-6 all year since October 2022.
    assert.equal(r.operationAt, "2024-11-08T16:53:36.000Z");
    assert.equal(r.amountMxn, "3414.95");
    assert.equal(r.beneficiaryAccount, SELLER_CLABE);
    assert.equal(r.beneficiaryBank, "Cuenca");
    assert.equal(r.beneficiaryName, "Beto Beneficiario Prueba");
    assert.equal(r.senderAccount, "166180026480316602");
    assert.equal(r.senderBank, "BaBien");
    assert.equal(r.senderName, "Ana Ordenante Prueba");
    assert.equal(r.concept, "PAGO ORDEN 1");
    assert.equal(r.speiKey, "90723");
    assert.equal(r.paymentType, "1");
    assert.equal(r.certificateNumber, "00000100000100099999");
    assert.equal(r.seal, "c2VsbG8gZGUgcHJ1ZWJh");
    assert.match(r.cepHash, /^0x[0-9a-f]{64}$/);
  });

  test("normalises amounts: zero-padded, integer, one decimal", () => {
    assert.equal(parseCepXml(cepXml({ ben: { MontoPago: "000000000000008.17" } })).amountMxn, "8.17");
    assert.equal(parseCepXml(cepXml({ ben: { MontoPago: "300" } })).amountMxn, "300.00");
    assert.equal(parseCepXml(cepXml({ ben: { MontoPago: "12.5" } })).amountMxn, "12.50");
  });

  test("accepts ClaveRastreo spelled with a capital C", () => {
    const r = parseCepXml(cepXml({ root: { claveRastreo: undefined, ClaveRastreo: "ABC123" } }));
    assert.equal(r.trackingKey, "ABC123");
  });

  test("a late or weekend payment: instant from the credit date in cadenaCDA, not FechaOperacion", () => {
    // Paid Thursday 2019-08-29 at 18:33:15 (CDT, UTC-5), settled on operation date 2019-08-30.
    const cadena = "||1|30082019|29082019|183315|90646|BBVA BANCOMER|X|40|012180015379616853|ND|STP|Y|40|646180157048010399|ND|TEST|0.00|300|00001000000403723743||c2Vsbw==";
    const r = parseCepXml(cepXml({ root: { FechaOperacion: "2019-08-30", Hora: "18:33:15", cadenaCDA: cadena } }));
    assert.equal(r.operationDate, "2019-08-30");
    assert.equal(r.creditDate, "2019-08-29");
    assert.equal(r.operationAt, "2019-08-29T23:33:15.000Z");
  });

  test("the time falls back to cadenaCDA, and is null when neither gives one", () => {
    assert.equal(parseCepXml(cepXml({ root: { Hora: undefined } })).operationTime, "10:53:36");
    const noTime = parseCepXml(cepXml({ root: { Hora: undefined, cadenaCDA: "||1|08112024|08112024||90723|x" } }));
    assert.equal(noTime.operationTime, null);
    assert.equal(noTime.operationAt, null);
    assert.equal(noTime.creditDate, "2024-11-08");
  });

  test("decodes entities in names", () => {
    const r = parseCepXml(cepXml({ ben: { Nombre: "MU&#209;OZ &amp; HIJOS" } }));
    assert.equal(r.beneficiaryName, "MUÑOZ & HIJOS");
  });

  test("cepHash is stable for the same payment and ignores seal and certificate", () => {
    const a = parseCepXml(cepXml());
    const b = parseCepXml(cepXml());
    const resealed = parseCepXml(cepXml({ root: { sello: "b3RybyBzZWxsbw==", numeroCertificado: "00000100000100011111" } }));
    assert.equal(a.cepHash, b.cepHash);
    assert.equal(a.cepHash, resealed.cepHash);
    assert.notEqual(a.cepHash, parseCepXml(cepXml({ root: { claveRastreo: "BiB202411081016248361" } })).cepHash);
    assert.notEqual(a.cepHash, parseCepXml(cepXml({ ben: { MontoPago: "3414.96" } })).cepHash);
    assert.notEqual(a.cepHash, parseCepXml(cepXml({ root: { FechaOperacion: "2024-11-11" } })).cepHash);
  });

  const rejects = (xml: string, code: string, field?: string) => {
    assert.throws(
      () => parseCepXml(xml),
      (err: unknown) => err instanceof CepParseError && err.code === code && (field === undefined || err.field === field),
    );
  };

  test("malformed XML throws CepParseError MALFORMED_XML", () => {
    rejects(cepXml().slice(0, 200), "MALFORMED_XML");
    rejects("", "MALFORMED_XML");
    rejects("<html><body>Lo sentimos</body></html>".replace("</body>", ""), "MALFORMED_XML");
    rejects('<!DOCTYPE x [<!ENTITY a "b">]><SPEI_Tercero/>', "MALFORMED_XML");
  });

  test("a different root throws UNEXPECTED_ROOT", () => {
    rejects("<html><body>Error</body></html>", "UNEXPECTED_ROOT");
  });

  test("missing fields throw MISSING_FIELD naming the field", () => {
    rejects(cepXml({ root: { claveRastreo: undefined } }), "MISSING_FIELD", "SPEI_Tercero@claveRastreo");
    rejects(cepXml({ root: { FechaOperacion: undefined } }), "MISSING_FIELD", "SPEI_Tercero@FechaOperacion");
    rejects(cepXml({ root: { sello: "" } }), "MISSING_FIELD", "SPEI_Tercero@sello");
    rejects(cepXml({ ben: { Cuenta: undefined } }), "MISSING_FIELD", "SPEI_Tercero/Beneficiario@Cuenta");
    rejects(cepXml({ ben: { MontoPago: undefined } }), "MISSING_FIELD", "SPEI_Tercero/Beneficiario@MontoPago");
    rejects(cepXml({ ord: { Cuenta: undefined } }), "MISSING_FIELD", "SPEI_Tercero/Ordenante@Cuenta");
    rejects(cepXml().replace(/<Ordenante[^>]*\/>/, ""), "MISSING_FIELD", "Ordenante");
  });

  test("invalid values throw INVALID_FIELD", () => {
    rejects(cepXml({ ben: { MontoPago: "12.345" } }), "INVALID_FIELD");
    rejects(cepXml({ ben: { MontoPago: "-5.00" } }), "INVALID_FIELD");
    rejects(cepXml({ ben: { MontoPago: "1e3" } }), "INVALID_FIELD");
    rejects(cepXml({ root: { FechaOperacion: "2024-02-30" } }), "INVALID_FIELD");
    rejects(cepXml({ root: { Hora: "25:00:00" } }), "INVALID_FIELD");
    rejects(cepXml().replace(/(<Beneficiario[^>]*\/>)/, "$1$1"), "INVALID_FIELD", "Beneficiario");
  });
});

describe("mexicoCityToUtc", () => {
  test("uses the historical offsets (DST until 2022, UTC-6 after)", () => {
    assert.equal(mexicoCityToUtc("2019-04-12", "13:31:44").toISOString(), "2019-04-12T18:31:44.000Z");
    assert.equal(mexicoCityToUtc("2019-01-15", "08:00:00").toISOString(), "2019-01-15T14:00:00.000Z");
    assert.equal(mexicoCityToUtc("2025-07-01", "00:00:00").toISOString(), "2025-07-01T06:00:00.000Z");
  });
});

describe("verifyCepReceipt", () => {
  const receipt: CepReceipt = parseCepXml(cepXml()); // paid 2024-11-08T16:53:36Z, 3414.95 MXN
  const paidAt = Date.parse("2024-11-08T16:53:36.000Z");
  const base: CepExpectation = {
    sellerClabe: SELLER_CLABE,
    totalMxn: "3414.95",
    trackingKey: "BiB202411081016248360",
    lockedAt: new Date(paidAt - 3600_000),
    lockExpiresAt: new Date(paidAt + 3600_000),
  };
  const verify = (patch: Partial<CepExpectation>, r: CepReceipt = receipt) => verifyCepReceipt(r, { ...base, ...patch });
  const reasonOf = (v: ReturnType<typeof verifyCepReceipt>) => (v.ok ? "OK" : v.reason);

  test("a matching receipt passes", () => {
    assert.deepEqual(verify({}), { ok: true });
  });

  test("BENEFICIARY_MISMATCH when the money went to another account", () => {
    const v = verify({ sellerClabe: "002010077777777771" });
    assert.equal(reasonOf(v), "BENEFICIARY_MISMATCH");
    assert.ok(!v.ok && v.message.includes("002010077777777771"));
  });

  test("amount boundary: equal passes, one cent less fails, more passes", () => {
    assert.equal(reasonOf(verify({ totalMxn: "3414.95" })), "OK");
    assert.equal(reasonOf(verify({ totalMxn: "3414.96" })), "AMOUNT_TOO_LOW"); // paid one cent less than owed
    assert.equal(reasonOf(verify({ totalMxn: "3414.94" })), "OK"); // paid more
    assert.equal(reasonOf(verify({ totalMxn: "3414.950" })), "OK");
    assert.equal(reasonOf(verify({ totalMxn: "1000" })), "OK");
  });

  test("amounts are compared exactly, not as binary floats", () => {
    const r = parseCepXml(cepXml({ ben: { MontoPago: "0.30" } }));
    // 0.1 + 0.2 !== 0.3 in floating point; exact decimals must say equal.
    assert.equal(reasonOf(verify({ totalMxn: "0.3" }, r)), "OK");
    assert.equal(reasonOf(verify({ totalMxn: "0.31" }, r)), "AMOUNT_TOO_LOW");
  });

  test("date window edges are inclusive", () => {
    assert.equal(reasonOf(verify({ lockedAt: new Date(paidAt) })), "OK");
    assert.equal(reasonOf(verify({ lockedAt: new Date(paidAt + 999) })), "OK"); // same second as the lock
    assert.equal(reasonOf(verify({ lockedAt: new Date(paidAt + 1000) })), "DATE_OUTSIDE_LOCK_WINDOW");
    assert.equal(reasonOf(verify({ lockExpiresAt: new Date(paidAt) })), "OK");
    assert.equal(reasonOf(verify({ lockExpiresAt: new Date(paidAt - 1) })), "DATE_OUTSIDE_LOCK_WINDOW");
    assert.equal(reasonOf(verify({ lockedAt: new Date(paidAt + 86_400_000), lockExpiresAt: new Date(paidAt + 2 * 86_400_000) })), "DATE_OUTSIDE_LOCK_WINDOW");
  });

  test("unknown time passes only when the whole Mexico City day is inside the window", () => {
    const noTime = parseCepXml(cepXml({ root: { Hora: undefined, cadenaCDA: "||1|08112024|08112024||90723|x" } }));
    const dayStart = Date.parse("2024-11-08T06:00:00.000Z");
    const dayEnd = Date.parse("2024-11-09T06:00:00.000Z");
    assert.equal(reasonOf(verify({ lockedAt: new Date(dayStart), lockExpiresAt: new Date(dayEnd) }, noTime)), "OK");
    assert.equal(reasonOf(verify({ lockedAt: new Date(dayStart + 1000), lockExpiresAt: new Date(dayEnd) }, noTime)), "DATE_OUTSIDE_LOCK_WINDOW");
    assert.equal(reasonOf(verify({ lockedAt: new Date(dayStart - 3600_000), lockExpiresAt: new Date(dayEnd - 2000) }, noTime)), "DATE_OUTSIDE_LOCK_WINDOW");
    const v = verify({}, noTime); // window of two hours inside that day
    assert.ok(!v.ok && v.reason === "DATE_OUTSIDE_LOCK_WINDOW" && v.message.includes("no time"));
  });

  test("TRACKING_KEY_MISMATCH when the reported key differs; case and spaces ignored", () => {
    assert.equal(reasonOf(verify({ trackingKey: "BIB202411081016248360 " })), "OK");
    assert.equal(reasonOf(verify({ trackingKey: "BiB202411081016248361" })), "TRACKING_KEY_MISMATCH");
  });

  test("checks run in the documented order", () => {
    const v = verify({ sellerClabe: "002010077777777771", totalMxn: "99999", trackingKey: "OTHER" });
    assert.equal(reasonOf(v), "BENEFICIARY_MISMATCH");
    assert.equal(reasonOf(verify({ totalMxn: "99999", trackingKey: "OTHER" })), "AMOUNT_TOO_LOW");
  });
});

describe("verifyCepConcept (decisions 17: the CEP's concept must contain the order's payment concept)", () => {
  const order = "OFR1234567";

  test("the concept omitted: CONCEPT_MISMATCH", () => {
    const result = verifyCepConcept({ concept: "" }, order);
    assert.equal(result.ok, false);
    assert.equal(!result.ok && result.reason, "CONCEPT_MISMATCH");
    const other = verifyCepConcept({ concept: "Pago de USDC" }, order);
    assert.equal(!other.ok && other.reason, "CONCEPT_MISMATCH");
  });

  test("another order's concept, or one digit changed: CONCEPT_MISMATCH", () => {
    for (const concept of ["OFR7654321", "Pago OFR1234568", "OFR123456"]) {
      const result = verifyCepConcept({ concept }, order);
      assert.equal(!result.ok && result.reason, "CONCEPT_MISMATCH", concept);
      assert.ok(!result.ok && result.message.includes(order));
    }
  });

  test("the concept as written, within other words, in any letter case and spacing: accepted", () => {
    for (const concept of ["OFR1234567", "Pago OFR1234567 gracias", "pago ofr 123 4567", "OFR1234567\t"]) {
      assert.deepEqual(verifyCepConcept({ concept }, order), { ok: true }, concept);
    }
  });
});
