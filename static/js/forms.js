// Form answers with validation errors (HTTP 400) are fragments for htmx to swap in place
// (base.html's responseHandling). Under DEBUG, django-htmx's debug helper would replace the
// whole document with any 400 answer instead; it listens on the document, so stopping the
// event on the body keeps the page and lets htmx swap the form with its errors. Real errors
// (403, 404, 500) still reach the helper and show Django's debug page.
(function () {
  "use strict";
  document.body.addEventListener("htmx:beforeOnLoad", (event) => {
    const xhr = event.detail && event.detail.xhr;
    if (xhr && xhr.status === 400) event.stopPropagation();
  });
})();

// Times the server writes in UTC (<time class="local-time" datetime="...">) show in the
// reader's own time zone; the UTC text stays as the title.
(function () {
  "use strict";
  document.querySelectorAll("time.local-time[datetime]").forEach((el) => {
    const when = new Date(el.getAttribute("datetime"));
    if (Number.isNaN(when.getTime())) return;
    el.title = el.textContent;
    el.textContent = when.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", timeZoneName: "short" });
  });
})();
