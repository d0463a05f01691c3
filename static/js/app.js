// flightdeck's own script: small and optional. htmx requests carry the CSRF
// token from the page's meta tag.
document.addEventListener("htmx:configRequest", function (evt) {
  var meta = document.querySelector('meta[name="csrf-token"]');
  if (meta) evt.detail.headers["X-CSRF-Token"] = meta.content;
});

// The top bar's menu folds away on narrow screens; the button opens it.
document.addEventListener("click", function (evt) {
  var btn = evt.target.closest && evt.target.closest(".menu-toggle");
  if (!btn) return;
  var bar = btn.closest(".topbar");
  var open = bar.classList.toggle("menu-open");
  btn.setAttribute("aria-expanded", open ? "true" : "false");
});

// A select marked data-autosubmit submits its form when changed (the
// pipeline picker): the CSP forbids inline handlers such as onchange=.
document.addEventListener("change", function (evt) {
  var el = evt.target;
  if (!el.matches || !el.matches("select[data-autosubmit]") || !el.form) return;
  if (el.form.requestSubmit) el.form.requestSubmit();
  else el.form.submit();
});

// Copy buttons (a task's full id): the clipboard when the page may use it,
// else the text is selected for the person to copy.
document.addEventListener("click", function (evt) {
  var btn = evt.target.closest && evt.target.closest("[data-copy]");
  if (!btn) return;
  var text = btn.getAttribute("data-copy");
  var done = function (label) {
    btn.textContent = label;
    setTimeout(function () { btn.textContent = "Copy"; }, 1500);
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(function () { done("Copied"); }, function () { done("Copy failed"); });
    return;
  }
  var code = btn.parentNode.querySelector("code");
  if (code) {
    var range = document.createRange();
    range.selectNodeContents(code);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    done("Selected");
  }
});

// Relative times ("5 min ago", exact on hover) stay current; the words
// match handlers/task_row.go. Running tasks' clocks tick with tick().
function flightdeckAgo(ms) {
  var s = Math.floor(ms / 1000);
  if (s < 60) return "just now";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  if (s < 86400) return Math.floor(s / 3600) + " h ago";
  return Math.floor(s / 86400) + " d ago";
}
setInterval(function () {
  var now = Date.now();
  document.querySelectorAll("time[data-ago]").forEach(function (el) {
    var at = Date.parse(el.getAttribute("datetime"));
    if (!isNaN(at)) el.textContent = flightdeckAgo(now - at);
  });
}, 1000);

// The run page (/tasks/{id}). Its socket sends only what changed: step
// heads are swapped, new log lines and events appended. This script keeps
// each log box at its newest line unless the reader scrolled up, ticks
// running durations and retry countdowns, opens steps as they start, and
// filters the raw event log.

// A socket that (re)connects says how far the page is, so the server
// sends only what came since and appends rather than replaces.
(function () {
  if (!window.htmx || !htmx.createWebSocket) return;
  var plain = htmx.createWebSocket;
  htmx.createWebSocket = function (url) {
    var seq = document.getElementById("run-seq");
    if (seq && /\/tasks\/[^\/?]+\/ws$/.test(url)) {
      var sig = function (id) { var el = document.getElementById(id); return el ? el.dataset.sig || "" : ""; };
      url += (url.indexOf("?") >= 0 ? "&" : "?") + "after_seq=" + encodeURIComponent(seq.dataset.seq) + "&steps=" + encodeURIComponent(sig("task-steps")) +
        "&undo=" + encodeURIComponent(sig("task-compensation")) + "&sigs=" + encodeURIComponent(seq.dataset.sigs || "");
    }
    // Every page socket keeps the approvals badge current from the count the page shows.
    var badge = document.getElementById("nav-approvals-badge");
    if (badge && badge.dataset.count) url += (url.indexOf("?") >= 0 ? "&" : "?") + "badge=" + encodeURIComponent(badge.dataset.count);
    return plain(url);
  };
})();

var maxLogLines = 5000, maxEventRows = 200; // per kind, as the server renders them

function logAtBottom(el) { return el.scrollHeight - el.scrollTop - el.clientHeight < 8; }

// A reader who scrolls a log box up stays where they put it; back at the
// bottom, the box follows again. Scroll events arrive after the fact, when
// more lines may have come: the box's own scrolling (to autoTop) is told
// apart by where it left the box.
document.addEventListener("scroll", function (evt) {
  var el = evt.target;
  if (!el.classList || !el.classList.contains("log-box")) return;
  if (logAtBottom(el)) el.dataset.follow = "1";
  else if (el.autoTop === undefined || Math.abs(el.scrollTop - el.autoTop) > 1) el.dataset.follow = "0";
}, true);

