// Dark mode toggle shared by every page; the choice persists in localStorage.
(function () {
  function toggle() {
    var root = document.documentElement;
    var dark = root.dataset.theme ? root.dataset.theme === "dark"
      : window.matchMedia("(prefers-color-scheme: dark)").matches;
    root.dataset.theme = dark ? "light" : "dark";
    localStorage.setItem("potato-theme", root.dataset.theme);
  }
  var button = document.getElementById("theme-toggle");
  if (button) button.addEventListener("click", toggle);
  window.potatoToggleTheme = toggle;
})();
