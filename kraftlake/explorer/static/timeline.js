// The timeline: the cluster's history on one time axis, drawn as SVG from /api/v1/clusters/{c}/timeline.
// Hand-written, no build step and no dependency, served by the app itself (air-gapped networks).
// State lives in the URL: `at` (the cursor, an offset), `from`/`to` (the zoom window, ISO times).

const SVG = "http://www.w3.org/2000/svg";
const LEFT = 96, RIGHT = 16, AXIS = 38, LANE = 14, LANE_GAP = 4, PANEL = 84, EPOCHS = 18, EVENTS = 26;
const BREAK = 44, LABEL_ROOM = 120;  // a quiet stretch's width on the axis; the room a tick's label needs
const STATE_COLORS = { registered: "#2ca02c", fenced: "#d62728", controlled_shutdown: "#ff7f0e", unregistered: "#d0d5dd" };
const SERIES_COLORS = { under_replicated: "#f79009", under_min_isr: "#7a5af8", offline: "#b42318" };
const EVENT_COLORS = { topics: "#2456c9", configs: "#0e9384", client_quotas: "#c11574", acls: "#b54708",
  scram_credentials: "#6941c6", delegation_tokens: "#6941c6", features: "#101828", controllers: "#475467",
  voters: "#475467", kraft_version: "#101828" };
const LEADER_COLORS = ["#2456c9", "#0e9384", "#c11574", "#b54708", "#6941c6", "#475467", "#f79009", "#2ca02c"];

// An event as the API has it raw: the row's key and each changed value, old → new (the text's words on hover)
function rawText(event) {
  const columns = [...new Set([...Object.keys(event.before), ...Object.keys(event.after)])];
  const change = (c) => `${c} ${event.before[c] ?? "–"} → ${event.after[c] ?? "–"}`;
  return [`${event.table} ${event.change} ${event.key}`, ...columns.map(change)].join("; ");
}

function el(name, attrs = {}, parent = null) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (parent) parent.appendChild(node);
  return node;
}

function isoTime(ms) { return new Date(ms).toISOString().replace(".000Z", "Z"); }

function niceTicks(from, to, count) {
  const steps = [1e3, 5e3, 15e3, 6e4, 3e5, 9e5, 36e5, 6 * 36e5, 864e5, 7 * 864e5, 30 * 864e5, 365 * 864e5];
  const step = steps.find((s) => (to - from) / s <= count) || steps[steps.length - 1];
  const ticks = [];
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) ticks.push(t);
  return { ticks, step };
}

// A tick's label in UTC (the axis says so): the date on the first tick and where the day changes, then the time
function tickLabel(ms, step, previous) {
  const iso = new Date(ms).toISOString();
  if (step >= 864e5) return iso.slice(0, 10);
  const time = step >= 6e4 ? iso.slice(11, 16) : iso.slice(11, 19);
  const newDay = previous === null || new Date(previous).toISOString().slice(0, 10) !== iso.slice(0, 10);
  return newDay ? `${iso.slice(0, 10)} ${time}` : time;
}

function plural(count, noun) { return `${count} ${noun}${count === 1 ? "" : "s"}`; }

// A legend entry (a swatch or a line, and its name) in one of the page's legend boxes
function legendEntry(box, color, name, kind) {
  const swatch = document.createElement("span");
  swatch.className = kind;
  swatch.style.background = color;
  box.append(swatch, document.createTextNode(name));
}

class Timeline {
  constructor(root) {
    this.root = root;
    this.api = root.dataset.api;
    this.offsetApi = root.dataset.offsetApi;
    this.focusTable = root.dataset.focusTable;
    this.focusKey = root.dataset.focusKey;
    this.historyBase = root.dataset.historyBase;
    const params = new URLSearchParams(location.search);
    this.at = root.dataset.at === "" ? null : Number(root.dataset.at);
    this.window = [params.get("from") || root.dataset.from || "", params.get("to") || root.dataset.to || ""];
    this.readout = document.querySelector("[data-testid=cursor-readout]");
    this.data = null;
    this.cursorTime = null;
    this.refetch = null;
    this.keyed = null;
    this.summaries = 0;  // cards asked for: only the latest one is drawn
  }

