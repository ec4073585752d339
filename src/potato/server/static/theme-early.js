// Apply the saved theme before first paint so dark mode does not flash white (loaded in <head>).
(function () { var t = localStorage.getItem("potato-theme"); if (t) document.documentElement.dataset.theme = t; })();
