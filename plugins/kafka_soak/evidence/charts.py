"""The soak report's charts (Altair / Vega-Lite): the program, the load, the lag and the anomalies on one time axis.

A person should see which toggle caused which anomaly, so every panel shares the x axis (UTC) and carries
the program's steps as vertical rules. Specs are plain Vega-Lite JSON; the page embeds them with the
Vega-Embed bundle that ``vl-convert-python`` ships, so a report opens offline.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import altair as alt

from kafka_soak.evidence import LANES, STATE_COLORS, RunEvidence, instance_lane, lane_of
from kafka_soak.shared import resources

WIDTH = 900
# Points a series draws whatever the run's length, so that the page of a night is as light and quick as a minute's:
# the throughput, lag and disk (one point a second up to BUCKETS seconds, a bucket beyond).
BUCKETS = 300
# Points a process life draws on each resource panel over the whole run: a line per life on five panels is the page's
# heaviest part, and a leak is a slope, which half the points show as well.
RESOURCE_BUCKETS = BUCKETS // 2
HEALTH_COLORS = {"unexpected exit": "#b71c1c", "thread death": "#6a1b9a", "error": "#e65100",
                 "first exception": "#f9a825"}
SERIES_COLORS = {"input produced": "#1565c0", "in flight (produced − committed)": "#6a1b9a", "lag sampled": "#ef6c00"}


class Datasets(dict[str, list[dict[str, Any]]]):
    """The rows of a spec's panels by name. A panel names its rows (Vega-Lite's top-level ``datasets``), so the page
    holds them once however many panels draw them (the program's steps are on every panel), and Altair never holds
    them: it deep-copies a chart's inline rows at each step of building it, minutes for a night's."""

    def named(self, name: str, rows: list[dict[str, Any]]) -> alt.NamedData:
        self.setdefault(name, rows)
        return alt.NamedData(name=name)


def _x(domain: list[float] | None = None, title: str | None = None) -> alt.X:
    """The time axis all panels share; its domain (the whole run) is set once, on the program panel."""
    scale = alt.Scale(type="utc", domain=domain) if domain else alt.Scale(type="utc")
    return alt.X("t:T", title=title, scale=scale, axis=alt.Axis(format="%H:%M:%S"))


def acting(evidence: RunEvidence) -> list[dict[str, Any]]:
    """The steps that do something (a night's program is mostly no-ops between its faults, which would grey the
    panels over and hide the faults' labels)."""
    return [s for s in evidence.steps if s["action"] != "noop"]


def _steps_layer(evidence: RunEvidence, data: Datasets) -> alt.Chart:
    """The program's steps that act as vertical rules at their actual time, with planned time and jitter on hover."""
    rows = [{"t": (s.get("actual_at") or s["planned_at"]) * 1000, "step": s["label"], "token": s["token"],
             "jitter_ms": s.get("jitter_ms"), "failed": s.get("failed", "")} for s in acting(evidence)]
    return alt.Chart(data.named("steps", rows)).mark_rule(strokeDash=[4, 3], color="#616161").encode(
        x=_x(), tooltip=["step:N", "token:N", "jitter_ms:Q", "failed:N"])


def program_chart(evidence: RunEvidence, data: Datasets, domain: list[float]) -> alt.LayerChart:
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
    bars = alt.Chart(data.named("spans", spans)).mark_bar(height=14).encode(
        x=_x(domain), x2="t2:T", y=y,
        color=alt.Color("state:N", scale=alt.Scale(domain=list(STATE_COLORS), range=list(STATE_COLORS.values())),
                        legend=alt.Legend(title="state", orient="top")),
        tooltip=["lane:N", "state:N", alt.Tooltip("t:T", title="from", format="%H:%M:%S.%L"),
                 alt.Tooltip("t2:T", title="to", format="%H:%M:%S.%L"), "seconds:Q", "ended_by:N"])
    killed = alt.Chart(data.named("kills", kills)).mark_point(shape="cross", size=160, color="#b71c1c", filled=True).encode(
        x=_x(), y=y, tooltip=["lane:N", "what:N"])
    # fill, not color: the bars' state colours are a scale of their own within this layer
    health = alt.Chart(data.named("health", troubles)).mark_point(shape="triangle-up", size=120, filled=True,
                                                             stroke="#212121", strokeWidth=0.5).encode(
        x=_x(), y=y, fill=alt.Fill("health:N", scale=alt.Scale(domain=list(HEALTH_COLORS),
                                                               range=list(HEALTH_COLORS.values())),
                                   legend=alt.Legend(title="app health", orient="top")),
        tooltip=["lane:N", "health:N", alt.Tooltip("t:T", format="%H:%M:%S.%L"), "what:N"])
    # what a step moved a lane to (a broker's release, an instance's version), beside the lane at the moment
    moved = alt.Chart(data.named("moved", said)).mark_text(align="left", dx=4, dy=-9, fontSize=10, color="#0d47a1").encode(
        x=_x(), y=y, text="text:N", tooltip=["lane:N", "text:N"])
    tokens = [{"t": (s.get("actual_at") or s["planned_at"]) * 1000, "token": s["token"]} for s in acting(evidence)]
    # upright while they fit side by side, on end beyond (a night's faults), each still under its rule
    upright = len(tokens) * 40 <= WIDTH
    labels = alt.Chart(data.named("labels", tokens)).mark_text(
        dy=-6 if upright else -4, baseline="bottom" if upright else "middle", align="center" if upright else "left",
        angle=0 if upright else 270, fontSize=11 if upright else 9, color="#424242").encode(
        x=_x(), y=alt.value(0), text="token:N")
    return alt.layer(bars, killed, health, moved, _steps_layer(evidence, data), labels).properties(
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


def bucket_s(evidence: RunEvidence, buckets: int = BUCKETS) -> int:
    """The seconds a point of a panel stands for: one up to ``buckets`` seconds of run."""
    return max(1, math.ceil((evidence.ended_at - (evidence.started_at or evidence.ended_at)) / buckets))


def summed(rows: list[dict[str, Any]], width: int, key: str | None = None) -> dict[tuple[int, Any], int]:
    """The records of per-second ``rows`` (``t``, ``n``) summed per bucket of ``width`` seconds (and per ``key``)."""
    sums: dict[tuple[int, Any], int] = {}
    for r in rows:
        at = (r["t"] // width * width, r.get(key) if key else None)
        sums[at] = sums.get(at, 0) + r["n"]
    return sums


def throughput_chart(evidence: RunEvidence, data: Datasets) -> alt.LayerChart:
    """Records per second: the input as the generator produced it, the output by the instance that committed it
    (averaged over ``bucket_s``)."""
    width = bucket_s(evidence)
    produced = [{"t": t * 1000, "n": round(n / width, 1), "series": "input produced"}
                for (t, _), n in summed(evidence.timeline.get("produced", []), width).items()]
    committed = [{"t": t * 1000, "n": round(n / width, 1), "instance": f"instance {'?' if i is None else i}"}
                 for (t, i), n in summed(evidence.timeline.get("committed", []), width, "instance").items()]
    # ?: a team's app does not say which instance wrote
    y = alt.Y("n:Q", title="records/s")
    area = alt.Chart(data.named("committed", committed)).mark_area(opacity=0.55, interpolate="step-after").encode(
        x=_x(), y=alt.Y("n:Q", title="records/s", stack="zero"),
        color=alt.Color("instance:N", legend=alt.Legend(title="output committed by", orient="top")),
        tooltip=[alt.Tooltip("t:T", format="%H:%M:%S"), "instance:N", alt.Tooltip("n:Q", title="records/s")])
    line = alt.Chart(data.named("produced", produced)).mark_line(interpolate="step-after",
                                                                 color=SERIES_COLORS["input produced"]).encode(
        x=_x(), y=y, tooltip=[alt.Tooltip("t:T", format="%H:%M:%S"), alt.Tooltip("n:Q", title="input produced")])
    return alt.layer(area, line, _steps_layer(evidence, data)).properties(
        width=WIDTH, height=140, title="Throughput: input produced (line) and output committed per instance (area)")


def lag_chart(evidence: RunEvidence, data: Datasets) -> alt.LayerChart:
    """Records produced but not yet committed, from record timestamps (the highest of each ``bucket_s``), and the
    group lag the drain sampled."""
    per_second: dict[int, int] = {}
    for r in evidence.timeline.get("produced", []):
        per_second[r["t"]] = per_second.get(r["t"], 0) + r["n"]
    for r in evidence.timeline.get("committed", []):
        per_second[r["t"]] = per_second.get(r["t"], 0) - r["n"]
    running = itertools.accumulate(per_second[t] for t in sorted(per_second))
    series, width, highest = "in flight (produced − committed)", bucket_s(evidence), {}
    for t, n in zip(sorted(per_second), running, strict=True):
        at = t // width * width
        highest[at] = max(highest.get(at, 0), n)
    rows = [{"t": t * 1000, "lag": n, "series": series} for t, n in highest.items()]
    rows += [{"t": s["t"] * 1000, "lag": s["lag"], "series": "lag sampled"} for s in evidence.lag_samples()]
    color = alt.Color("series:N", scale=alt.Scale(domain=[series, "lag sampled"],
                                                  range=[SERIES_COLORS[series], SERIES_COLORS["lag sampled"]]),
                      legend=alt.Legend(title=None, orient="top"))
    tooltip = [alt.Tooltip("t:T", format="%H:%M:%S"), "series:N", "lag:Q"]
    base = alt.Chart(data.named("lag", rows)).encode(x=_x(), y=alt.Y("lag:Q", title="records"), color=color,
                                                      tooltip=tooltip)
    # A point marks each sample the drain took; the in-flight series is a line of buckets, whose points would only
    # cost the page a mark each.
    samples = base.mark_point(filled=True, size=12).transform_filter(alt.datum.series == "lag sampled")
    return alt.layer(base.mark_line(interpolate="step-after"), samples, _steps_layer(evidence, data)).properties(
        width=WIDTH, height=120, title="Lag: records in flight (from timestamps) and the group's lag (sampled)")


def anomalies_chart(evidence: RunEvidence, data: Datasets) -> alt.LayerChart:
    """Every record behind an anomaly (up to the checker's cap per anomaly) at the moment it was produced or
    processed, coloured by the instance that wrote it."""
    rows = [{"t": e["ts"], "anomaly": name, "instance": f"instance {e['instance']}" if e["instance"] else "(no output)",
             "partition": e["partition"], "id": e["id"], "key": e["key"], "detail": e.get("detail") or ""}
            for name, found in evidence.timeline.get("anomalies", {}).items() for e in found["events"]]
    points = alt.Chart(data.named("anomalies", rows)).mark_point(filled=True, size=55, opacity=0.8).encode(
        x=_x(title="time (UTC)"), y=alt.Y("anomaly:N", title=None),
        color=alt.Color("instance:N", legend=alt.Legend(title="written by", orient="top")),
        shape=alt.Shape("anomaly:N", legend=None),
        tooltip=["anomaly:N", alt.Tooltip("t:T", format="%H:%M:%S.%L"), "instance:N", "partition:Q", "id:Q", "key:N",
                 "detail:N"])
    lanes = max(1, len({r["anomaly"] for r in rows}))
    return alt.layer(points, _steps_layer(evidence, data)).properties(
        width=WIDTH, height=40 + 30 * lanes, title="Anomalies: when each record was produced or processed, and by whom")


def resource_rows(evidence: RunEvidence) -> list[dict[str, Any]]:
    """Every process life cut into the run's ``RESOURCE_BUCKETS`` (on one grid for all lives), a row each with
    each resource's low and high in it (``rss_mb_low``, ``rss_mb_high``, ...): so hours of samples draw as fast as
    minutes, a night's restarts cost rows for the time each life ran (not ``RESOURCE_BUCKETS`` a life), and every
    resource's panel draws from this one dataset, which the page holds once."""
    rows = []
    width = bucket_s(evidence, RESOURCE_BUCKETS)
    for (process, pid, _started), life in resources.lives(evidence.samples).items():
        buckets: dict[int, list[dict[str, Any]]] = {}
        for sample in life:
            buckets.setdefault(int(sample["at"] // width), []).append(sample)
        for group in buckets.values():
            row: dict[str, Any] = {"t": group[0]["at"] * 1000, "process": process, "pid": pid}
            for resource in resources.DRAWN:
                values = [float(s[resource]) for s in group if s.get(resource) is not None]
                if values:
                    row[f"{resource}_low"], row[f"{resource}_high"] = min(values), max(values)
            rows.append(row)
    return rows


def resources_chart(evidence: RunEvidence, data: Datasets, rows: list[dict[str, Any]], resource: str) -> alt.LayerChart:
    """What each process of the run used of ``resource`` over the run (``rows``: ``resource_rows``), a line per
    process life (its high in each bucket; the low is in the tooltip); a restarted process is a new life of the same
    colour. A leak is a rising line, which the highs show; a band down to the lows under each line doubled the marks
    of the page's heaviest part, to show only a collector's saw-tooth."""
    low, high = f"{resource}_low", f"{resource}_high"
    color = alt.Color("process:N", legend=alt.Legend(title="process", orient="right", columns=1))
    tooltip = [alt.Tooltip("t:T", format="%H:%M:%S"), "process:N", "pid:Q", alt.Tooltip(f"{low}:Q", title="low"),
               alt.Tooltip(f"{high}:Q", title="high")]
    line = alt.Chart(data.named("resources", rows)).transform_filter(f"isValid(datum.{high})").mark_line(
        interpolate="step-after", clip=True).encode(x=_x(), y=alt.Y(f"{high}:Q", title=resources.LABELS[resource]),
                                                    color=color, detail="pid:N", tooltip=tooltip)
    return alt.layer(line, _steps_layer(evidence, data)).properties(
        width=WIDTH, height=110, title=f"Resources: {resources.LABELS[resource]} of each process")


def disk_chart(evidence: RunEvidence, data: Datasets) -> alt.LayerChart:
    """The run directory's size and each broker's data, in MB (the highest of each of ``BUCKETS`` buckets)."""
    series: dict[str, list[tuple[float, float]]] = {}
    for d in evidence.disk:
        for what, mb in d.items():
            if what != "at":
                series.setdefault(what.removesuffix("_mb").replace("_", " "), []).append((d["at"], mb))
    rows = [{"t": t * 1000, "what": what, "mb": high} for what, points in series.items()
            for t, _low, high in resources.downsampled(points, BUCKETS)]
    lines = alt.Chart(data.named("disk", rows)).mark_line(interpolate="step-after", clip=True).encode(
        x=_x(), y=alt.Y("mb:Q", title="MB"), color=alt.Color("what:N", legend=alt.Legend(title=None, orient="right")),
        tooltip=[alt.Tooltip("t:T", format="%H:%M:%S"), "what:N", "mb:Q"])
    return alt.layer(lines, _steps_layer(evidence, data)).properties(
        width=WIDTH, height=90, title="Disk: the run directory and each broker's data")


def timeline_spec(evidence: RunEvidence) -> dict[str, Any]:
    """The panels stacked on one time axis, as a Vega-Lite spec: the program, throughput, lag and anomalies, then
    what the run's processes used; their rows in its ``datasets``."""
    start = evidence.started_at or evidence.ended_at
    domain = [(start - 2) * 1000, (evidence.ended_at + 2) * 1000]
    data = Datasets()
    panels = [program_chart(evidence, data, domain)]
    if evidence.timeline.get("produced"):
        panels += [throughput_chart(evidence, data), lag_chart(evidence, data)]
    if evidence.timeline.get("anomalies"):
        panels.append(anomalies_chart(evidence, data))
    rows = resource_rows(evidence)
    panels += [resources_chart(evidence, data, rows, resource) for resource in resources.DRAWN
               if any(f"{resource}_high" in row for row in rows)]
    if evidence.disk:
        panels.append(disk_chart(evidence, data))
    spec = alt.vconcat(*panels, spacing=18).resolve_scale(x="shared", color="independent", shape="independent").to_dict()
    return {**spec, "datasets": {**spec.get("datasets", {}), **data}}
