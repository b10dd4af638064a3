/* global mermaid */
// The order state chart, drawn by mermaid from the machine definition the service serves
// (GET /admin/v1/machine): one node per state, one edge per transition, labelled with the machine's
// event and guard names. Nothing about the chart is written here by hand: add a state or a transition
// to the machine and it appears.

let initialized = false;
let renderCount = 0;

function setup() {
  if (initialized) return;
  mermaid.initialize({
    startOnLoad: false,
    securityLevel: "strict",
    theme: "base",
    themeVariables: { primaryColor: "#f0f4f8", primaryBorderColor: "#829ab1", lineColor: "#9fb3c8", fontSize: "15px" },
    flowchart: { curve: "basis", nodeSpacing: 28, rankSpacing: 60, padding: 12, htmlLabels: true, useMaxWidth: true },
  });
  initialized = true;
}

/** The edge label: the event, and the guard when the machine names one. */
function edgeLabel(transition) {
  return transition.guard ? `${transition.event}<br/><i>${transition.guard}</i>` : transition.event;
}

/** Indexes (in declaration order, the start arrow being 0) of the edges an order's path took. */
export function pathEdges(machine, path) {
  const indexes = new Set();
  if (path.length > 0) indexes.add(0);
  for (let step = 1; step < path.length; step += 1) {
    const from = path[step - 1].state;
    const { state: to, event } = path[step];
    const index = machine.transitions.findIndex((t) => t.from === from && t.to === to && t.event === event);
    if (index >= 0) indexes.add(index + 1);
  }
  return indexes;
}

/**
 * The mermaid flowchart text for the machine. `counts` (state -> number) adds the live number of orders
 * to each state; `path` (the order's steps) highlights the states it went through and the edges it took.
 */
export function chartSource(machine, options = {}) {
  const { counts, path } = options;
  const visited = new Set((path ?? []).map((step) => step.state));
  const current = path && path.length > 0 ? path[path.length - 1].state : undefined;
  const lines = ["flowchart TB", "  start@{ shape: sm-circ }"];
  for (const state of machine.states) {
    const count = counts ? `<br/><b>${counts[state.name] ?? 0}</b>` : "";
    const label = `"${state.name}${count}"`;
    lines.push(state.final ? `  ${state.name}([${label}])` : `  ${state.name}(${label})`);
  }
  lines.push(`  start --> ${machine.initial}`);
  for (const transition of machine.transitions) lines.push(`  ${transition.from} -->|"${edgeLabel(transition)}"| ${transition.to}`);

  lines.push("  classDef final stroke-width:3px,stroke:#486581");
  lines.push("  classDef busy fill:#fff7e0,stroke:#d97706");
  lines.push("  classDef visited fill:#dbe6fd,stroke:#1d4ed8,stroke-width:2px");
  lines.push("  classDef current fill:#1d4ed8,stroke:#1e3a8a,stroke-width:3px,color:#ffffff");
  const finals = machine.states.filter((state) => state.final).map((state) => state.name);
  if (finals.length) lines.push(`  class ${finals.join(",")} final`);
  if (counts) {
    const busy = machine.states.filter((state) => (counts[state.name] ?? 0) > 0).map((state) => state.name);
    if (busy.length) lines.push(`  class ${busy.join(",")} busy`);
  }
  const before = [...visited].filter((state) => state !== current);
  if (before.length) lines.push(`  class ${before.join(",")} visited`);
  if (current) lines.push(`  class ${current} current`);
  if (path) {
    for (const index of pathEdges(machine, path)) lines.push(`  linkStyle ${index} stroke:#1d4ed8,stroke-width:3.5px`);
  }
  return lines.join("\n");
}

/** The state a rendered mermaid node stands for (its data-id, or the id mermaid gives it). */
function stateOfNode(node, names) {
  const dataId = node.getAttribute("data-id");
  if (dataId && names.has(dataId)) return dataId;
  const match = /flowchart-(.+)-\d+$/.exec(node.id);
  return match && names.has(match[1]) ? match[1] : undefined;
}

/**
 * Draws the chart into `container`. Each state node gets `data-state` (and `data-count` with counts)
 * so it can be found and clicked, `onStateClick(state)` is called on a click, and each edge gets
 * `data-edge` ("FROM>TO:EVENT", the start arrow "start>STATE") and, when the order's path took it,
 * `data-taken`.
 */
export async function renderChart(container, machine, options = {}) {
  setup();
  renderCount += 1;
  const { svg } = await mermaid.render(`order-chart-${renderCount}`, chartSource(machine, options));
  container.innerHTML = svg;
  const names = new Set(machine.states.map((state) => state.name));
  for (const node of container.querySelectorAll("g.node")) {
    const state = stateOfNode(node, names);
    if (!state) continue;
    node.setAttribute("data-state", state);
    if (options.counts) node.setAttribute("data-count", String(options.counts[state] ?? 0));
    if (options.onStateClick) node.addEventListener("click", () => options.onStateClick(state));
  }
  // mermaid draws the edges in the order they are declared: the start arrow, then the transitions.
  const links = container.querySelectorAll("path.flowchart-link");
  if (links.length === machine.transitions.length + 1) {
    const taken = options.path ? pathEdges(machine, options.path) : new Set();
    links.forEach((link, index) => {
      const transition = machine.transitions[index - 1];
      link.setAttribute("data-edge", transition ? `${transition.from}>${transition.to}:${transition.event}` : `start>${machine.initial}`);
      if (taken.has(index)) link.setAttribute("data-taken", "");
    });
  }
}
