// The page of `othello-jax serve`: draws the game the server keeps for this tab and sends the
// person's clicks. Each tab keeps its own game id (sessionStorage), so two tabs play two games.
// While the server searches (an engine's move, a hint) the page polls the game and shows why it waits.

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const POLL_MS = 250;
let engines = [];
let view = null;
let polling = null;

async function api(path, body) {
  const options = body === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const response = await fetch(path, options);
  const data = await response.json().catch(() => ({ error: `the server answered ${response.status}` }));
  if (!response.ok) throw new Error(data.error || `the server answered ${response.status}`);
  return data;
}

function squareName(index, size) {
  return String.fromCharCode(97 + (index % size)) + (Math.floor(index / size) + 1);
}

function svgElement(name, attributes, text) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  if (text !== undefined) element.textContent = text;
  return element;
}

function buildBoard(size) {
  const board = $("board");
  board.replaceChildren();
  board.style.gridTemplateColumns = `repeat(${size}, 1fr)`;
  board.dataset.size = size;
  for (let index = 0; index < size * size; index++) {
    const button = document.createElement("button");
    const name = squareName(index, size);
    button.type = "button";
    button.setAttribute("aria-label", name);
    button.dataset.square = name;
    button.append(svgElement("svg", { viewBox: "0 0 100 100", "aria-hidden": "true" }));
    if (index < size) button.append(coordinate("column", name[0]));
    if (index % size === 0) button.append(coordinate("row", name.slice(1)));
    button.addEventListener("click", () => play(name));
    board.append(button);
  }
}

function coordinate(kind, text) {
  const label = document.createElement("span");
  label.className = `coordinate ${kind}`;
  label.setAttribute("aria-hidden", "true");
  label.textContent = text;
  return label;
}

function drawSquare(button, piece, legal, last, hint) {
  const svg = button.firstChild;
  svg.replaceChildren();
  button.classList.toggle("legal", legal);
  button.classList.toggle("best", Boolean(hint && hint.best));
  let description = button.dataset.square;
  if (piece !== "-") {
    const black = piece === "X";
    svg.append(svgElement("circle", { cx: 50, cy: 50, r: 42, fill: black ? "#111" : "#fafafa", stroke: "#000" }));
    description += black ? ", black" : ", white";
  } else if (hint) {
    svg.append(svgElement("text", { x: 50, y: hint.sub ? 46 : 58, "text-anchor": "middle", class: "hint-label" },
                          hint.label));
    if (hint.sub) svg.append(svgElement("text", { x: 50, y: 74, "text-anchor": "middle", class: "hint-sub" }, hint.sub));
    description += `, legal, ${hint.text}`;
  } else if (legal) {
    svg.append(svgElement("circle", { cx: 50, cy: 50, r: 9, fill: "#0009", class: "legal-dot" }));
    description += ", legal";
  }
  if (last) {
    svg.append(svgElement("circle", { cx: 50, cy: 50, r: 10, fill: "#e53935", class: "last-move" }));
    description += ", last move";
  }
  button.title = description;
  button.dataset.state = piece === "X" ? "black" : piece === "O" ? "white" : legal ? "legal" : "empty";
}

function drawGraph(points, plies) {
  const graph = $("graph");
  graph.replaceChildren();
  const width = 320, height = 120, pad = 6;
  const x = (ply) => pad + (width - 2 * pad) * ply / Math.max(plies, 1);
  const y = (value) => pad + (height - 2 * pad) * (1 - value) / 2;
  graph.append(svgElement("line", { x1: pad, x2: width - pad, y1: y(0), y2: y(0), class: "axis" }));
  graph.append(svgElement("text", { x: pad + 2, y: 14, "font-size": 10, fill: "#555" }, "black ahead"));
  graph.append(svgElement("text", { x: pad + 2, y: height - 6, "font-size": 10, fill: "#555" }, "white ahead"));
  if (!points.length) return;
  const path = points.map((p, i) => `${i ? "L" : "M"}${x(p.ply).toFixed(1)},${y(p.value).toFixed(1)}`).join(" ");
  graph.append(svgElement("path", { d: path, class: "line" }));
  for (const p of points) {
    const dot = svgElement("circle", { cx: x(p.ply), cy: y(p.value), r: 3, class: p.exact ? "exact" : "point" });
    dot.append(svgElement("title", {}, `after ${p.ply} moves: ${p.text}`));
    graph.append(dot);
  }
}

function render(next) {
  view = next;
  sessionStorage.setItem("othello-jax-game", view.id);
  if (Number($("board").dataset.size) !== view.size) buildBoard(view.size);
  const hints = view.hints ? view.hints.squares : {};
  const legal = new Set(view.legal);
  [...$("board").children].forEach((button, index) => {
    const name = button.dataset.square;
    drawSquare(button, view.board[index], legal.has(name), view.last === name, hints[name]);
  });
  $("status").textContent = view.status;
  $("count-black").textContent = view.counts.black;
  $("count-white").textContent = view.counts.white;
  $("message").textContent = view.message;
  if (view.error) $("error").textContent = view.error;
  $("busy").hidden = !view.busy;
  if (view.busy) drawBusy(view.busy);
  drawHints(view.hints);
  drawGraph(view.evals, Math.max(view.moves.length, 1));
  const latest = view.evals[view.evals.length - 1];
  $("eval-text").textContent = latest ? `after ${latest.ply} moves: ${latest.text}` : "hints and the engines' searches draw it";
  $("moves").replaceChildren(...view.moves.map((move) => {
    const item = document.createElement("li");
    item.className = move.color;
    item.textContent = move.square;
    return item;
  }));
  $("transcript").value = view.transcript;
  $("position").value = view.position;
  $("undo").disabled = !view.can_undo;
  $("redo").disabled = !view.can_redo;
  $("hint").disabled = view.over || Boolean(view.busy);
  $("download").href = `/api/games/${view.id}/record`;
  document.body.dataset.over = view.over;
  document.body.dataset.busy = Boolean(view.busy);
  clearTimeout(polling);
  if (view.busy) polling = setTimeout(poll, POLL_MS);
}

