#!/usr/bin/python3
"""Draws a sedp trace (sedp run/serve --trace: Chrome's Trace Event Format) as an SVG timeline.

One lane per thread (its thread_name), in name order, so that each stage worker's process calls
sit above its queue waits; a box per complete ("X") event, coloured by kind (queue wait, process);
waits that overlap (several requests waiting at once) are stacked in sub-rows; a time axis in
milliseconds. Standard library only (docs/observability.md).

usage: scripts/trace-svg.py TRACE.json OUT.svg [--width PIXELS] [--title TEXT]
                            [--request ID]   (only the events of request ID: one request close up)
"""
import argparse
import html
import json
import sys

COLOURS = {"queue": "#f2a541", "process": "#3b7dd8"}
ROW = 9          # pixels per sub-row
LANE_GAP = 6
LABEL_W = 230
TOP = 46


def load(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    names, boxes = {}, {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[e["tid"]] = e["args"]["name"]
        elif e.get("ph") == "X":
            boxes.setdefault(e["tid"], []).append(e)
    return names, boxes


def pack(events):
    """Greedy interval packing: each event gets the first sub-row free at its start."""
    ends, rows = [], []
    for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
        for i, end in enumerate(ends):
            if end <= e["ts"]:
                ends[i] = e["ts"] + e["dur"]
                rows.append((e, i))
                break
        else:
            ends.append(e["ts"] + e["dur"])
            rows.append((e, len(ends) - 1))
    return rows, max(len(ends), 1)


def tick_step(span_ms, pixels):
    for step in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000):
        if span_ms / step * 60 <= pixels:
            return step
    return span_ms / 10


def draw(names, boxes, width, title):
    tids = sorted(boxes, key=lambda t: names.get(t, str(t)))
    if not tids:
        sys.exit("trace-svg: the trace holds no complete (ph X) event")
    t0 = min(e["ts"] for t in tids for e in boxes[t])
    t1 = max(e["ts"] + e["dur"] for t in tids for e in boxes[t])
    span = max(t1 - t0, 1)
    plot_w = width - LABEL_W - 20
    x = lambda ts: LABEL_W + (ts - t0) * plot_w / span
    out, y = [], TOP
    for tid in tids:
        rows, n = pack(boxes[tid])
        h = n * ROW
        out.append(f'<rect x="0" y="{y - 2}" width="{width}" height="{h + 4}" fill="#f4f4f4"/>')
        label = html.escape(names.get(tid, f"thread {tid}"))
        out.append(f'<text x="6" y="{y + min(h, 14) - 3}" font-size="11">{label}</text>')
        for e, r in rows:
            a = e.get("args", {})
            kind = e.get("cat", "process")
            tip = html.escape(f'{e["name"]}: request {a.get("request_id")}, stage {a.get("stage")}, '
                              f'{e["dur"]} µs, rows {a.get("rows")}, batch {a.get("batch")}')
            w = max(e["dur"] * plot_w / span, 0.6)
            out.append(f'<rect x="{x(e["ts"]):.2f}" y="{y + r * ROW}" width="{w:.2f}" '
                       f'height="{ROW - 1}" fill="{COLOURS.get(kind, "#888")}" fill-opacity="0.85">'
                       f'<title>{tip}</title></rect>')
        y += h + LANE_GAP
    step = tick_step(span / 1000, plot_w)
    ms = 0.0
    while ms * 1000 <= span:
        px = x(t0 + ms * 1000)
        out.append(f'<line x1="{px:.1f}" y1="{TOP - 6}" x2="{px:.1f}" y2="{y}" stroke="#ccc" stroke-width="0.5"/>')
        out.append(f'<text x="{px:.1f}" y="{y + 14}" font-size="10" text-anchor="middle">{ms:g} ms</text>')
        ms += step
    legend = (f'<text x="6" y="18" font-size="12" font-weight="bold">{html.escape(title)}</text>'
              f'<rect x="6" y="26" width="12" height="10" fill="{COLOURS["queue"]}"/>'
              f'<text x="22" y="35" font-size="11">queue wait</text>'
              f'<rect x="106" y="26" width="12" height="10" fill="{COLOURS["process"]}"/>'
              f'<text x="122" y="35" font-size="11">process</text>')
    height = y + 24
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif">\n'
            f'<rect width="{width}" height="{height}" fill="white"/>\n{legend}\n'
            + "\n".join(out) + "\n</svg>\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--width", type=int, default=1200)
    ap.add_argument("--title", default="sedp trace")
    ap.add_argument("--request", help="draw only the events of this request id")
    o = ap.parse_args()
    names, boxes = load(o.trace)
    if o.request is not None:
        boxes = {t: [e for e in ev if e.get("args", {}).get("request_id") == o.request]
                 for t, ev in boxes.items()}
        boxes = {t: ev for t, ev in boxes.items() if ev}
    with open(o.out, "w", encoding="utf-8") as f:
        f.write(draw(names, boxes, o.width, o.title))


if __name__ == "__main__":
    main()
