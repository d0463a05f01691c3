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

// Relative times ("5 min ago", exact on hover) and running tasks' run
// times stay current; the words match handlers/task_row.go.
function flightdeckAgo(ms) {
  var s = Math.floor(ms / 1000);
  if (s < 60) return "just now";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  if (s < 86400) return Math.floor(s / 3600) + " h ago";
  return Math.floor(s / 86400) + " d ago";
}
function flightdeckRunTime(ms) {
  var s = Math.max(0, Math.floor(ms / 1000));
  var pad = function (n) { return (n < 10 ? "0" : "") + n; };
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m " + pad(s % 60) + "s";
  return Math.floor(s / 3600) + "h " + pad(Math.floor(s % 3600 / 60)) + "m";
}
setInterval(function () {
  var now = Date.now();
  document.querySelectorAll("time[data-ago]").forEach(function (el) {
    var at = Date.parse(el.getAttribute("datetime"));
    if (!isNaN(at)) el.textContent = flightdeckAgo(now - at);
  });
  document.querySelectorAll("[data-since]").forEach(function (el) {
    var at = Date.parse(el.getAttribute("data-since"));
    if (!isNaN(at)) el.textContent = flightdeckRunTime(now - at);
  });
}, 1000);
