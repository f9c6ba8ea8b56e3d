// Keyboard-first labelling for the trajectory viewer. Loaded as a static file (no inline
// scripts, so a strict CSP can forbid them). Labels autosave through the htmx buttons.
(function () {
  "use strict";
  const steps = Array.from(document.querySelectorAll("section.rv-step"));
  if (!steps.length && !document.getElementById("submit-form")) return;
  let current = 0;
  const help = document.getElementById("rv-help");
  const activeBehaviour = {};

  function csrf() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (e) {
      return "";
    }
  }

  function focusStep(i, scroll) {
    if (!steps.length) return;
    current = Math.max(0, Math.min(steps.length - 1, i));
    steps.forEach((s, j) => s.classList.toggle("current", j === current));
    const step = steps[current];
    if (scroll !== false) {
      step.scrollIntoView({ block: "start", behavior: "auto" });
      step.focus({ preventScroll: true });
    }
    document.querySelectorAll(".rv-dot").forEach((d, j) => d.classList.toggle("current", j === current));
  }

  function rows(step) {
    return Array.from(step.querySelectorAll(".rv-label-row"));
  }

  function activeRow(step) {
    return step.querySelector(".rv-label-row.rv-row-active") || rows(step)[0];
  }

  function cycleRow(step) {
    const all = rows(step);
    if (!all.length) return;
    const at = all.indexOf(activeRow(step));
    all.forEach((r) => r.classList.remove("rv-row-active"));
    const next = all[(at + 1) % all.length];
    next.classList.add("rv-row-active");
    const details = next.closest("details");
    if (details) details.open = true;
    const panel = step.querySelector(".rv-labels");
    if (panel) activeBehaviour[panel.dataset.stepPk] = next.dataset.behaviour;
  }

  function label(value) {
    const step = steps[current];
    if (!step) return;
    const row = activeRow(step);
    const button = row && row.querySelector('.rv-val[value="' + value + '"]');
    if (button) button.click();
  }

  function updateMap() {
    let done = 0;
    document.querySelectorAll(".rv-labels").forEach((panel) => {
      const pk = panel.dataset.stepPk;
      const overall = panel.dataset.overall;
      if (overall !== "") done += 1;
      const dot = document.querySelector('.rv-dot[data-step-pk="' + pk + '"]');
      if (dot) {
        dot.classList.remove("v1", "v0", "v-1");
        if (overall !== "") dot.classList.add("v" + overall);
      }
    });
    const progress = document.getElementById("rv-progress");
    if (progress) progress.textContent = String(done);
  }

  // Comments autosave after a pause; flush any pending one before leaving the page.
  function flushComments() {
    const pending = Array.from(document.querySelectorAll(".rv-comment textarea")).filter(
      (t) => t.value !== (t.dataset.saved || "")
    );
    return Promise.all(
      pending.map((t) => {
        const body = new URLSearchParams({ comment: t.value, behaviour: "" });
        return fetch(t.getAttribute("hx-post"), {
          method: "POST",
          headers: { "X-CSRFToken": csrf(), "HX-Request": "true" },
          body: body,
          credentials: "same-origin",
        }).then(() => { t.dataset.saved = t.value; });
      })
    );
  }

  // Autosaves still in flight must land before the page is left, or a label would be lost.
  let inflight = 0;
  document.body.addEventListener("htmx:beforeRequest", () => { inflight += 1; });
  document.body.addEventListener("htmx:afterRequest", () => { inflight = Math.max(0, inflight - 1); });
  function settled() {
    return new Promise((resolve) => {
      const started = Date.now();
      (function wait() {
        if (inflight === 0 || Date.now() - started > 5000) resolve();
        else setTimeout(wait, 30);
      })();
    });
  }

  let submitting = false;
  function submitAndNext() {
    const form = document.getElementById("submit-form");
    if (!form) {
      const note = document.querySelector(".rv-panel .muted");
      if (note) note.classList.add("rv-attention");
      return;
    }
    if (submitting) return;
    submitting = true;
    settled().then(flushComments).finally(() => form.submit());
  }

  document.addEventListener("keydown", (event) => {
    const target = event.target;
    const typing = target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT" || target.tagName === "SELECT");
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      submitAndNext();
      return;
    }
    if (typing) {
      if (event.key === "Escape") {
        target.blur();
        focusStep(current, false);
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    switch (event.key) {
      case "j": focusStep(current + 1); break;
      case "k": focusStep(current - 1); break;
      case "1": label(1); break;
      case "2": label(0); break;
      case "3": label(-1); break;
      case "b": if (steps[current]) cycleRow(steps[current]); break;
      case "r": {
        const details = steps[current] && steps[current].querySelector("details.rv-reasoning");
        if (details) details.open = !details.open;
        break;
      }
      case "c": {
        const area = steps[current] && steps[current].querySelector(".rv-comment textarea");
        if (area) { area.focus(); }
        break;
      }
      case "u": nextFocus(); break;
      case "?":
        if (help) { if (help.open) help.close(); else help.showModal(); }
        break;
      default:
        return;
    }
    event.preventDefault();
  });

  // htmx replaces a label panel on every save: restore its active row, then the step map.
  document.body.addEventListener("htmx:afterSwap", () => {
    document.querySelectorAll(".rv-labels").forEach((panel) => {
      const behaviour = activeBehaviour[panel.dataset.stepPk];
      if (behaviour === undefined) return;
      panel.querySelectorAll(".rv-label-row").forEach((r) => {
        r.classList.toggle("rv-row-active", r.dataset.behaviour === behaviour);
      });
      const details = panel.querySelector("details.rv-behaviours");
      if (details && behaviour) details.open = true;
    });
    updateMap();
  });
  document.body.addEventListener("htmx:afterRequest", (event) => {
    const el = event.detail.elt;
    if (el && el.tagName === "TEXTAREA" && event.detail.successful) el.dataset.saved = el.value;
  });
  document.addEventListener("click", (event) => {
    const step = event.target.closest && event.target.closest("section.rv-step");
    if (step) focusStep(steps.indexOf(step), false);
  });

  // Uncertainty queues route a few steps (data-focus-rank 0 = where the classifier is least
  // sure): open the page there, and `u` walks through them in that order.
  const focusOrder = steps
    .filter((s) => s.dataset.focusRank !== undefined)
    .sort((a, b) => Number(a.dataset.focusRank) - Number(b.dataset.focusRank))
    .map((s) => steps.indexOf(s));
  function nextFocus() {
    if (!focusOrder.length) return;
    const at = focusOrder.indexOf(current);
    focusStep(focusOrder[(at + 1) % focusOrder.length]);
  }

  const fromHash = steps.findIndex((s) => "#" + s.id === window.location.hash);
  if (fromHash >= 0) focusStep(fromHash, true);
  else if (focusOrder.length) focusStep(focusOrder[0], true);
  else focusStep(0, false);
  updateMap();
})();