// A reader who scrolled back to the bottom follows again even when lines
// come before that scroll's event does: by then the box has grown, and the
// event would find it above its bottom. So before each message is swapped
// in, a box at its bottom is marked to follow.
document.addEventListener("htmx:wsBeforeMessage", function () {
  document.querySelectorAll(".log-box").forEach(function (el) {
    if (el.clientHeight > 0 && logAtBottom(el)) el.dataset.follow = "1";
  });
});

function followLogs() {
  document.querySelectorAll(".log-box").forEach(function (el) {
    while (el.children.length > maxLogLines) el.removeChild(el.firstElementChild);
    if (el.clientHeight === 0) return;
    // Moved up since the box last followed, whether or not its scroll event came yet.
    if (el.autoTop !== undefined && el.scrollTop < el.autoTop - 1 && !logAtBottom(el)) el.dataset.follow = "0";
    if (el.dataset.follow === "0") return;
    el.scrollTop = el.scrollHeight;
    el.autoTop = el.scrollTop;
  });
  // The raw event log keeps the newest of each kind: log lines do not
  // push the other events out.
  var rows = document.getElementById("events-body");
  if (!rows || rows.children.length <= 2 * maxEventRows) return;
  var logs = 0, others = 0;
  Array.prototype.slice.call(rows.children).forEach(function (row) {
    var n = row.dataset.type === "step.log" ? ++logs : ++others;
    if (n > maxEventRows) rows.removeChild(row);
  });
}

// Durations and countdowns, written as views/components.Duration writes them.
function fmtDuration(ms) {
  var s = Math.max(0, ms) / 1000;
  if (s < 1) return Math.floor(Math.max(0, ms)) + " ms";
  if (s < 10) return s.toFixed(1) + " s";
  if (s < 60) return Math.floor(s) + " s";
  var pad = function (n) { return (n < 10 ? "0" : "") + n; };
  if (s < 3600) return Math.floor(s / 60) + " m " + pad(Math.floor(s) % 60) + " s";
  return Math.floor(s / 3600) + " h " + pad(Math.floor(s / 60) % 60) + " m";
}

function tick() {
  var now = Date.now();
  document.querySelectorAll(".clock[data-start]").forEach(function (el) {
    if (el.dataset.end || !el.dataset.start) return;
    el.textContent = fmtDuration(now - Date.parse(el.dataset.start));
  });
  layoutGantts(now);
  document.querySelectorAll("[data-until]").forEach(function (el) {
    var left = Math.max(0, Math.round((Date.parse(el.dataset.until) - now) / 1000));
    el.textContent = "retrying in " + left + " s" + (el.dataset.suffix || "");
  });
}

// A step opens when it starts running, unless the reader opened or closed
// it themselves.
function openActive() {
  document.querySelectorAll("details.step-details:not([data-touched])").forEach(function (d) {
    var head = d.querySelector("summary");
    var key = head && head.dataset.display;
    if (!d.open && (key === "running" || key === "retrying" || key === "compensating" || key === "failed")) d.open = true;
  });
}

document.addEventListener("click", function (evt) {
  var head = evt.target.closest && evt.target.closest("details.step-details > summary");
  if (head) head.parentElement.dataset.touched = "1";
});

document.addEventListener("toggle", function (evt) {
  if (evt.target.matches && evt.target.matches("details.step-details") && evt.target.open) followLogs();
}, true);

// The raw event log's filter: one type, or every type (log lines only
// when asked for).
function filterEvents() {
  var type = document.querySelector("[data-events-type]");
  var logs = document.querySelector("[data-events-logs]");
  var rows = document.getElementById("events-body");
  if (!type || !rows) return;
  rows.classList.toggle("show-logs", logs.checked || type.value === "step.log");
  var style = document.getElementById("events-filter-style");
  if (!style) {
    style = document.createElement("style");
    style.id = "events-filter-style";
    document.head.appendChild(style);
  }
  style.textContent = type.value ? '#events-body .ev:not([data-type="' + CSS.escape(type.value) + '"]) { display: none; }' : "";
}

document.addEventListener("change", function (evt) {
  if (evt.target.matches && evt.target.matches("[data-events-type], [data-events-logs]")) filterEvents();
});

// The timeline of a run that goes on is laid out again every second from
// its times (data-start/data-end, empty while still going), so running
// bars and waits grow without the server. The axis' steps and words are
// views/components.Ticks'.
var tickSteps = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

