// The dashboard's times in the reader's own time zone.
document.querySelectorAll("td.ts[data-ts]").forEach(function (td) {
  var ts = parseFloat(td.dataset.ts); if (ts) td.textContent = new Date(ts * 1000).toLocaleString();
});
