#!/usr/bin/env python3
"""Draws docs/grafana/fcm.json as an HTML page from a real Prometheus: every panel's own
queries (`targets[].expr`, with Grafana's `$__rate_interval` filled in) are evaluated by
the Prometheus HTTP API over the given time range, and drawn by panel type (stat,
timeseries, state-timeline, bargauge) at the dashboard's grid positions, in Grafana's
dark colours. It is not Grafana (which cannot be installed here): the page says so at the
bottom. Usage:
  render-dashboard.py PROMETHEUS_URL START END RATE_INTERVAL DASHBOARD.json > page.html
(START and END in Unix seconds.)
"""
import html
import json
import math
import sys
import time
import urllib.parse
import urllib.request

PALETTE = ["#73bf69", "#f2cc0c", "#8ab8ff", "#ff780a", "#f2495c", "#5794f2", "#b877d9",
           "#705da0", "#37872d", "#fade2a", "#3274d9", "#ff9830"]
NAMED = {"green": "#73bf69", "yellow": "#fade2a", "orange": "#ff9830", "red": "#f2495c",
         "blue": "#5794f2", "purple": "#b877d9"}
COL, ROW, GAP = 64, 36, 8  # px per grid column and row, gap between panels


def query(prom, expr, start, end, step, instant):
    if instant:
        params = {"query": expr, "time": end}
        path = "/api/v1/query"
    else:
        params = {"query": expr, "start": start, "end": end, "step": step}
        path = "/api/v1/query_range"
    url = prom + path + "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=30) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise SystemExit(f"Prometheus refused {expr!r}: {body}")
    return body["data"]["result"]


def _fill(fmt, labels):
    """A legend format (`{{model}} {{result}}`) with the series' labels."""
    out, rest = "", fmt
    while "{{" in rest:
        a, b = rest.split("{{", 1)
        name, rest = b.split("}}", 1)
        out += a + labels.get(name.strip(), "")
    return out + rest


def fmt_value(v, unit, decimals=None):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if unit == "percentunit":
        return f"{v * 100:.{1 if decimals is None else decimals}f}%"
    if unit == "s":
        if v < 1:
            return f"{v * 1000:.0f} ms"
        return f"{v:.2f} s"
    if unit == "bytes":
        for scale, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
            if abs(v) >= scale:
                return f"{v / scale:.1f} {name}"
        return f"{v:.0f} B"
    if unit == "reqps":
        return f"{v:.{2 if decimals is None else decimals}f} req/s"
    if abs(v) >= 10000:
        return f"{v / 1000:.1f}K"
    if float(v).is_integer():
        return f"{int(v)}"
    return f"{v:.{2 if decimals is None else decimals}f}"


def threshold_colour(field, v):
    steps = field.get("defaults", {}).get("thresholds", {}).get("steps")
    if not steps or v is None:
        return "#73bf69"
    colour = steps[0]["color"]
    for s in steps[1:]:
        if s["value"] is not None and v >= s["value"]:
            colour = s["color"]
    return NAMED.get(colour, colour)


def series_of(results):
    out = []
    for r in results:
        values = r.get("values") or ([r["value"]] if "value" in r else [])
        pts = [(float(t), float(v)) for t, v in values if v not in ("NaN", "+Inf", "-Inf")]
        out.append((r["metric"], pts))
    return out


def panel_box(p, body):
    g = p["gridPos"]
    style = (f"left:{g['x'] * COL + GAP}px;top:{g['y'] * ROW + 64}px;"
             f"width:{g['w'] * COL - GAP}px;height:{g['h'] * ROW - GAP}px")
    return (f'<div class="panel" style="{style}"><div class="title">{html.escape(p["title"])}'
            f'</div><div class="body">{body}</div></div>')


def draw_stat(p, data, unit):
    pts = data[0][1][0][1] if data and data[0][1] else []
    v = pts[-1][1] if pts else None
    colour = threshold_colour(p.get("fieldConfig", {}), v)
    decimals = p.get("fieldConfig", {}).get("defaults", {}).get("decimals")
    spark = ""
    if len(pts) > 1:
        w, h = p["gridPos"]["w"] * COL - GAP - 20, 40
        lo = min(y for _, y in pts)
        hi = max(y for _, y in pts)
        t0, t1 = pts[0][0], pts[-1][0]
        xy = " ".join(f"{(t - t0) / max(t1 - t0, 1) * w:.1f},{h - (y - lo) / max(hi - lo, 1e-9) * h:.1f}"
                      for t, y in pts)
        spark = (f'<svg class="spark" width="{w}" height="{h}"><polyline points="{xy}" '
                 f'fill="none" stroke="{colour}" stroke-opacity=".5" stroke-width="2"/></svg>')
    return (f'<div class="stat" style="color:{colour}">{html.escape(fmt_value(v, unit, decimals))}</div>'
            + spark)


