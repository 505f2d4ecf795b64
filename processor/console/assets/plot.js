// plot.js draws every <div class="plot" data-plot="ID"> of the page with
// uPlot (vendored under vendor/uplot), from the JSON data block
// <script type="application/json" id="ID">: {"title": ..., "x": [Unix
// seconds...], "series": [{"label": ..., "values": [...]}]}. A data block
// is not run, so the page needs no inline script. Once drawn, the div
// carries data-drawn="N" (the points drawn), and window.skillstreamPlots
// holds each chart by ID, for tests to read what was drawn.
(function () {
  "use strict";
  var colors = ["#1f5fbf", "#1e7b34", "#a4480b", "#7b3fb3", "#b3261e", "#0f7c86", "#5b6670", "#c2185b"];
  var plots = {};
  window.skillstreamPlots = plots;

  function draw(div) {
    var id = div.getAttribute("data-plot");
    var block = id && document.getElementById(id);
    if (!block || block.type !== "application/json") {
      div.textContent = "No data for this plot.";
      return;
    }
    var spec;
    try {
      spec = JSON.parse(block.textContent);
    } catch (e) {
      div.textContent = "The plot's data cannot be read: " + e.message;
      return;
    }
    var x = Array.isArray(spec.x) ? spec.x : [];
    var series = Array.isArray(spec.series) ? spec.series : [];
    var data = [x];
    var opts = {
      title: String(spec.title || ""),
      width: Math.max(320, div.clientWidth || 800),
      height: 220,
      scales: { x: { time: true } },
      axes: [{}, { size: 50 }],
      series: [{ label: "time (UTC)", value: function (u, v) { return v == null ? "" : new Date(v * 1000).toISOString().slice(0, 16).replace("T", " "); } }],
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"); }
    };
    series.forEach(function (s, i) {
      var values = Array.isArray(s.values) ? s.values : [];
      data.push(values);
      opts.series.push({ label: String(s.label || ""), stroke: colors[i % colors.length], width: 1.5, points: { show: x.length < 60 } });
    });
    plots[id] = new uPlot(opts, data, div);
    div.setAttribute("data-drawn", String(x.length));
  }

  function drawAll() {
    if (typeof uPlot === "undefined") {
      document.querySelectorAll("div.plot").forEach(function (div) { div.textContent = "The chart library did not load."; });
      return;
    }
    document.querySelectorAll("div.plot[data-plot]").forEach(draw);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", drawAll);
  } else {
    drawAll();
  }
})();