function tickLabel(sec) {
  if (sec === 0) return "0";
  if (sec < 1) return Math.round(sec * 1000) + " ms";
  if (sec < 60) return Math.floor(sec) + " s";
  if (sec < 3600) {
    var m = Math.floor(sec / 60), s = Math.floor(sec) % 60;
    return s === 0 ? m + " m" : m + " m " + s + " s";
  }
  var h = Math.floor(sec / 3600), mm = Math.floor(sec % 3600 / 60);
  return mm === 0 ? h + " h" : h + " h " + mm + " m";
}

function layoutGantts(now) {
  document.querySelectorAll("[data-gantt]").forEach(function (g) {
    if (g.dataset.runEnd || !g.dataset.runStart) return; // ended: as the server drew it
    var start = Date.parse(g.dataset.runStart);
    var span = Math.max(now - start, 1);
    var place = function (el) {
      var from = Math.max(Date.parse(el.dataset.start), start);
      var to = el.dataset.end ? Date.parse(el.dataset.end) : now;
      var left = Math.min(Math.max(100 * (from - start) / span, 0), 99.5);
      var width = Math.min(Math.max(100 * (to - from) / span, 0.5), 100 - left);
      el.style.left = left.toFixed(2) + "%";
      el.style.width = width.toFixed(2) + "%";
    };
    g.querySelectorAll(".gantt-bar[data-start], .gantt-band[data-start]").forEach(place);
    var total = span / 1000, step = tickSteps[tickSteps.length - 1];
    for (var i = 0; i < tickSteps.length; i++) {
      if (total / tickSteps[i] <= 6) { step = tickSteps[i]; break; }
    }
    var axis = g.querySelector(".gantt-axis"), overlay = g.querySelector(".gantt-overlay");
    if (!axis || !overlay) return;
    var labels = [], grid = [];
    for (var n = 0; n * step <= total + 1e-9; n++) {
      var left = (100 * n * step / total).toFixed(2) + "%";
      labels.push('<span class="gantt-tick" style="left: ' + left + '">' + tickLabel(n * step) + "</span>");
      grid.push('<span class="gantt-grid" style="left: ' + left + '"></span>');
    }
    axis.innerHTML = labels.join("");
    overlay.querySelectorAll(".gantt-grid").forEach(function (el) { el.remove(); });
    overlay.insertAdjacentHTML("afterbegin", grid.join(""));
  });
}

// Logs: timestamps on or off (remembered), a search within each step's
// log, and links to lines (#step-NAME-L42) that open the step at the line.
function showTimes(on) {
  document.documentElement.classList.toggle("log-times", on);
  document.querySelectorAll("[data-log-times]").forEach(function (box) { box.checked = on; });
}

document.addEventListener("change", function (evt) {
  if (!evt.target.matches || !evt.target.matches("[data-log-times]")) return;
  try { localStorage.setItem("flightdeck.logTimes", evt.target.checked ? "1" : "0"); } catch (e) { /* private mode */ }
  showTimes(evt.target.checked);
});

function savedTimes() {
  try { return localStorage.getItem("flightdeck.logTimes") === "1"; } catch (e) { return false; }
}

// searchLog hides a log's lines that do not contain the search's text
// (any case) and marks the matches where the browser can.
function searchLog(input) {
  var body = input.closest(".step-body");
  var box = body && body.querySelector(".log-box");
  if (!box) return;
  var q = input.value.trim().toLowerCase();
  var count = body.querySelector("[data-log-count]");
  var hits = 0;
  Array.prototype.forEach.call(box.children, function (ln) {
    var text = ln.querySelector(".ln-x");
    var hit = !q || (text ? text.textContent : ln.textContent).toLowerCase().indexOf(q) >= 0;
    ln.classList.toggle("ln-miss", !hit);
    if (hit) hits++;
  });
  box.classList.toggle("searching", !!q);
  if (count) count.textContent = q ? hits + " of " + box.children.length + " lines" : "";
  markMatches();
}

function markMatches() {
  if (!window.CSS || !CSS.highlights || typeof Highlight === "undefined") return;
  var ranges = [];
  document.querySelectorAll("[data-log-search]").forEach(function (input) {
    var q = input.value.trim().toLowerCase();
    var box = q && input.closest(".step-body").querySelector(".log-box");
    if (!box) return;
    box.querySelectorAll(".ln:not(.ln-miss) .ln-x").forEach(function (x) {
      var walker = document.createTreeWalker(x, NodeFilter.SHOW_TEXT);
      for (var node = walker.nextNode(); node; node = walker.nextNode()) {
        var text = node.data.toLowerCase();
        for (var at = text.indexOf(q); at >= 0; at = text.indexOf(q, at + q.length)) {
          var r = new Range();
          r.setStart(node, at);
          r.setEnd(node, at + q.length);
          ranges.push(r);
        }
      }
    });
  });
  CSS.highlights.set("log-search", new Highlight(...ranges));
}

