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
      url += "?after_seq=" + encodeURIComponent(seq.dataset.seq) + "&steps=" + encodeURIComponent(sig("task-steps")) +
        "&undo=" + encodeURIComponent(sig("task-compensation"));
    }
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
  if (s < 10) return s.toFixed(1) + " s";
  if (s < 60) return Math.floor(s) + " s";
  var pad = function (n) { return (n < 10 ? "0" : "") + n; };
  if (s < 3600) return Math.floor(s / 60) + " m " + pad(Math.floor(s) % 60) + " s";
  return Math.floor(s / 3600) + " h " + pad(Math.floor(s / 60) % 60) + " m";
}

function tick() {
  var now = Date.now();
  document.querySelectorAll(".clock[data-start]:not([data-end])").forEach(function (el) {
    el.textContent = fmtDuration(now - Date.parse(el.dataset.start));
  });
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

function runPageUpdated() {
  openActive();
  tick();
  followLogs();
}

document.addEventListener("htmx:wsAfterMessage", runPageUpdated);
document.addEventListener("DOMContentLoaded", runPageUpdated);
setInterval(tick, 1000);
