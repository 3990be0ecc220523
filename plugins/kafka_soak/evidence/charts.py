"""The soak report's charts (Altair / Vega-Lite): the program, the load, the lag and the anomalies on one time axis.

A person should see which toggle caused which anomaly, so every panel shares the x axis (UTC) and carries
the program's steps as vertical rules. Specs are plain Vega-Lite JSON; the page embeds them with the
Vega-Embed bundle that ``vl-convert-python`` ships, so a report opens offline.
"""

from __future__ import annotations

import itertools
from typing import Any

import altair as alt

from kafka_soak.evidence import LANES, STATE_COLORS, RunEvidence, instance_lane, lane_of
from kafka_soak.shared import resources

WIDTH = 900
BUCKETS = 300  # points per process and resource, whatever the run's length (the page stays light for a night)
HEALTH_COLORS = {"unexpected exit": "#b71c1c", "thread death": "#6a1b9a", "error": "#e65100",
                 "first exception": "#f9a825"}
SERIES_COLORS = {"input produced": "#1565c0", "in flight (produced − committed)": "#6a1b9a", "lag sampled": "#ef6c00"}


def _x(domain: list[float] | None = None, title: str | None = None) -> alt.X:
    """The time axis all panels share; its domain (the whole run) is set once, on the program panel."""
    scale = alt.Scale(type="utc", domain=domain) if domain else alt.Scale(type="utc")
    return alt.X("t:T", title=title, scale=scale, axis=alt.Axis(format="%H:%M:%S"))


def _steps_layer(evidence: RunEvidence) -> alt.Chart:
    """The program's steps as vertical rules at their actual time, with planned time and jitter on hover."""
    rows = [{"t": (s.get("actual_at") or s["planned_at"]) * 1000, "step": s["label"], "token": s["token"],
             "jitter_ms": s.get("jitter_ms"), "failed": s.get("failed", "")} for s in evidence.steps]
    return alt.Chart(alt.Data(values=rows)).mark_rule(strokeDash=[4, 3], color="#616161").encode(
        x=_x(), tooltip=["step:N", "token:N", "jitter_ms:Q", "failed:N"])


def program_chart(evidence: RunEvidence, domain: list[float]) -> alt.LayerChart:
    """Each instance's running and paused spans, broker outages, kills, what an upgrade moved a lane to (a
    release, a version), and the step labels on top."""
    spans = [{"lane": s.lane, "state": s.state, "t": s.start * 1000, "t2": s.end * 1000, "ended_by": s.ended_by,
              "seconds": round(s.end - s.start, 1)} for s in evidence.intervals()]
    kills = [{"lane": lane_of(e), "t": e["t"] * 1000, "what": LANES[e["event"]].mark}
             for e in evidence.events if e["event"] in LANES and LANES[e["event"]].mark]
    said = [{"lane": lane_of(e), "t": e["t"] * 1000, "text": LANES[e["event"]].label.format_map(e)}
            for e in evidence.events if e["event"] in LANES and LANES[e["event"]].label]
    troubles = health_points(evidence)
    lanes = sorted({s["lane"] for s in spans}, key=lambda lane: (lane.startswith("broker"), lane))
    y = alt.Y("lane:N", title=None, sort=lanes)
    bars = alt.Chart(alt.Data(values=spans)).mark_bar(height=14).encode(
        x=_x(domain), x2="t2:T", y=y,
        color=alt.Color("state:N", scale=alt.Scale(domain=list(STATE_COLORS), range=list(STATE_COLORS.values())),
                        legend=alt.Legend(title="state", orient="top")),
        tooltip=["lane:N", "state:N", alt.Tooltip("t:T", title="from", format="%H:%M:%S.%L"),
                 alt.Tooltip("t2:T", title="to", format="%H:%M:%S.%L"), "seconds:Q", "ended_by:N"])
    killed = alt.Chart(alt.Data(values=kills)).mark_point(shape="cross", size=160, color="#b71c1c", filled=True).encode(
        x=_x(), y=y, tooltip=["lane:N", "what:N"])
    # fill, not color: the bars' state colours are a scale of their own within this layer
    health = alt.Chart(alt.Data(values=troubles)).mark_point(shape="triangle-up", size=120, filled=True,
                                                             stroke="#212121", strokeWidth=0.5).encode(
        x=_x(), y=y, fill=alt.Fill("health:N", scale=alt.Scale(domain=list(HEALTH_COLORS),
                                                               range=list(HEALTH_COLORS.values())),
                                   legend=alt.Legend(title="app health", orient="top")),
        tooltip=["lane:N", "health:N", alt.Tooltip("t:T", format="%H:%M:%S.%L"), "what:N"])
    # what a step moved a lane to (a broker's release, an instance's version), beside the lane at the moment
    moved = alt.Chart(alt.Data(values=said)).mark_text(align="left", dx=4, dy=-9, fontSize=10, color="#0d47a1").encode(
        x=_x(), y=y, text="text:N", tooltip=["lane:N", "text:N"])
    labels = alt.Chart(alt.Data(values=[{"t": (s.get("actual_at") or s["planned_at"]) * 1000, "token": s["token"]}
                                        for s in evidence.steps])).mark_text(dy=-6, baseline="bottom", color="#424242").encode(
        x=_x(), y=alt.value(0), text="token:N")
    return alt.layer(bars, killed, health, moved, _steps_layer(evidence), labels).properties(
        width=WIDTH, height=max(60, 26 * len(lanes)), title="Program: instances and brokers")