// "preparing the first move: compiling the search for 8x8 (about 30 s on cpu-2c the first time; ...)":
// the bar fills over the time the notice foresees; without a figure it only shows that work goes on.
function drawBusy(busy) {
  $("busy-text").textContent = busy.text + "…";
  $("busy-time").textContent = `${Math.round(busy.elapsed)} s`;
  const foreseen = /about (?:(\d+)m(\d+)s|(\d+(?:\.\d+)?) s)/.exec(busy.text);  // notices' "47 s", "3m05s"
  const bar = $("busy").querySelector(".bar div");
  bar.classList.toggle("foreseen", Boolean(foreseen));
  if (foreseen) {
    const seconds = foreseen[3] ? Number(foreseen[3]) : 60 * Number(foreseen[1]) + Number(foreseen[2]);
    bar.style.width = `${Math.min(100, 100 * busy.elapsed / seconds).toFixed(0)}%`;
  } else {
    bar.style.width = "";
  }
}

function drawHints(hints) {
  $("hints").hidden = !hints;
  if (!hints) return;
  $("exact").textContent = hints.exact || "";
  $("value").hidden = hints.value === null || hints.value === undefined;
  if (!$("value").hidden) {
    $("value-black").style.width = `${(50 * (hints.value + 1)).toFixed(1)}%`;
    $("value-text").textContent = hints.value_text;
  }
  $("hint-source").textContent = `hints from ${hints.source}`;
}

async function poll() {
  try {
    render(await api(`/api/games/${view.id}`));
  } catch (error) {
    showError(error);
    polling = setTimeout(poll, 4 * POLL_MS);
  }
}

function showError(error) {
  $("error").textContent = error.message;
}

async function act(action, body = {}) {
  $("error").textContent = "";
  try {
    render(await api(`/api/games/${view.id}/${action}`, body));
  } catch (error) {
    showError(error);
    if (/no game/.test(error.message)) await newGame();
  }
}

const play = (square) => act("move", { square });

function fillSeats() {
  const size = Number($("size").value);
  for (const seat of ["black", "white"]) {
    const select = $(seat), chosen = select.value;
    const names = ["you", ...engines.filter((e) => e.sizes.includes(size)).map((e) => e.name)];
    select.replaceChildren(...names.map((name) => new Option(name === "you" ? "you (click)" : name, name)));
    if (names.includes(chosen)) select.value = chosen;
  }
}

function setupOptions() {
  const seconds = Number($("seconds").value);
  const sims = $("sims").value ? Number($("sims").value) : null;
  return { size: Number($("size").value), black: $("black").value, white: $("white").value, seconds, sims };
}

async function newGame() {
  $("error").textContent = "";
  try {
    render(view && view.id ? await api(`/api/games/${view.id}/new`, setupOptions())
                           : await api("/api/games", setupOptions()));
  } catch (error) {
    if (view && /no game/.test(error.message)) {
      view = null;
      return newGame();
    }
    showError(error);
  }
}

async function copy(field) {
  field.select();
  try {
    await navigator.clipboard.writeText(field.value);
    $("message").textContent = "copied";
  } catch (error) {
    document.execCommand("copy");  // a page served to another machine over plain http has no clipboard API
  }
}

async function start() {
  const offer = await api("/api/engines");
  engines = offer.engines;
  $("sims").placeholder = `by the clock (e.g. ${offer.sims})`;
  const seconds = String(offer.seconds);
  if (![...$("seconds").options].some((option) => option.value === seconds)) $("seconds").add(new Option(seconds));
  $("seconds").value = seconds;
  fillSeats();
  const firstEngine = engines.find((e) => e.sizes.includes(Number($("size").value)));
  if (firstEngine) $("white").value = firstEngine.name;
  $("size").addEventListener("change", fillSeats);
  $("setup").addEventListener("submit", (event) => { event.preventDefault(); newGame(); });
  $("undo").addEventListener("click", () => act("undo"));
  $("redo").addEventListener("click", () => act("redo"));
  $("hint").addEventListener("click", () => act("hint"));
  $("paste").addEventListener("submit", (event) => {
    event.preventDefault();
    act("load", { text: $("paste-text").value });
  });
  for (const button of document.querySelectorAll("button.copy")) {
    button.addEventListener("click", () => copy($(button.dataset.copy)));
  }
  const saved = sessionStorage.getItem("othello-jax-game");
  if (saved) {
    try {
      render(await api(`/api/games/${saved}`));
      $("size").value = String(view.size);
      fillSeats();
      $("black").value = view.seats.black;
      $("white").value = view.seats.white;
      return;
    } catch (error) { /* the server restarted: a new game below */ }
  }
  await newGame();
}

start().catch(showError);
