// mcpjail registry index: search and sort the records table. Dependency-free; works from
// file:// and any static host. Reads cell data from data-key attributes and never writes
// HTML, so nothing a record holds is ever interpreted as markup.
(function () {
  "use strict";
  var table = document.getElementById("records");
  if (!table) return;
  var body = table.tBodies[0];
  var search = document.getElementById("search");
  var count = document.getElementById("count");

  function key(row, col) {
    var cell = row.cells[col];
    return cell ? (cell.getAttribute("data-key") || cell.textContent || "") : "";
  }

  function filter() {
    var terms = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    Array.prototype.forEach.call(body.rows, function (row) {
      var text = row.textContent.toLowerCase();
      var match = terms.every(function (t) { return text.indexOf(t) !== -1; });
      row.hidden = !match;
      if (match) shown += 1;
    });
    count.textContent = shown + (shown === 1 ? " record" : " records");
  }

  function sortBy(col, th) {
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
      h.setAttribute("aria-sort", "none");
    });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a, col), y = key(b, col);
      var c = x < y ? -1 : x > y ? 1 : 0;
      return ascending ? c : -c;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }

  search.addEventListener("input", filter);
  Array.prototype.forEach.call(table.tHead.querySelectorAll("button[data-col]"), function (button) {
    button.addEventListener("click", function () {
      sortBy(Number(button.getAttribute("data-col")), button.parentNode);
    });
  });
  filter();
})();
