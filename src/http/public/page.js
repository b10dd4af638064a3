/* global document, window */
// What every browser page (the operator console, the partner dashboard, the market) builds its view
// with, served beside each page's own assets as assets/page.js. Text is always set as text, never HTML.

/** An API answer that was not 2xx: the spec's error shape when the body has one. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? `${body.error}: ${body.message}` : `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

/**
 * Builds an element: h("td", { class: "num" }, "12"). Strings become text nodes, never HTML; `on…`
 * attributes are listeners, `dataset` an object of data-* values; null, undefined and false are left out.
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "dataset") Object.assign(element.dataset, value);
    else if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, "");
    else element.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof window.Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

/** A status as a tag the stylesheet colours. */
export const statusTag = (status) => h("span", { class: `status ${status}` }, status);

/** An ISO instant in the reader's locale, or a dash. */
export const when = (iso) => (iso ? new Date(iso).toLocaleString() : "—");

/** Shows a message in the page's #notice. */
export function notify(message, kind = "info") {
  const notice = document.getElementById("notice");
  notice.textContent = message;
  notice.className = kind === "error" ? "notice error" : "notice";
  notice.hidden = false;
}

export function clearNotice() {
  document.getElementById("notice").hidden = true;
}

/** Runs an action from a control: shows its error instead of failing silently (a 401 signs out instead). */
export async function act(work) {
  clearNotice();
  try {
    await work();
  } catch (error) {
    if (error.status !== 401) notify(error.message, "error");
  }
}