def health_points(evidence: RunEvidence) -> list[dict[str, Any]]:
    """App health on the instances' lanes: each incident (unexpected exit, error-level event) and the first
    occurrence of each exception class."""
    health = evidence.health
    points = [{"lane": instance_lane(i), "t": i["at"] * 1000, "health": i["kind"].replace("_", " "),
               "what": i["what"]} for i in health.get("incidents", [])]
    points += [{"lane": instance_lane(seen["first"]), "t": seen["first"]["at"] * 1000,
                "health": "first exception", "what": f"{cls} (x{seen['count']}): {seen['first']['trace'][0][:200]}"}
               for cls, seen in health.get("exceptions", {}).items()]
    return points


def throughput_chart(evidence: RunEvidence) -> alt.LayerChart:
    """Records per second: the input as the generator produced it, the output by the instance that committed it."""
    produced = [{"t": r["t"] * 1000, "n": r["n"], "series": "input produced"} for r in evidence.timeline.get("produced", [])]
    committed = [{"t": r["t"] * 1000, "n": r["n"], "instance": f"instance {'?' if r['instance'] is None else r['instance']}"}
                 for r in evidence.timeline.get("committed", [])]  # ?: a team's app does not say which instance wrote
    y = alt.Y("n:Q", title="records/s")
    area = alt.Chart(alt.Data(values=committed)).mark_area(opacity=0.55, interpolate="step-after").encode(
        x=_x(), y=alt.Y("n:Q", title="records/s", stack="zero"),
        color=alt.Color("instance:N", legend=alt.Legend(title="output committed by", orient="top")),
        tooltip=[alt.Tooltip("t:T", format="%H:%M:%S"), "instance:N", alt.Tooltip("n:Q", title="records")])
    line = alt.Chart(alt.Data(values=produced)).mark_line(interpolate="step-after", color=SERIES_COLORS["input produced"]).encode(
        x=_x(), y=y, tooltip=[alt.Tooltip("t:T", format="%H:%M:%S"), alt.Tooltip("n:Q", title="input produced")])
    return alt.layer(area, line, _steps_layer(evidence)).properties(
        width=WIDTH, height=140, title="Throughput: input produced (line) and output committed per instance (area)")


def lag_chart(evidence: RunEvidence) -> alt.LayerChart:
    """Records produced but not yet committed, from record timestamps, and the group lag the drain sampled."""
    per_second: dict[int, int] = {}
    for r in evidence.timeline.get("produced", []):
        per_second[r["t"]] = per_second.get(r["t"], 0) + r["n"]
    for r in evidence.timeline.get("committed", []):
        per_second[r["t"]] = per_second.get(r["t"], 0) - r["n"]
    running = itertools.accumulate(per_second[t] for t in sorted(per_second))
    series = "in flight (produced − committed)"
    rows = [{"t": t * 1000, "lag": max(0, n), "series": series} for t, n in zip(sorted(per_second), running, strict=True)]
    rows += [{"t": s["t"] * 1000, "lag": s["lag"], "series": "lag sampled"} for s in evidence.lag_samples()]
    color = alt.Color("series:N", scale=alt.Scale(domain=[series, "lag sampled"],
                                                  range=[SERIES_COLORS[series], SERIES_COLORS["lag sampled"]]),
                      legend=alt.Legend(title=None, orient="top"))
    lines = alt.Chart(alt.Data(values=rows)).mark_line(interpolate="step-after", point=alt.OverlayMarkDef(size=12)).encode(
        x=_x(), y=alt.Y("lag:Q", title="records"), color=color,
        tooltip=[alt.Tooltip("t:T", format="%H:%M:%S"), "series:N", "lag:Q"])
    return alt.layer(lines, _steps_layer(evidence)).properties(
        width=WIDTH, height=120, title="Lag: records in flight (from timestamps) and the group's lag (sampled)")


