// The dashboard's times in the reader's own time zone: short in the table (a phone's width holds it),
// the full date and time on hover.
document.querySelectorAll(".ts[data-ts]").forEach(function (td) {
  var ts = parseFloat(td.dataset.ts);
  if (!ts) return;
  var when = new Date(ts * 1000);
  td.textContent = when.toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
  td.title = when.toLocaleString();
});
