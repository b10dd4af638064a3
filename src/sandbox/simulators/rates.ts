import type Router from "@koa/router";
import { FIX_SERIES } from "../../integrations/banxico-sie.ts";
import { createRouter } from "../../http/router.ts";
import { mexicoDay } from "../../domain/periods.ts";

// Simulators of the two rate sources, speaking their real HTTP protocols so the production clients run
// unchanged in sandbox. `setMode` lets tests make a source fail in the ways the real one can.

export type RateSimulatorMode = "normal" | "no_determination" | "down";

export interface RateSimulator {
  router: Router;
  setRate(rate: string): void;
  setMode(mode: RateSimulatorMode): void;
  requests(): number;
}

function mexicoDate(date: Date): { dayFirst: string; iso: string } {
  const [y, m, d] = mexicoDay(date).split("-");
  return { dayFirst: `${d}/${m}/${y}`, iso: `${y}-${m}-${d}` };
}

/** Banxico SIE: `GET /series/SF43718/datos/oportuno` with `Bmx-Token`. */
export function createBanxicoSieSimulator(options: { token: string; rate: string }): RateSimulator {
  let rate = options.rate;
  let mode: RateSimulatorMode = "normal";
  let count = 0;
  const router = createRouter<unknown>();
  router.get("/series/:series/datos/oportuno", (ctx) => {
    count += 1;
    if (mode === "down") {
      ctx.status = 503;
      ctx.body = "Service Unavailable";
      return;
    }
    if (ctx.get("Bmx-Token") !== options.token) {
      ctx.status = 401;
      ctx.body = { error: { mensaje: "Token inválido", detalle: "El token proporcionado no es válido" } };
      return;
    }
    const series = ctx.params.series ?? "";
    if (series !== FIX_SERIES) {
      ctx.status = 404;
      ctx.body = { error: { mensaje: "Serie no encontrada", detalle: `La serie ${series} no existe` } };
      return;
    }
    ctx.body = {
      bmx: {
        series: [
          {
            idSerie: FIX_SERIES,
            titulo: "Tipo de cambio Pesos por dólar E.U.A. Tipo de cambio para solventar obligaciones denominadas en moneda extranjera Fecha de determinación (FIX)",
            datos: [{ fecha: mexicoDate(new Date()).dayFirst, dato: mode === "no_determination" ? "N/E" : rate }],
          },
        ],
      },
    };
  });
  return { router, setRate: (value) => (rate = value), setMode: (value) => (mode = value), requests: () => count };
}

/** Frankfurter: `GET /latest?base=USD&symbols=MXN`. */
export function createFrankfurterSimulator(options: { rate: string }): RateSimulator {
  let rate = options.rate;
  let mode: RateSimulatorMode = "normal";
  let count = 0;
  const router = createRouter<unknown>();
  router.get("/latest", (ctx) => {
    count += 1;
    if (mode !== "normal") {
      ctx.status = 500;
      ctx.body = { message: "internal error" };
      return;
    }
    const base = String(ctx.query.base ?? "EUR");
    const symbols = String(ctx.query.symbols ?? "MXN");
    if (base !== "USD" || !symbols.split(",").includes("MXN")) {
      ctx.status = 404;
      ctx.body = { message: "not found" };
      return;
    }
    ctx.body = { amount: 1.0, base: "USD", date: mexicoDate(new Date()).iso, rates: { MXN: Number(rate) } };
  });
  return { router, setRate: (value) => (rate = value), setMode: (value) => (mode = value), requests: () => count };
}