def nice_max(v):
    if v <= 0:
        return 1
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * e:
            return m * e
    return 10 * e


def draw_timeseries(p, data, unit, start, end):
    w = p["gridPos"]["w"] * COL - GAP - 20
    h = p["gridPos"]["h"] * ROW - GAP - 100
    left = 70
    lines, legends, hi = [], [], 0.0
    n = 0
    for (fmt, series) in data:
        for labels, pts in series:
            if pts:
                hi = max(hi, max(y for _, y in pts))
    top = nice_max(hi * 1.1)
    grid = []
    for i in range(5):
        y = h - i * h / 4
        grid.append(f'<line x1="{left}" x2="{w}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                    f'<text x="{left - 6}" y="{y + 4:.1f}" class="axis" text-anchor="end">'
                    f'{html.escape(fmt_value(top * i / 4, unit))}</text>')
    for i in range(5):
        t = start + (end - start) * i / 4
        x = left + (w - left) * i / 4
        label = time.strftime("%H:%M:%S", time.gmtime(t))
        anchor = "start" if i == 0 else "end" if i == 4 else "middle"
        grid.append(f'<text x="{x:.1f}" y="{h + 16}" class="axis" text-anchor="{anchor}">{label}</text>')
    fixed = {}
    for o in p.get("fieldConfig", {}).get("overrides", []):
        if o["matcher"]["id"] == "byName":
            for prop in o["properties"]:
                if prop["id"] == "color":
                    c = prop["value"].get("fixedColor", "")
                    fixed[o["matcher"]["options"]] = NAMED.get(c, c)
    for (fmt, series) in data:
        for labels, pts in series:
            colour = fixed.get(_fill(fmt, labels), PALETTE[n % len(PALETTE)])
            n += 1
            if not pts:
                continue
            segs, cur, prev = [], [], None
            for t, y in pts:
                # A gap in the data (no sample for a while) breaks the line, as Grafana does.
                if prev is not None and t - prev > 3 * max(1, (end - start) / 300):
                    segs.append(cur)
                    cur = []
                x = left + (t - start) / max(end - start, 1) * (w - left)
                cur.append(f"{x:.1f},{h - y / top * h:.1f}")
                prev = t
            segs.append(cur)
            for s in segs:
                if len(s) == 1:
                    x, y = s[0].split(",")
                    lines.append(f'<circle cx="{x}" cy="{y}" r="2" fill="{colour}"/>')
                elif s:
                    lines.append(f'<polyline points="{" ".join(s)}" fill="none" stroke="{colour}" stroke-width="2"/>')
            legends.append(f'<span><i style="background:{colour}"></i>{html.escape(_fill(fmt, labels))}</span>')
    svg = (f'<svg width="{w}" height="{h + 30}"><g transform="translate(0,8)">'
           f'{"".join(grid)}{"".join(lines)}</g></svg>')
    if not legends:
        svg += '<div class="nodata">No data</div>'
    return svg + f'<div class="legend">{"".join(legends)}</div>'


def draw_state_timeline(p, data, start, end):
    mapping = {}
    for m in p.get("fieldConfig", {}).get("defaults", {}).get("mappings", []):
        for k, v in m.get("options", {}).items():
            mapping[float(k)] = (v["text"], NAMED.get(v["color"], v["color"]))
    w = p["gridPos"]["w"] * COL - GAP - 20
    rows = [(labels, pts) for fmt, series in data for labels, pts in series]
    fmt = data[0][0] if data else ""
    label_w = 190
    bar_h = max(14, min(26, (p["gridPos"]["h"] * ROW - 120) // max(len(rows), 1)))
    parts = []
    for i, (labels, pts) in enumerate(sorted(rows, key=lambda r: _fill(fmt, r[0]))):
        y = i * (bar_h + 6)
        parts.append(f'<text x="0" y="{y + bar_h * 0.7:.1f}" class="axis">{html.escape(_fill(fmt, labels))}</text>')
        for j, (t, v) in enumerate(pts):
            t_next = pts[j + 1][0] if j + 1 < len(pts) else end
            x0 = label_w + (t - start) / max(end - start, 1) * (w - label_w)
            x1 = label_w + (t_next - start) / max(end - start, 1) * (w - label_w)
            text, colour = mapping.get(v, (str(v), "#888"))
            parts.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 0.5):.1f}" height="{bar_h}" fill="{colour}"/>')
    height = len(rows) * (bar_h + 6)
    legend = "".join(f'<span><i style="background:{c}"></i>{t}</span>' for _, (t, c) in sorted(mapping.items()))
    return f'<svg width="{w}" height="{height}">{"".join(parts)}</svg><div class="legend">{legend}</div>'


