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

  // The current step is the label target: it follows the reviewer's eye (scrolling, a click in
  // the step map or in a step, j/k, the URL hash) and is always marked on the step and in the
  // side panel, so a number key never labels a step that is off screen.
  const currentName = document.getElementById("rv-current-step");
  let programmaticY = null; // where our own scrollIntoView left the page: not the reader's scroll

  function mark(i) {
    if (!steps.length) return;
    current = Math.max(0, Math.min(steps.length - 1, i));
    steps.forEach((s, j) => s.classList.toggle("current", j === current));
    document.querySelectorAll(".rv-dot").forEach((d, j) => {
      d.classList.toggle("current", j === current);
      if (j === current) d.setAttribute("aria-current", "step");
      else d.removeAttribute("aria-current");
    });
    if (currentName) currentName.textContent = steps[current].dataset.step;
  }

  function focusStep(i, scroll) {
    if (!steps.length) return;
    mark(i);
    const step = steps[current];
    if (scroll !== false) {
      step.scrollIntoView({ block: "start", behavior: "auto" });
      step.focus({ preventScroll: true });
      programmaticY = window.scrollY;
    }
  }

  // The step under the reading line (a third down the window), else the nearest one on screen.
  function stepOnScreen() {
    const line = window.innerHeight * 0.3;
    let above = -1;
    for (let j = 0; j < steps.length; j++) {
      if (steps[j].hidden) continue;
      const box = steps[j].getBoundingClientRect();
      if (box.bottom <= 0) continue;
      if (box.bottom > line) return box.top < window.innerHeight ? j : above;
      above = j;
    }
    return above;
  }

  let scrollQueued = false;
  window.addEventListener("scroll", () => {
    if (scrollQueued) return;
    scrollQueued = true;
    window.requestAnimationFrame(() => {
      scrollQueued = false;
      if (programmaticY !== null && Math.abs(window.scrollY - programmaticY) < 2) return;
      programmaticY = null;
      const on = stepOnScreen();
      if (on >= 0 && on !== current) mark(on);
    });
  }, { passive: true });

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

  // A key pressed while a save is still in flight or htmx is still swapping its answer in would
  // send the value the panel showed before that save, and the server would rightly refuse it as
  // a stale write: a label or an undo waits for the page to settle (the last one pressed wins).
  let queued = null;
  function saving() {
    return document.querySelector(".rv-labels.htmx-request, .rv-labels .htmx-request, .htmx-swapping, .htmx-settling") !== null;
  }
  function whenSettled(action) {
    if (saving()) queued = action;
    else action();
  }
  document.body.addEventListener("htmx:afterSettle", () => {
    if (!queued) return;
    // afterSettle fires for each settled element: look again once htmx is done with them all
    setTimeout(() => {
      if (!queued || saving()) return;
      const action = queued;
      queued = null;
      action();
    }, 0);
  });
  function label(value) {
    const step = steps[current];
    if (!step) return;
    whenSettled(() => {
      const row = activeRow(step);
      const button = row && row.querySelector('.rv-val[value="' + value + '"]');
      if (button) button.click();
    });
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
    const required = document.getElementById("rv-required-done");
    if (required) {
      required.textContent = String(
        steps.filter((s) => s.dataset.required).filter((s) => {
          const panel = s.querySelector(".rv-labels");
          return panel && panel.dataset.overall !== "";
        }).length
      );
    }
  }

  // Long traces: show only some steps (the filter) and collapse every step to its head and
  // labels. Hidden steps are skipped by j/k and by the scroll-following target.
  const FILTERS = {
    all: () => true,
    findings: (s) => s.classList.contains("flagged"),
    unlabelled: (s) => {
      const panel = s.querySelector(".rv-labels");
      return !panel || panel.dataset.overall === "";
    },
    uncertain: (s) => s.dataset.focusRank !== undefined,
    required: (s) => Boolean(s.dataset.required),
  };
  const show = document.getElementById("rv-show");
  if (show) {
    show.addEventListener("change", () => {
      const keep = FILTERS[show.value] || FILTERS.all;
      const dots = document.querySelectorAll(".rv-dot");
      steps.forEach((s, j) => {
        s.hidden = !keep(s);
        if (dots[j]) dots[j].classList.toggle("dim", s.hidden);
      });
      const first = steps.findIndex((s) => !s.hidden);
      if (steps[current] && steps[current].hidden && first >= 0) focusStep(first, true);
      show.blur();
    });
  }
  const collapse = document.getElementById("rv-collapse");
  const main = document.querySelector(".rv-main");
  if (collapse && main) {
    collapse.addEventListener("click", () => {
      const on = main.classList.toggle("rv-collapsed");
      collapse.setAttribute("aria-pressed", String(on));
      collapse.textContent = on ? "Expand all" : "Collapse all";
      if (steps[current]) focusStep(current, true);
    });
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

  // The key map is the help dialog's table, rendered from review/keys.py: one list for the
  // legend, the README and this handler.
  const keymap = {};
  document.querySelectorAll("#rv-help [data-key]").forEach((row) => {
    keymap[row.dataset.key] = row.dataset.action;
  });
  const jump = document.getElementById("rv-jump");

  function run(action) {
    const step = steps[current];
    if (action.startsWith("label:")) { label(Number(action.slice(6))); return true; }
    switch (action) {
      case "next": focusStep(nextShown(current, 1)); return true;
      case "previous": focusStep(nextShown(current, -1)); return true;
      case "cycle-row": if (step) cycleRow(step); return true;
      case "reasoning": {
        const details = step && step.querySelector("details.rv-reasoning");
        if (details) details.open = !details.open;
        return true;
      }
      case "comment": {
        const area = step && step.querySelector(".rv-comment textarea");
        if (area) area.focus();
        return true;
      }
      case "focus": nextFocus(); return true;
      case "jump": if (jump) { jump.focus(); jump.select(); } return true;
      case "submit": submitAndNext(); return true;
      case "undo": whenSettled(undo); return true;
      case "help": if (help) { if (help.open) help.close(); else help.showModal(); } return true;
      default: return false;
    }
  }

  document.addEventListener("keydown", (event) => {
    const target = event.target;
    const typing = target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT" || target.tagName === "SELECT");
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      run(keymap["Ctrl+Enter"] || "submit");
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
    const action = keymap[event.key];
    if (action && run(action)) event.preventDefault();
  });

  // Steps hidden by the panel's filter are skipped by j/k.
  function nextShown(from, delta) {
    for (let j = from + delta; j >= 0 && j < steps.length; j += delta) {
      if (!steps[j].hidden) return j;
    }
    return from;
  }

  // The step map and jump-to-step move the label target to the step they show.
  document.addEventListener("click", (event) => {
    const dot = event.target.closest && event.target.closest("a.rv-dot");
    if (!dot) return;
    const at = steps.findIndex((s) => "#" + s.id === dot.getAttribute("href"));
    if (at < 0) return;
    event.preventDefault();
    if (steps[at].hidden) steps[at].hidden = false;
    focusStep(at, true);
    history.replaceState(null, "", dot.getAttribute("href"));
  });
  window.addEventListener("hashchange", () => {
    const at = steps.findIndex((s) => "#" + s.id === window.location.hash);
    if (at >= 0) focusStep(at, true);
  });
  const jumpForm = document.getElementById("rv-jump-form");
  if (jumpForm && jump) {
    jumpForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const at = steps.findIndex((s) => s.dataset.step === jump.value.trim());
      jump.setCustomValidity(at < 0 ? "no step " + jump.value : "");
      if (at < 0) { jump.reportValidity(); return; }
      steps[at].hidden = false;
      jump.blur();
      focusStep(at, true);
    });
  }

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
    if (!step) return;
    focusStep(steps.indexOf(step), false);
    programmaticY = window.scrollY; // the reader chose this step here: it holds until they scroll
  });

  // Undo: every label this page saved is remembered (step, row, value before, value after);
  // `z` puts the last one back through the same autosave, so the server's stale-write check and
  // the audit log see it like any other change, and the target moves to the step it changes.
  const undoStack = [];
  const undoButton = document.getElementById("rv-undo");
  let undoing = null;
  function undoState() {
    if (!undoButton) return;
    undoButton.disabled = undoStack.length === 0;
    const last = undoStack[undoStack.length - 1];
    undoButton.title = last ? "step " + last.index + " back to " + shown(last.before) : "nothing to undo yet";
  }
  function shown(value) {
    return value === "" ? "no label" : value === "1" ? "+1" : value === "-1" ? "−1" : value;
  }
  function expectedOf(row) {
    try {
      return String(JSON.parse(row.getAttribute("hx-vals") || "{}").expected || "");
    } catch (e) {
      return "";
    }
  }
  // What a label button changes is read before the request (its answer replaces the panel),
  // and found again by the request itself.
  const pending = new WeakMap();
  document.body.addEventListener("htmx:beforeRequest", (event) => {
    const el = event.detail.elt;
    if (!el || !el.matches || !el.matches(".rv-val, .rv-clear")) return;
    const row = el.closest(".rv-label-row");
    const step = el.closest("section.rv-step");
    const panel = el.closest(".rv-labels");
    if (!row || !step || !panel) return;
    pending.set(event.detail.xhr, {
      pk: panel.dataset.stepPk,
      index: step.dataset.step,
      behaviour: row.dataset.behaviour,
      before: expectedOf(row),
      after: el.value,
    });
  });
  document.body.addEventListener("htmx:afterRequest", (event) => {
    const xhr = event.detail.xhr;
    const change = xhr && pending.get(xhr);
    if (!change) return;
    pending.delete(xhr);
    const refused = !event.detail.successful || (xhr && xhr.responseText.indexOf("rv-stale") >= 0);
    const wasUndo = undoing;
    undoing = null;
    if (refused) { undoState(); return; }
    if (wasUndo) {
      const status = document.getElementById("status-" + wasUndo.pk);
      if (status) status.textContent = "undone: back to " + shown(wasUndo.before);
    } else if (change.before !== change.after) {
      undoStack.push(change);
    }
    undoState();
  });
  function undo() {
    if (undoing || !undoStack.length) return;
    const last = undoStack[undoStack.length - 1];
    const panel = document.getElementById("labels-" + last.pk);
    const row = panel && Array.from(panel.querySelectorAll(".rv-label-row")).find(
      (r) => r.dataset.behaviour === last.behaviour
    );
    if (!row) return;
    const button = last.before === ""
      ? row.querySelector(".rv-clear")
      : row.querySelector('.rv-val[value="' + last.before + '"]');
    const at = steps.indexOf(panel.closest("section.rv-step"));
    if (at >= 0) { steps[at].hidden = false; focusStep(at, true); }
    if (!button || button.disabled) return; // a submitted review is final: nothing changes
    undoStack.pop();
    undoing = last;
    button.click();
  }
  if (undoButton) undoButton.addEventListener("click", () => whenSettled(undo));

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
