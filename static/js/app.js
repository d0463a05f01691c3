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
