// Keyboard-first review of the flag queue: j/k move, x select, c confirm, d dismiss, o open, ? help.
(function () {
  "use strict";
  let current = -1;

  function rows() {
    return Array.from(document.querySelectorAll("tr.flag-row"));
  }

  function focusRow(index) {
    const all = rows();
    if (!all.length) return;
    current = Math.max(0, Math.min(index, all.length - 1));
    all.forEach((row, i) => row.classList.toggle("current", i === current));
    all[current].focus();
    all[current].scrollIntoView({ block: "nearest" });
  }

  function currentRow() {
    const all = rows();
    return current >= 0 && current < all.length ? all[current] : null;
  }

  function submitBulk(status) {
    const form = document.getElementById("bulk-form");
    if (!form) return;
    const checked = form.querySelectorAll("input[name=flag]:checked");
    if (!checked.length) {
      const row = currentRow();
      if (row) row.querySelector("input[name=flag]").checked = true;
    }
    const button = document.getElementById(status === "confirmed" ? "bulk-confirm" : "bulk-dismiss");
    form.requestSubmit(button);
  }

  document.addEventListener("keydown", function (event) {
    const tag = (event.target.tagName || "").toLowerCase();
    if (tag === "input" && event.target.type === "text") return;
    if (tag === "textarea" || tag === "select" || event.ctrlKey || event.metaKey || event.altKey) return;
    switch (event.key) {
      case "j": focusRow(current + 1); break;
      case "k": focusRow(current - 1); break;
      case "x": {
        const row = currentRow();
        if (row) { const box = row.querySelector("input[name=flag]"); box.checked = !box.checked; }
        break;
      }
      case "c": submitBulk("confirmed"); break;
      case "d": submitBulk("dismissed"); break;
      case "o": {
        const row = currentRow();
        if (row) window.location.assign(row.querySelector("a.open-link").href);
        break;
      }
      case "?": {
        const help = document.getElementById("shortcuts");
        if (help) help.hidden = !help.hidden;
        break;
      }
      default: return;
    }
    event.preventDefault();
  });

  // An empty bulk action is answered here, beside the buttons, rather than by a bare 400 page;
  // a real one carries the focused row's position so focus comes back to the same place.
  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (!form || form.id !== "bulk-form") return;
    const message = document.getElementById("bulk-message");
    if (!form.querySelectorAll("input[name=flag]:checked").length) {
      event.preventDefault();
      if (message) {
        message.textContent = "Select at least one flag first: tick its box, or move to a row (j/k) and press x.";
        message.hidden = false;
      }
      return;
    }
    if (message) message.hidden = true;
    const at = document.getElementById("bulk-at");
    if (at) at.value = current >= 0 ? String(current) : "";
  });

  document.addEventListener("htmx:afterSwap", function () { current = -1; });

  // Back from a confirm or dismiss: focus where the reviewer was, the flash fades after a while.
  const params = new URLSearchParams(window.location.search);
  const at = params.get("at");
  if (at !== null && /^\d+$/.test(at)) {
    focusRow(parseInt(at, 10));
    params.delete("at");
    const rest = params.toString();
    window.history.replaceState(null, "", window.location.pathname + (rest ? "?" + rest : ""));
  }
  const flash = document.getElementById("flash");
  if (flash) window.setTimeout(function () { flash.classList.add("faded"); }, 4000);
})();
