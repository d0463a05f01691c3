// flightdeck's own script: small and optional. htmx requests carry the CSRF
// token from the page's meta tag.
document.addEventListener("htmx:configRequest", function (evt) {
  var meta = document.querySelector('meta[name="csrf-token"]');
  if (meta) evt.detail.headers["X-CSRF-Token"] = meta.content;
});
