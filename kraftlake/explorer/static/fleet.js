// The fleet page: every cluster's health as small multiples on one time axis, drawn as SVG from /api/v1/fleet
// (each row's series are that cluster's own timeline series). Hand-written, no dependency, served by the app.
// A click on a row opens that cluster's timeline at the same moment, as a time: offsets are per cluster.

const SVG = "http://www.w3.org/2000/svg";
const LABEL = 128, RIGHT = 12, LANE = 16, LANE_GAP = 3, AXIS = 22;
const LANES = [
  ["offline", "offline", "#b42318"],
  ["under_min_isr", "under min ISR", "#7a5af8"],
  ["fenced_brokers", "fenced brokers", "#d62728"],
  ["controller", "controller changes", "#475467"],
];

function el(name, attrs = {}, parent = null) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (parent) parent.appendChild(node);
  return node;
}

function isoTime(ms) { return new Date(ms).toISOString(); }

function tickStep(span, count) {
  const steps = [1e3, 5e3, 15e3, 6e4, 3e5, 9e5, 36e5, 6 * 36e5, 864e5, 7 * 864e5, 30 * 864e5, 365 * 864e5];
  return steps.find((s) => span / s <= count) || steps[steps.length - 1];
}

function tickLabel(ms, step) {
  const iso = new Date(ms).toISOString();
  if (step >= 864e5) return iso.slice(0, 10);
  if (step >= 6e4) return iso.slice(5, 16).replace("T", " ");
  return iso.slice(11, 19);
}

// The value a step series holds at `time` (0 before its first point: no partition, no broker had the flag).
function valueAt(points, time) {
  let value = 0;
  for (const p of points) { if (p.time <= time) value = p.value; else break; }
  return value;
}

class Fleet {
  constructor(root) {
    this.root = root;
    this.readout = document.querySelector("[data-testid=fleet-readout]");
  }

  async load() {
    const response = await fetch(this.root.dataset.api, { credentials: "same-origin" });
    const body = await response.json();
    if (!response.ok) { this.readout.textContent = body.detail || response.statusText; return; }
    this.data = body;
    this.draw();
  }

  draw() {
    if (this.data.from_time === null) return;
    this.domain = [this.data.from_time, Math.max(this.data.to_time, this.data.from_time + 1000)];
    this.drawAxis(this.root.querySelector("[data-testid=fleet-axis]"));
    for (const row of this.data.clusters) {
      const box = this.root.querySelector(`[data-testid=fleet-row][data-cluster="${CSS.escape(row.name)}"] [data-testid=fleet-chart]`);
      if (box && row.status === "ok") this.drawRow(box, row);
    }
  }

  width(box) {
    this.plotWidth = Math.max(box.clientWidth, 360) - LABEL - RIGHT;
    return this.plotWidth + LABEL + RIGHT;
  }

  x(time) { return LABEL + ((time - this.domain[0]) / (this.domain[1] - this.domain[0])) * this.plotWidth; }
  time(x) { return this.domain[0] + ((x - LABEL) / this.plotWidth) * (this.domain[1] - this.domain[0]); }

  drawAxis(box) {
    const width = this.width(box);
    const svg = el("svg", { viewBox: `0 0 ${width} ${AXIS}`, height: AXIS, class: "axis" });
    const step = tickStep(this.domain[1] - this.domain[0], Math.max(2, this.plotWidth / 110));
    for (let t = Math.ceil(this.domain[0] / step) * step; t <= this.domain[1]; t += step) {
      el("line", { x1: this.x(t), x2: this.x(t), y1: AXIS - 5, y2: AXIS }, svg);
      el("text", { x: this.x(t) + 3, y: AXIS - 8 }, svg).textContent = tickLabel(t, step);
    }
    box.replaceChildren(svg);
  }

