// hookrun web UI: the only script. On a live run's page it appends the
// log lines of the run's Server-Sent Events stream (the same stream as
// GET /api/v1/runs/:id/logs?follow=1) and refreshes the status, graph and
// steps block until the stream says the run ended. Text is set with textContent:
// log lines are untrusted.
(function () {
  "use strict";
  var summary = document.getElementById("summary");
  var id = summary && summary.getAttribute("data-live-run");
  if (!id || !window.EventSource) {
    return;
  }
  var base = "/runs/" + encodeURIComponent(id);
  var log = document.getElementById("log");
  var state = document.getElementById("live-state");

  function refresh() {
    return fetch(base + "/summary", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html !== null) { summary.innerHTML = html; } })
      .catch(function () {});
  }

  function append(line) {
    var row = document.createElement("span");
    row.className = "line " + (line.stream || "stdout");
    var sid = document.createElement("span");
    sid.className = "sid";
    sid.textContent = "[" + line.step_id + "]";
    row.appendChild(sid);
    row.appendChild(document.createTextNode(" " + line.text + "\n"));
    var atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    log.appendChild(row);
    if (atEnd) { log.scrollTop = log.scrollHeight; }
  }

  var timer = setInterval(refresh, 1500);
  var es = new EventSource(base + "/logs/stream");
  // Every (re)connection replays the run's stored lines from the start.
  es.addEventListener("open", function () { log.textContent = ""; });
  es.addEventListener("log", function (e) { append(JSON.parse(e.data)); });
  es.addEventListener("end", function (e) {
    es.close();
    clearInterval(timer);
    var status = JSON.parse(e.data).status;
    refresh().then(function () {
      summary.removeAttribute("data-live-run");
      if (state) { state.textContent = "ended: " + status; state.className = "live-dot done"; }
      document.body.setAttribute("data-run-ended", status);
    });
  });
})();