  async load() {
    const query = new URLSearchParams();
    if (this.window[0]) query.set("from", this.window[0]);
    if (this.window[1]) query.set("to", this.window[1]);
    if (this.focusTable && this.focusKey) { query.set("focus_table", this.focusTable); query.set("focus_key", this.focusKey); }
    const response = await fetch(`${this.api}?${query}`, { credentials: "same-origin" });
    const body = await response.json();
    if (!response.ok) { this.root.textContent = body.detail || response.statusText; return; }
    this.data = body;
    this.domain = [body.from_time, Math.max(body.to_time, body.from_time + 1000)];
    const first = this.cursorTime === null;
    if (this.at !== null && first) this.cursorTime = await this.timeOf(this.at);
    this.draw();
    if (first) this.summarize();
  }

  // Every broker's leaders line and every kind of event shown, named under the chart (as many as there are)
  legends(leaders) {
    const leadersBox = document.querySelector("[data-testid=leaders-legend]");
    if (leadersBox) {
      leadersBox.replaceChildren(document.createTextNode("leaders:"));
      for (const [name, , color] of leaders) legendEntry(leadersBox, color, name, "line");
    }
    const eventsBox = document.querySelector("[data-testid=events-legend]");
    if (eventsBox) {
      eventsBox.replaceChildren(document.createTextNode("events:"));
      const kinds = [...new Set(this.data.events.map((event) => event.table))].sort();
      for (const kind of kinds) legendEntry(eventsBox, EVENT_COLORS[kind] || "#667085", kind.replace("_", " "), "swatch");
    }
  }

  async timeOf(offset) {
    const response = await fetch(`${this.offsetApi}?at=${offset}`, { credentials: "same-origin" });
    if (!response.ok) return null;
    const body = await response.json();
    return body.time ? Date.parse(body.time) : null;
  }

  // Time → x, piecewise: each quiet stretch in view (the API's `quiet`: nothing changes there) takes BREAK px,
  // the rest of the plot is shared by the time in which something happens, so a day of NoOps squeezes nothing
  scale() {
    const [from, to] = this.domain;
    this.breaks = this.data.quiet.filter((q) => q.from_time >= from && q.to_time <= to);
    const quietMs = this.breaks.reduce((sum, q) => sum + q.to_time - q.from_time, 0);
    const perMs = (this.plotWidth - this.breaks.length * BREAK) / Math.max(to - from - quietMs, 1);
    this.knots = [[from, LEFT]];
    let x = LEFT, t = from;
    for (const q of this.breaks) {
      x += (q.from_time - t) * perMs;
      this.knots.push([q.from_time, x], [q.to_time, x + BREAK]);
      x += BREAK; t = q.to_time;
    }
    this.knots.push([to, LEFT + this.plotWidth]);
    this.perMs = perMs;
  }

  // between the knots (time, x) around `value` in column `from`, the other column; beyond them the active slope
  interpolate(value, from) {
    const k = this.knots, to = 1 - from, last = k.length - 1;
    const slope = from === 0 ? this.perMs : 1 / this.perMs;
    if (value <= k[0][from]) return k[0][to] - (k[0][from] - value) * slope;
    if (value >= k[last][from]) return k[last][to] + (value - k[last][from]) * slope;
    let i = 1;
    while (k[i][from] < value) i++;
    const [a, b] = [k[i - 1], k[i]];
    return b[from] === a[from] ? a[to] : a[to] + ((value - a[from]) / (b[from] - a[from])) * (b[to] - a[to]);
  }

  x(time) { return this.interpolate(time, 0); }
  time(x) { return this.interpolate(x, 1); }

  // Ticks in the stretches where something happens, a step that suits their time; labels where there is room
  ticks(axis, height) {
    const active = [];
    for (let i = 0; i < this.knots.length - 1; i += 2) active.push([this.knots[i][0], this.knots[i + 1][0]]);
    const activeMs = active.reduce((sum, [a, b]) => sum + b - a, 0);
    const { step } = niceTicks(0, Math.max(activeMs, 1000), Math.max(2, this.plotWidth / 130));
    const breaks = this.breaks.map((q) => this.x(q.from_time));
    let labelled = -Infinity, previous = null;
    for (const [a, b] of active) {
      for (let t = Math.ceil(a / step) * step; t <= b; t += step) {
        const x = this.x(t);
        el("line", { x1: x, x2: x, y1: AXIS - 4, y2: height }, axis);
        if (x - labelled < LABEL_ROOM || x + LABEL_ROOM / 2 > LEFT + this.plotWidth ||
            breaks.some((edge) => edge > x - 4 && edge < x + LABEL_ROOM)) continue;
        el("text", { x: x + 3, y: AXIS - 8 }, axis).textContent = tickLabel(t, step, previous);
        labelled = x; previous = t;
      }
    }
  }