  drawRow(box, row) {
    const width = this.width(box);
    const height = LANES.length * (LANE + LANE_GAP);
    const svg = el("svg", { viewBox: `0 0 ${width} ${height}`, height, role: "img", "data-testid": "fleet-svg",
      "aria-label": `${row.name}: its health over time; click to open its timeline at that moment` });
    const defs = el("defs", {}, svg);
    const pattern = el("pattern", { id: `gap-${row.name}`, width: 6, height: 6, patternUnits: "userSpaceOnUse",
      patternTransform: "rotate(45)" }, defs);
    el("rect", { width: 2, height: 6, fill: "#98a2b3" }, pattern);
    const start = Math.max(this.x(row.first_time), LABEL), end = Math.min(this.x(row.last_time), LABEL + this.plotWidth);
    LANES.forEach(([name, title, color], i) => {
      const top = i * (LANE + LANE_GAP);
      el("rect", { x: start, y: top, width: Math.max(end - start, 1), height: LANE, class: "lane" }, svg);
      if (name === "controller") this.changes(svg, row, top, title, color);
      else this.steps(svg, row, name, top, title, color);
    });
    for (const { first, last } of row.gap_times) {
      el("rect", { x: this.x(first), y: 0, width: Math.max(this.x(last) - this.x(first), 3), height,
        fill: `url(#gap-${row.name})`, "data-testid": "fleet-gap" }, svg);
    }
    const guide = el("line", { y1: 0, y2: height, class: "guide", display: "none" }, svg);
    svg.addEventListener("pointermove", (event) => this.hover(svg, guide, row, event));
    svg.addEventListener("pointerleave", () => guide.setAttribute("display", "none"));
    svg.addEventListener("click", (event) => this.open(row, this.timeAt(svg, row, event)));
    box.replaceChildren(svg);
  }

  // A count as a step area scaled to its own maximum in the window (printed beside its name).
  steps(svg, row, name, top, title, color) {
    const points = row.series[name] || [];
    const max = Math.max(1, ...points.map((p) => p.value));
    const yOf = (value) => top + LANE - (value / max) * (LANE - 2);
    el("text", { x: 4, y: top + LANE - 4, class: "lane-label" }, svg).textContent =
      `${title} · max ${Math.max(0, ...points.map((p) => p.value))}`;
    let d = `M${Math.max(this.x(row.first_time), LABEL)},${yOf(0)}`;
    for (const p of points) d += `H${Math.max(this.x(p.time), LABEL)}V${yOf(p.value)}`;
    d += `H${Math.min(this.x(row.last_time), LABEL + this.plotWidth)}V${yOf(0)}Z`;
    const path = el("path", { d, fill: color, "fill-opacity": 0.35, stroke: color, "stroke-width": 1.2,
      "data-testid": "fleet-series", "data-series": name, "data-points": points.length }, svg);
    el("title", {}, path).textContent = `${row.name}: ${title}`;
  }

  // A new Raft leader epoch is a controller change: a tick where it began.
  changes(svg, row, top, title, color) {
    const inside = row.epochs.slice(1).filter((e) => e.from_time >= this.domain[0] && e.from_time <= this.domain[1]);
    el("text", { x: 4, y: top + LANE - 4, class: "lane-label" }, svg).textContent = `${title} · ${inside.length}`;
    const group = el("g", { "data-testid": "fleet-series", "data-series": "controller", "data-points": inside.length }, svg);
    for (const epoch of inside) {
      const tick = el("rect", { x: this.x(epoch.from_time) - 1, y: top + 1, width: 2.5, height: LANE - 2, fill: color }, group);
      el("title", {}, tick).textContent = `epoch ${epoch.epoch} from offset ${epoch.from_offset}`;
    }
  }

  // The time under the pointer, kept inside the cluster's own history.
  timeAt(svg, row, event) {
    const box = svg.getBoundingClientRect();
    const x = ((event.clientX - box.left) / box.width) * svg.viewBox.baseVal.width;
    return Math.round(Math.min(Math.max(this.time(x), row.first_time), row.last_time));
  }

  hover(svg, guide, row, event) {
    const time = this.timeAt(svg, row, event);
    guide.setAttribute("x1", this.x(time));
    guide.setAttribute("x2", this.x(time));
    guide.setAttribute("display", "");
    const values = LANES.slice(0, 3).map(([name, title]) => `${title} ${valueAt(row.series[name] || [], time)}`);
    this.readout.textContent = `${row.name} at ${isoTime(time)}: ${values.join(", ")}`;
  }

  open(row, time) {
    const target = new URL(`/clusters/${encodeURIComponent(row.name)}`, location.href);
    target.searchParams.set("at", isoTime(time));
    location.assign(target.pathname + target.search);
  }
}

for (const root of document.querySelectorAll("#fleet")) {
  const fleet = new Fleet(root);
  fleet.load();
  window.addEventListener("resize", () => fleet.data && fleet.draw());
  window.kraftlakeFleet = fleet;
}
