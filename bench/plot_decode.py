"""Plots bench/decode.sh's rows: GB/s against cache_len (batch 1, the most threads measured),
one panel per layer and dtype, a line for mhac and one for each peer. Writes plain SVG (no
plotting library needed).

usage: plot_decode.py decode.csv decode.svg
"""
import csv
import math
import sys
from collections import defaultdict

COLOURS = {"mhac": "#d62728", "torch": "#1f77b4", "onnxruntime": "#2ca02c", "openvino": "#9467bd"}
WIDTH, HEIGHT, MARGIN, COLUMNS = 260, 190, 38, 4


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    threads = max((int(r["threads"]) for r in rows), default=1)
    series = defaultdict(lambda: defaultdict(list))      # (layer, dtype) -> variant -> points
    for r in rows:
        if r["batch"] == "1" and int(r["threads"]) == threads and r["gbs"]:
            series[(r["layer"], r["dtype"])][r["variant"]].append(
                (int(r["cache_len"]), float(r["gbs"])))
    panels = sorted(series)
    lines = max(1, math.ceil(len(panels) / COLUMNS))
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{COLUMNS * WIDTH}" '
           f'height="{lines * HEIGHT + 40}" font-family="sans-serif" font-size="10">',
           f'<text x="8" y="16" font-size="13">Decode, batch 1, {threads} threads: GB/s moved '
           'against cache_len (bench/decode.sh)</text>']
    for name, colour in COLOURS.items():
        x = 8 + 110 * list(COLOURS).index(name)
        svg.append(f'<rect x="{x}" y="24" width="10" height="10" fill="{colour}"/>'
                   f'<text x="{x + 14}" y="33">{name}</text>')
    for i, key in enumerate(panels):
        ox, oy = (i % COLUMNS) * WIDTH, 40 + (i // COLUMNS) * HEIGHT
        points = series[key]
        xs = [p[0] for v in points.values() for p in v]
        top = max(p[1] for v in points.values() for p in v) * 1.15
        lo, hi = math.log(min(xs)), math.log(max(xs))
        span = hi - lo if hi > lo else 1.0
        plot_w, plot_h = WIDTH - MARGIN - 10, HEIGHT - MARGIN - 20

        def at(length, gbs):
            return (ox + MARGIN + (math.log(length) - lo) / span * plot_w,
                    oy + 16 + plot_h - gbs / top * plot_h)

        svg.append(f'<text x="{ox + MARGIN}" y="{oy + 10}">{key[0]} {key[1]}</text>')
        svg.append(f'<rect x="{ox + MARGIN}" y="{oy + 16}" width="{plot_w}" height="{plot_h}" '
                   'fill="none" stroke="#999"/>')
        for tick in (0, top / 2 / 1.15, top / 1.15):
            _, y = at(min(xs), tick)
            svg.append(f'<text x="{ox + 4}" y="{y + 3}">{tick:.0f}</text>')
        for length in sorted(set(xs)):
            x, _ = at(length, 0)
            svg.append(f'<text x="{x - 10}" y="{oy + 16 + plot_h + 12}">{length}</text>')
        for variant, data in sorted(points.items()):
            data.sort()
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (at(*p) for p in data))
            colour = COLOURS.get(variant, "#777")
            svg.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
    svg.append("</svg>")
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