document.addEventListener("input", function (evt) {
  if (evt.target.matches && evt.target.matches("[data-log-search]")) searchLog(evt.target);
});

function openLine() {
  var hash = location.hash;
  try { hash = decodeURIComponent(hash); } catch (e) { /* as it is */ }
  var m = /^#((?:step|undo)-.+-L)(\d+)$/.exec(hash);
  if (!m) return;
  var ln = document.getElementById(m[1] + m[2]);
  if (!ln) return;
  document.querySelectorAll(".ln-target").forEach(function (el) { el.classList.remove("ln-target"); });
  ln.classList.add("ln-target");
  var details = ln.closest("details.step-details");
  if (details) {
    details.dataset.touched = "1";
    details.open = true;
  }
  var box = ln.closest(".log-box");
  if (box) box.dataset.follow = "0"; // the reader came for this line: stay on it
  ln.scrollIntoView({ block: "center" });
}

window.addEventListener("hashchange", openLine);

function runPageUpdated() {
  openActive();
  tick();
  followLogs();
  showTimes(savedTimes());
  document.querySelectorAll("[data-log-search]").forEach(function (input) { if (input.value) searchLog(input); });
}

// Confirm what cannot be undone: a submit button (or form) with
// data-confirm asks first in a dialog that says what will change
// (data-confirm-detail), and goes ahead only when the person confirms.
// The confirmed click is replayed on the same button, so htmx's ws-send
// and plain forms both send it with the button's name and value.
var confirmed = null;

function confirmDialog() {
  var d = document.getElementById("confirm-dialog");
  if (d) return d;
  d = document.createElement("dialog");
  d.id = "confirm-dialog";
  d.className = "confirm-dialog";
  d.setAttribute("data-testid", "confirm-dialog");
  d.setAttribute("aria-labelledby", "confirm-title");
  d.innerHTML = '<form method="dialog"><h2 id="confirm-title"></h2><p class="confirm-detail"></p>' +
    '<div class="buttons"><button class="btn" value="cancel" data-testid="confirm-cancel">Go back</button>' +
    '<button class="btn btn-danger" value="ok" data-testid="confirm-ok"></button></div></form>';
  document.body.appendChild(d);
  return d;
}

// current is el, or once a swap replaced it, the element now in the page
// with the same data-testid (null when there is none any more).
function current(el) {
  if (el.isConnected) return el;
  var key = el.getAttribute("data-testid");
  return key ? document.querySelector('[data-testid="' + key + '"]') : null;
}

document.addEventListener("submit", function (evt) {
  var form = evt.target;
  var btn = evt.submitter;
  var src = btn && btn.hasAttribute("data-confirm") ? btn : form.hasAttribute("data-confirm") ? form : null;
  if (!src) return;
  if (confirmed === src) {
    confirmed = null;
    return; // the person said yes: let it through
  }
  evt.preventDefault();
  evt.stopImmediatePropagation();
  var d = confirmDialog();
  d.querySelector("h2").textContent = src.getAttribute("data-confirm");
  d.querySelector(".confirm-detail").textContent = src.getAttribute("data-confirm-detail") || "";
  var ok = d.querySelector('[value="ok"]');
  ok.textContent = src.getAttribute("data-confirm-ok") || "Confirm";
  ok.className = "btn " + (btn && btn.classList.contains("btn-primary") ? "btn-primary" : "btn-danger");
  d.returnValue = "";
  d.onclose = null;
  d.addEventListener("close", function () {
    if (d.returnValue !== "ok") return;
    // The page's socket may have redrawn the section while the dialog was
    // open (a retry's push redraws the run's header): a detached button
    // sends nothing, so act on the same button as the page has it now.
    var target = current(btn || form);
    if (!target) return;
    confirmed = target.hasAttribute("data-confirm") ? target : src;
    if (target.tagName === "FORM") target.requestSubmit(); else target.click();
  }, { once: true });
  d.showModal();
  d.querySelector('[value="cancel"]').focus();
}, true);

document.addEventListener("htmx:wsAfterMessage", runPageUpdated);
document.addEventListener("DOMContentLoaded", function () {
  runPageUpdated();
  openLine();
});
setInterval(tick, 1000);
