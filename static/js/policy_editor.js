// The policy editor's rule index: search and menus narrow it; a rule opens by its anchor.
(function () {
  "use strict";
  const search = document.getElementById("rule-search");
  const menus = Array.from(document.querySelectorAll("#rule-index select[data-facet]"));
  const shown = document.getElementById("rule-shown");

  function apply() {
    const words = (search ? search.value : "").trim().toLowerCase();
    let count = 0;
    const entries = Array.from(document.querySelectorAll("tr.rule-entry"));
    entries.forEach(function (row) {
      const ok = (!words || row.dataset.words.includes(words)) &&
        menus.every(function (menu) { return !menu.value || row.dataset[menu.dataset.facet] === menu.value; });
      row.classList.toggle("hidden", !ok);
      if (ok) count += 1;
    });
    if (shown) shown.textContent = count + " of " + entries.length + " shown";
  }

  if (search) search.addEventListener("input", apply);
  menus.forEach(function (menu) { menu.addEventListener("change", apply); });
  apply();
})();