def draw_bargauge(p, data, unit):
    rows = []
    for fmt, series in data:
        for labels, pts in series:
            if pts:
                rows.append((_fill(fmt, labels), pts[-1][1]))
    rows.sort()
    if not rows:
        return '<div class="nodata">No data</div>'
    hi = max(v for _, v in rows) or 1
    w = p["gridPos"]["w"] * COL - GAP - 20
    out = []
    for i, (name, v) in enumerate(rows):
        colour = PALETTE[i % len(PALETTE)] if p["fieldConfig"]["defaults"]["color"]["mode"] == "palette-classic" \
            else ("#f2495c" if v == 0 else "#73bf69" if v / hi > 0.5 else "#fade2a")
        frac = v / hi
        out.append(f'<div class="bar"><div class="name">{html.escape(name)}</div>'
                   f'<div class="track"><div style="width:{frac * 100:.1f}%;background:{colour}"></div></div>'
                   f'<div class="val" style="color:{colour}">{html.escape(fmt_value(v, unit))}</div></div>')
    return "".join(out)


def main():
    prom, start, end, rate, path = sys.argv[1:6]
    start, end = float(start), float(end)
    dash = json.load(open(path))
    step = max(1, int((end - start) / 300))
    boxes = []
    bottom = 0
    for p in dash["panels"]:
        unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit", "")
        data = []
        for t in p["targets"]:
            expr = t["expr"].replace("$__rate_interval", rate).replace(
                "$__range", f"{int(end - start)}s")
            instant = t.get("instant", False) or p["type"] == "bargauge"
            data.append((t.get("legendFormat", ""),
                         series_of(query(prom, expr, start, end, step, instant))))
        if p["type"] == "stat":
            body = draw_stat(p, data, unit)
        elif p["type"] == "timeseries":
            body = draw_timeseries(p, data, unit, start, end)
        elif p["type"] == "state-timeline":
            body = draw_state_timeline(p, data, start, end)
        elif p["type"] == "bargauge":
            body = draw_bargauge(p, data, unit)
        else:
            raise SystemExit(f"no drawing for panel type {p['type']}")
        boxes.append(panel_box(p, body))
        g = p["gridPos"]
        bottom = max(bottom, g["y"] + g["h"])
    span = f'{time.strftime("%H:%M:%S", time.gmtime(start))} to {time.strftime("%H:%M:%S", time.gmtime(end))} UTC'
    note = ("Drawn by scripts/render-dashboard.py, not by Grafana: each panel of docs/grafana/fcm.json, "
            "its own PromQL evaluated by Prometheus over a real scrape of fcm serve's /metrics "
            "(scripts/docs-screenshots.sh, fake providers, scripted traffic).")
    print(f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(dash['title'])}</title>
<style>
body{{margin:0;background:#111217;color:#ccccdc;font:13px Inter,'DejaVu Sans',sans-serif}}
.top{{position:absolute;left:{GAP}px;top:14px;font-size:18px;color:#fff}}
.top small{{font-size:12px;color:#8e8e9e;margin-left:14px}}
.panel{{position:absolute;background:#181b1f;border:1px solid #2c3235;border-radius:3px;overflow:hidden}}
.title{{font-weight:500;padding:7px 10px;color:#d8d9da}}
.body{{padding:0 10px}}
.stat{{font-size:40px;font-weight:500;margin-top:4px}}
.spark{{position:absolute;bottom:6px;left:10px}}
.grid{{stroke:#2c3235;stroke-width:1}}
.axis{{fill:#8e8e9e;font-size:11px}}
.legend{{margin-top:4px;font-size:12px;line-height:18px}}
.legend span{{margin-right:14px;white-space:nowrap}}
.legend i{{display:inline-block;width:14px;height:4px;margin-right:5px;vertical-align:middle;border-radius:2px}}
.bar{{display:flex;align-items:center;margin:5px 0;font-size:12px}}
.bar .name{{width:210px;overflow:hidden;white-space:nowrap;text-overflow:ellipsis}}
.bar .track{{flex:1;background:#22252b;height:16px;margin:0 10px}}
.bar .track div{{height:16px}}
.bar .val{{width:70px;text-align:right;font-weight:500}}
.nodata{{color:#8e8e9e;padding:20px}}
.note{{position:absolute;left:{GAP}px;top:{bottom * ROW + 70}px;width:{24 * COL - GAP}px;color:#8e8e9e;font-size:12px}}
</style></head><body>
<div class="top">{html.escape(dash['title'])}<small>{span} · Prometheus · $__rate_interval = {rate}</small></div>
{''.join(boxes)}
<div class="note">{html.escape(note)}</div>
</body></html>""")


if __name__ == "__main__":
    main()
