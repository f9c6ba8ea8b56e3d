// The import page's drop zone: a dropped file goes into the form's file input, and its name shows.
(function () {
  "use strict";
  const zone = document.getElementById("rv-drop");
  const input = document.getElementById("import-file");
  const name = document.getElementById("import-name");
  if (!zone || !input) return;
  function shown() {
    const file = input.files && input.files[0];
    if (name) name.textContent = file ? file.name + " (" + file.size.toLocaleString() + " bytes)" : "";
  }
  ["dragenter", "dragover"].forEach((type) => zone.addEventListener(type, (event) => {
    event.preventDefault();
    zone.classList.add("over");
  }));
  ["dragleave", "drop"].forEach((type) => zone.addEventListener(type, () => zone.classList.remove("over")));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    if (!event.dataTransfer || !event.dataTransfer.files.length) return;
    input.files = event.dataTransfer.files;
    shown();
  });
  input.addEventListener("change", shown);
})();