  draw() {
    const data = this.data;
    const width = Math.max(this.root.clientWidth, 480);
    this.plotWidth = width - LEFT - RIGHT;
    const brokers = Object.keys(data.brokers).sort((a, b) => Number(a) - Number(b));
    const height = AXIS + brokers.length * (LANE + LANE_GAP) + 2 * (PANEL + 10) + EPOCHS + EVENTS + 16;
    const svg = el("svg", { viewBox: `0 0 ${width} ${height}`, height, role: "img", tabindex: 0,
      "aria-label": "the cluster's history on a time axis; the arrow keys move the cursor" });
    const defs = el("defs", {}, svg);
    const pattern = el("pattern", { id: "gap", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, defs);
    el("rect", { width: 2, height: 6, fill: "#98a2b3" }, pattern);
    el("clipPath", { id: "plot-clip" }, defs).appendChild(el("rect", { x: LEFT, y: 0, width: this.plotWidth, height }));
    const plot = el("g", { class: "plot", "clip-path": "url(#plot-clip)" }, svg);
    el("rect", { x: LEFT, y: 0, width: this.plotWidth, height, fill: "transparent", "data-testid": "timeline-plot" }, plot);

    // axis, broken at each quiet stretch
    this.scale();
    const axis = el("g", { class: "axis" }, svg);
    el("text", { x: 8, y: AXIS - 8 }, axis).textContent = "UTC";
    this.ticks(axis, height);
    for (const q of this.breaks) {
      const x = this.x(q.from_time);
      const mark = el("g", { "data-testid": "quiet" }, plot);
      el("rect", { x: x + 6, y: AXIS - 4, width: BREAK - 12, height: height - AXIS + 4, class: "quiet" }, mark);
      el("text", { x: x + BREAK / 2, y: AXIS - 8, "text-anchor": "middle", class: "lane-label" }, mark).textContent = q.length;
      el("title", {}, mark).textContent = `quiet for ${q.length}: nothing changed (no event, NoOps only)`;
    }
    let y = AXIS;

    // brokers' swimlanes
    for (const broker of brokers) {
      const label = el("a", { href: `${this.historyBase}brokers?key=${broker}` }, svg);
      el("text", { x: 8, y: y + LANE - 3, class: "lane-label" }, label).textContent = `broker ${broker}`;
      for (const span of data.brokers[broker]) {
        const start = Math.max(this.x(span.from_time), LEFT - 1);
        const end = this.x(span.to_time === null ? data.last_time : span.to_time);
        if (end < LEFT || start > LEFT + this.plotWidth) continue;
        const rect = el("rect", { x: start, y, width: Math.max(end - start, 1.5), height: LANE,
          fill: STATE_COLORS[span.state] || "#999", "data-state": span.state }, plot);
        el("title", {}, rect).textContent = `broker ${broker} ${span.state} from offset ${span.from_offset}` +
          (span.to_offset === null ? "" : ` to ${span.to_offset}`);
      }
      y += LANE + LANE_GAP;
    }

    // partition counts, then leaders per broker
    y += 6;
    this.panel(svg, plot, y, "partitions", Object.entries(data.series).map(([name, points]) => [name, points, SERIES_COLORS[name]]));
    y += PANEL + 10;
    const leaders = Object.entries(data.leaders).map(([broker, points], i) =>
      [`broker ${broker}`, points, LEADER_COLORS[i % LEADER_COLORS.length]]);
    this.panel(svg, plot, y, "leaders", leaders);
    this.legends(leaders);
    y += PANEL + 10;

    // Raft epochs
    el("text", { x: 8, y: y + 13, class: "lane-label" }, svg).textContent = "raft epoch";
    data.epochs.forEach((epoch, i) => {
      const start = this.x(epoch.from_time), end = this.x(epoch.to_time);
      const band = el("rect", { x: start, y, width: Math.max(end - start, 1.5), height: EPOCHS - 2,
        fill: i % 2 ? "#e0eaff" : "#f2f4f7" }, plot);
      el("title", {}, band).textContent = `epoch ${epoch.epoch}: offsets ${epoch.from_offset}–${epoch.to_offset}`;
      if (end - start > 28) el("text", { x: start + 3, y: y + 12, class: "lane-label" }, plot).textContent = epoch.epoch;
    });
    y += EPOCHS + 4;

    // events, and the focused row's versions above them
    el("text", { x: 8, y: y + 14, class: "lane-label" }, svg).textContent = `events ${data.events_total}`;
    for (const event of data.events) {
      const link = el("a", { href: `${this.historyBase}${event.table}?key=${encodeURIComponent(event.key)}` }, plot);
      const tick = el("rect", { x: this.x(event.time) - 1, y, width: 2.5, height: EVENTS - 6,
        fill: EVENT_COLORS[event.table] || "#667085", "data-testid": "event" }, link);
      el("title", {}, tick).textContent = `${event.text} at offset ${event.offset} (${rawText(event)})`;
    }
    for (const version of data.focus) {
      const mark = el("circle", { cx: this.x(version.time), cy: AXIS - 3, r: 4, fill: "#101828", "data-testid": "focus" }, plot);
      el("title", {}, mark).textContent = `version at offset ${version.offset}`;
    }

    // gaps in the history
    for (const { first: start, last: end } of data.gap_times) {
      el("rect", { x: this.x(start), y: AXIS, width: Math.max(this.x(end) - this.x(start), 3), height: height - AXIS,
        fill: "url(#gap)", opacity: 0.8, "data-testid": "gap" }, plot);
    }

    this.cursor = el("g", { class: "cursor", "data-testid": "cursor" }, svg);
    el("line", { y1: AXIS - 6, y2: height }, this.cursor);
    el("rect", { class: "handle", x: -34, y: 0, width: 68, height: 16, rx: 3 }, this.cursor);
    el("text", { x: -30, y: 12 }, this.cursor);
    this.root.replaceChildren(svg);
    this.svg = svg;
    this.placeCursor();
    this.listen(svg);
  }

  panel(svg, plot, top, title, lines) {
    const max = Math.max(1, ...lines.flatMap(([, points]) => points.map((p) => p.value)));
    const yOf = (value) => top + PANEL - (value / max) * (PANEL - 6);
    el("text", { x: 8, y: top + 12, class: "lane-label" }, svg).textContent = title;
    el("text", { x: 8, y: top + 26, class: "lane-label" }, svg).textContent = `max ${max}`;
    el("line", { x1: LEFT, x2: LEFT + this.plotWidth, y1: top + PANEL, y2: top + PANEL, stroke: "#e4e7ec" }, plot);
    for (const [name, points, color] of lines) {
      if (!points.length) continue;
      // before its first point a series is 0 (no partition had the flag, no broker led any)
      let d = points[0].time > this.domain[0] ? `M${LEFT - 2},${yOf(0)}` : "";
      points.forEach((p) => {
        const px = Math.max(this.x(p.time), LEFT - 2);
        d += d ? `H${px}V${yOf(p.value)}` : `M${px},${yOf(p.value)}`;
      });
      d += `H${this.x(this.data.last_time)}`;
      const path = el("path", { d, fill: "none", stroke: color, "stroke-width": 1.6, "data-series": name }, plot);
      el("title", {}, path).textContent = name;
    }
  }

  placeCursor() {
    if (this.cursorTime === null) { this.cursor.setAttribute("display", "none"); return; }
    const x = Math.min(Math.max(this.x(this.cursorTime), LEFT), LEFT + this.plotWidth);
    this.cursor.setAttribute("display", "");
    this.cursor.setAttribute("transform", `translate(${x},0)`);
    this.cursor.querySelector("text").textContent = this.at === null ? "…" : `@${this.at}`;
  }

  pointerTime(event) {
    const box = this.svg.getBoundingClientRect();
    const x = ((event.clientX - box.left) / box.width) * this.svg.viewBox.baseVal.width;
    return Math.min(Math.max(this.time(x), this.data.first_time), this.data.last_time);
  }

  listen(svg) {
    let dragging = null;
    svg.addEventListener("pointerdown", (event) => {
      if (event.target.closest("a")) return;
      dragging = event.shiftKey ? { pan: event.clientX, domain: [...this.domain] } : { cursor: true };
      svg.setPointerCapture(event.pointerId);
      if (dragging.cursor) this.moveTo(this.pointerTime(event));
    });
    svg.addEventListener("pointermove", (event) => {
      if (!dragging) return;
      if (dragging.cursor) { this.moveTo(this.pointerTime(event)); return; }
      const box = svg.getBoundingClientRect();
      const shift = ((event.clientX - dragging.pan) / box.width) * svg.viewBox.baseVal.width / this.plotWidth;
      const span = dragging.domain[1] - dragging.domain[0];
      this.zoomTo(dragging.domain[0] - shift * span, dragging.domain[1] - shift * span);
    });
    svg.addEventListener("pointerup", () => {
      if (dragging && dragging.cursor) this.settle();
      dragging = null;
    });
    svg.addEventListener("keydown", (event) => {
      if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return;
      event.preventDefault();
      const step = (this.domain[1] - this.domain[0]) / (event.shiftKey ? 10 : 100);
      const from = this.cursorTime ?? this.domain[0];
      this.moveTo(Math.min(Math.max(from + (event.key === "ArrowRight" ? step : -step), this.data.first_time),
        this.data.last_time));
      clearTimeout(this.keyed);
      this.keyed = setTimeout(() => this.settle(), 250);
    });
    svg.addEventListener("wheel", (event) => {
      event.preventDefault();
      const center = this.pointerTime(event);
      const factor = event.deltaY > 0 ? 1.25 : 0.8;
      this.zoomTo(center - (center - this.domain[0]) * factor, center + (this.domain[1] - center) * factor);
    }, { passive: false });
  }

  moveTo(time) {
    this.cursorTime = time;
    this.at = null;
    this.placeCursor();
    if (this.readout) this.readout.textContent = `cursor at ${isoTime(time)}…`;
  }

  // The cursor's time becomes an offset by the reader's rule (the last offset appended at or before it).
  async settle() {
    const response = await fetch(`${this.offsetApi}?at=${encodeURIComponent(isoTime(this.cursorTime))}`,
      { credentials: "same-origin" });
    const body = await response.json();
    if (!response.ok) { if (this.readout) this.readout.textContent = body.detail; return; }
    this.setOffset(body.offset, body.time);
  }

  // The card at the cursor: every number and broker state from the image at that exact offset (the API's image
  // summary, the CLI's reader), never from the drawn points (thinned to a pixel); the events around it. Only the
  // latest request draws its card: an answer for a moment the cursor has left is dropped, never titled anew.
  async summarize() {
    const box = document.querySelector("[data-testid=at-cursor]");
    if (!box || this.at === null || !this.data) return;
    const at = this.at, asked = ++this.summaries;
    const near = this.data.events.filter((e) => e.offset <= at).slice(-12).reverse();
    const response = await fetch(`${this.api.replace(/timeline$/, "image")}?at=${at}`, { credentials: "same-origin" });
    const image = await response.json();
    if (asked !== this.summaries || at !== this.at) return;
    // a broker the timeline knows but the image lacks: not registered yet there, or gone (by offset, not time)
    const held = image.brokers || {};
    const ids = [...new Set([...Object.keys(this.data.brokers), ...Object.keys(held)])];
    const states = ids.sort((a, b) => Number(a) - Number(b)).map((broker) => [broker, held[broker] ||
      ((this.data.brokers[broker] || []).some((s) => s.from_offset <= at) ? "unregistered" : "not yet registered")]);
    const card = (title) => { const c = document.createElement("div"); c.className = "card";
      const h = document.createElement("h2"); h.textContent = title; c.append(h); return c; };
    const list = (items) => { const ul = document.createElement("ul");
      for (const [text, href, title] of items) { const li = document.createElement("li");
        if (title) li.title = title;
        if (href) { const a = document.createElement("a"); a.href = href; a.textContent = text; li.append(a); }
        else li.textContent = text;
        ul.append(li); }
      return ul; };
    const base = this.historyBase;
    const health = card(`At offset ${at}`);
    health.append(response.ok ? list([
      ...Object.entries(image.partitions_flagged).map(([name, count]) => [`${name.replaceAll("_", " ")}: ${count}`]),
      ...states.map(([broker, state]) => [`broker ${broker}: ${state.replaceAll("_", " ")}`, `${base}brokers?key=${broker}`]),
      [`${plural(image.rows.topics, "topic")}, ${plural(image.rows.partitions, "partition")}, epoch ${image.epoch}`],
    ]) : document.createTextNode(image.detail || response.statusText));
    const events = card("Latest events up to the cursor");
    events.append(near.length ? list(near.map((e) => [`${e.offset} ${e.text}`,
      `${base}${e.table}?key=${encodeURIComponent(e.key)}`, rawText(e)])) : document.createTextNode("none in view"));
    box.replaceChildren(health, events);
  }

  setOffset(offset, time) {
    this.at = offset;
    if (time) this.cursorTime = Date.parse(time);
    this.placeCursor();
    if (this.readout) this.readout.textContent = `offset ${offset} · ${time || "time unknown"}`;
    this.root.dataset.at = offset;
    const url = new URL(location.href);
    url.searchParams.set("at", offset);
    history.replaceState(null, "", url);
    for (const link of document.querySelectorAll("a[data-moment]")) {
      const target = new URL(link.href);
      if ("changes" in link.dataset) {
        target.searchParams.set("from", Math.max(offset - 1, 0));
        target.searchParams.set("to", offset);
      } else {
        target.searchParams.set("at", offset);
      }
      link.href = target.pathname + target.search;
    }
    // the cluster picker's links carry the moment as a time: offsets are per cluster
    for (const link of document.querySelectorAll("a[data-moment-time]")) {
      const target = new URL(link.href);
      if (time) target.searchParams.set("at", time); else target.searchParams.delete("at");
      link.href = target.pathname + target.search;
    }
    const input = document.getElementById("at");
    if (input) input.value = offset;
    const shown = document.querySelector("[data-testid=moment-offset]");
    if (shown) shown.textContent = offset;
    this.summarize();
  }

  zoomTo(from, to) {
    const min = 1000, total = [this.data.first_time, this.data.last_time];
    if (to - from < min) { const mid = (from + to) / 2; from = mid - min / 2; to = mid + min / 2; }
    this.domain = [Math.max(from, total[0] - (total[1] - total[0]) * 0.02), Math.min(to, total[1] + (total[1] - total[0]) * 0.02)];
    this.draw();
    clearTimeout(this.refetch);
    this.refetch = setTimeout(() => this.fetchWindow(), 300);
  }

  // Zoomed in, the server sends the window's points in full detail; the window goes into the URL.
  async fetchWindow() {
    const whole = this.domain[0] <= this.data.first_time && this.domain[1] >= this.data.last_time;
    this.window = whole ? ["", ""] : [isoTime(Math.round(this.domain[0])), isoTime(Math.round(this.domain[1]))];
    const url = new URL(location.href);
    for (const [i, name] of ["from", "to"].entries()) {
      if (this.window[i]) url.searchParams.set(name, this.window[i]); else url.searchParams.delete(name);
    }
    history.replaceState(null, "", url);
    const domain = [...this.domain];
    await this.load();
    this.domain = domain;
    this.draw();
  }
}

// Opened at a moment (`?at=`) without a window: zoomed around it, a twentieth of the history (at least 15
// minutes) wide, so the events near it are not squeezed into a few pixels of a long history
async function openAround(timeline) {
  const given = new URLSearchParams(location.search);
  await timeline.load();
  if (!timeline.data || timeline.cursorTime === null || !given.has("at") || given.has("from") || given.has("to")) return;
  const whole = timeline.data.last_time - timeline.data.first_time;
  const span = Math.max(whole / 20, 15 * 6e4);
  if (span < whole) timeline.zoomTo(timeline.cursorTime - span / 2, timeline.cursorTime + span / 2);
}

for (const root of document.querySelectorAll("#timeline")) {
  const timeline = new Timeline(root);
  openAround(timeline);
  for (const button of document.querySelectorAll("[data-zoom]")) {
    button.addEventListener("click", () => {
      if (!timeline.data) return;
      const [from, to] = timeline.domain, mid = timeline.cursorTime ?? (from + to) / 2;
      if (button.dataset.zoom === "all") timeline.zoomTo(timeline.data.first_time, timeline.data.last_time);
      else if (button.dataset.zoom === "in") timeline.zoomTo(mid - (mid - from) / 2, mid + (to - mid) / 2);
      else timeline.zoomTo(mid - (mid - from) * 2, mid + (to - mid) * 2);
    });
  }
  window.addEventListener("resize", () => timeline.data && timeline.draw());
  window.kraftlakeTimeline = timeline;
}