def anomalies_chart(evidence: RunEvidence) -> alt.LayerChart:
    """Every record behind an anomaly (up to the checker's cap per anomaly) at the moment it was produced or
    processed, coloured by the instance that wrote it."""
    rows = [{"t": e["ts"], "anomaly": name, "instance": f"instance {e['instance']}" if e["instance"] else "(no output)",
             "partition": e["partition"], "id": e["id"], "key": e["key"], "detail": e.get("detail") or ""}
            for name, found in evidence.timeline.get("anomalies", {}).items() for e in found["events"]]
    points = alt.Chart(alt.Data(values=rows)).mark_point(filled=True, size=55, opacity=0.8).encode(
        x=_x(title="time (UTC)"), y=alt.Y("anomaly:N", title=None),
        color=alt.Color("instance:N", legend=alt.Legend(title="written by", orient="top")),
        shape=alt.Shape("anomaly:N", legend=None),
        tooltip=["anomaly:N", alt.Tooltip("t:T", format="%H:%M:%S.%L"), "instance:N", "partition:Q", "id:Q", "key:N",
                 "detail:N"])
    lanes = max(1, len({r["anomaly"] for r in rows}))
    return alt.layer(points, _steps_layer(evidence)).properties(
        width=WIDTH, height=40 + 30 * lanes, title="Anomalies: when each record was produced or processed, and by whom")


def resource_rows(evidence: RunEvidence, resource: str) -> list[dict[str, Any]]:
    """One resource of every process life, each cut to ``BUCKETS`` points (``resources.downsampled``: each bucket's
    low and high), so hours of samples draw as fast as minutes."""
    rows = []
    for (process, pid, _started), life in resources.lives(evidence.samples).items():
        points = [(s["at"], float(s[resource])) for s in life if s.get(resource) is not None]
        rows += [{"t": t * 1000, "low": low, "high": high, "process": process, "pid": pid}
                 for t, low, high in resources.downsampled(points, BUCKETS)]
    return rows


def resources_chart(evidence: RunEvidence, resource: str) -> alt.LayerChart:
    """What each process of the run used of ``resource`` over the run, a line per process (its high in each bucket)
    over the band down to its low; a restarted process is a new life of the same colour."""
    rows = resource_rows(evidence, resource)
    color = alt.Color("process:N", legend=alt.Legend(title="process", orient="right", columns=1))
    tooltip = [alt.Tooltip("t:T", format="%H:%M:%S"), "process:N", "pid:Q", "low:Q", "high:Q"]
    base = alt.Chart(alt.Data(values=rows)).encode(x=_x(), color=color, detail="pid:N", tooltip=tooltip)
    band = base.mark_area(opacity=0.2, clip=True).encode(y=alt.Y("low:Q", title=resources.LABELS[resource]), y2="high:Q")
    line = base.mark_line(interpolate="step-after", clip=True).encode(y="high:Q")
    return alt.layer(band, line, _steps_layer(evidence)).properties(
        width=WIDTH, height=110, title=f"Resources: {resources.LABELS[resource]} of each process")


def disk_chart(evidence: RunEvidence) -> alt.LayerChart:
    """The run directory's size and each broker's data, in MB."""
    rows = [{"t": d["at"] * 1000, "what": what.removesuffix("_mb").replace("_", " "), "mb": mb}
            for d in evidence.disk for what, mb in d.items() if what != "at"]
    lines = alt.Chart(alt.Data(values=rows)).mark_line(interpolate="step-after", clip=True).encode(
        x=_x(), y=alt.Y("mb:Q", title="MB"), color=alt.Color("what:N", legend=alt.Legend(title=None, orient="right")),
        tooltip=[alt.Tooltip("t:T", format="%H:%M:%S"), "what:N", "mb:Q"])
    return alt.layer(lines, _steps_layer(evidence)).properties(
        width=WIDTH, height=90, title="Disk: the run directory and each broker's data")


def timeline_spec(evidence: RunEvidence) -> dict[str, Any]:
    """The panels stacked on one time axis, as a Vega-Lite spec: the program, throughput, lag and anomalies, then
    what the run's processes used."""
    start = evidence.started_at or evidence.ended_at
    domain = [(start - 2) * 1000, (evidence.ended_at + 2) * 1000]
    panels = [program_chart(evidence, domain)]
    if evidence.timeline.get("produced"):
        panels += [throughput_chart(evidence), lag_chart(evidence)]
    if evidence.timeline.get("anomalies"):
        panels.append(anomalies_chart(evidence))
    panels += [resources_chart(evidence, resource) for resource in (*resources.JUDGED, "cpu")
               if any(s.get(resource) is not None for s in evidence.samples)]
    if evidence.disk:
        panels.append(disk_chart(evidence))
    return alt.vconcat(*panels, spacing=18).resolve_scale(x="shared", color="independent", shape="independent").to_dict()
