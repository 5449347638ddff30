#!/usr/bin/env python3
"""Time against message size for each leader count of the hierarchical allreduce, from plancoll-bench JSON
results: this machine's version of [DPML17]'s figures 4-7 ("impact of the number of leaders").

usage: bench/plot-leaders.py RESULT.json [RESULT.json ...] [-o OUT.png] [--algorithm NAME] [--refs]
                             [--title TEXT] [--linear]

  RESULT.json   plancoll-bench --json output; one run timing several leader counts side by side, e.g.
                  mpiexec -n 8 build/bench/plancoll-bench allreduce -m 8:4M \\
                    -a allreduce.leader,allreduce.dpml:leaders=2,allreduce.dpml:leaders=4 --json r.json
                or several runs (one per leader count), merged
  -o OUT.png    the picture (default: the first result's name with -leaders.png)
  --algorithm   which family to draw: allreduce.dpml (default; allreduce.leader counts as 1 leader) or
                allreduce.dpml_pipelined
  --refs        also draw MPI's blocking, persistent and nonblocking allreduce (dashed)
  --title       replaces the default title
  --linear      linear time axis (default logarithmic, like the paper's small-message panels)

Each line is one leader count (other parameters, such as inter=mpi, make lines of their own); each point is
the median over batches that plancoll-bench reports. matplotlib draws the picture when it is installed;
otherwise a small built-in renderer writes the PNG (plain Python: zlib and struct only)."""
import argparse
import json
import math
import os
import re
import struct
import sys
import zlib

# ---------------------------------------------------------------------------------------------------------
# Reading the results


def parse_impl(impl, family):
    """(series label, leader count) for a plancoll implementation of the family, or None."""
    if not impl.startswith("plancoll:"):
        return None
    spec = impl[len("plancoll:"):]
    parts = spec.split(":")
    name, params = parts[0], [p for p in parts[1:] if p]
    leaders = None
    if name == "allreduce.leader" and family == "allreduce.dpml":
        label = " ".join(["1 leader (allreduce.leader)"] + params)
        return label, 0.5
    if name != family:
        return None
    rest = []
    for p in params:
        m = re.fullmatch(r"leaders=(\d+)", p)
        if m:
            leaders = int(m.group(1))
        else:
            rest.append(p)
    if leaders is None:
        label = "default " + " ".join(rest) if rest else "planner's leaders"
        return label.strip(), 10**6
    label = "%d leader%s" % (leaders, "" if leaders == 1 else "s")
    if rest:
        label += " " + " ".join(rest)
    return label, leaders


def load(paths, family, refs):
    series, meta = {}, []
    for path in paths:
        with open(path) as f:
            d = json.load(f)
        meta.append(d)
        for r in d.get("results", []):
            impl = r.get("impl", "")
            key = parse_impl(impl, family)
            if key is None and refs and impl in ("mpi:blocking", "mpi:persistent", "mpi:nonblocking"):
                key = ("MPI " + impl[4:], 10**7 + ["mpi:blocking", "mpi:persistent", "mpi:nonblocking"].index(impl))
            if key is None:
                continue
            label, order = key
            s = series.setdefault(label, {"order": order, "points": {}, "ref": impl.startswith("mpi:")})
            if "median_us" in r and r["median_us"] > 0:
                s["points"][int(r["bytes"])] = float(r["median_us"])
    return series, meta


def default_title(meta, family):
    d = meta[0] if meta else {}
    conf = d.get("configuration", "?")
    return "%s on %s (%s ranks, %s nodes): time by leader count" % (family, conf, d.get("ranks", "?"), d.get("nodes", "?"))


def size_label(b):
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if b >= div and b % div == 0:
            return "%d%s" % (b // div, unit)
    return str(b)


# ---------------------------------------------------------------------------------------------------------
# Drawing with matplotlib


def plot_matplotlib(series, title, out, linear):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 6))
    for label, s in sorted(series.items(), key=lambda kv: kv[1]["order"]):
        xs = sorted(s["points"])
        ax.plot(xs, [s["points"][x] for x in xs], "--" if s["ref"] else "-", marker="o", markersize=3, label=label)
    ax.set_xscale("log", base=2)
    if not linear:
        ax.set_yscale("log")
    sizes = sorted({x for s in series.values() for x in s["points"]})
    ax.set_xticks(sizes)
    ax.set_xticklabels([size_label(x) for x in sizes], rotation=45)
    ax.set_xlabel("message size (bytes per rank)")
    ax.set_ylabel("latency (us, median)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=100)


# ---------------------------------------------------------------------------------------------------------
# Drawing without matplotlib: a canvas, a 5x7 bitmap font (capitals, digits, punctuation) and a PNG writer

FONT = {
    " ": [".....", ".....", ".....", ".....", ".....", ".....", "....."],
    "0": [".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."],
    "1": ["..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."],
    "2": [".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"],
    "3": ["####.", "....#", "....#", ".###.", "....#", "....#", "####."],
    "4": ["...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."],
    "5": ["#####", "#....", "####.", "....#", "....#", "#...#", ".###."],
    "6": ["..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."],
    "7": ["#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."],
    "8": [".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."],
    "9": [".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."],
    "A": [".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"],
    "B": ["####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."],
    "C": [".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."],
    "D": ["####.", "#...#", "#...#", "#...#", "#...#", "#...#", "####."],
    "E": ["#####", "#....", "#....", "####.", "#....", "#....", "#####"],
    "F": ["#####", "#....", "#....", "####.", "#....", "#....", "#...."],
    "G": [".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"],
    "H": ["#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"],
    "I": [".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."],
    "J": ["..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."],
    "K": ["#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"],
    "L": ["#....", "#....", "#....", "#....", "#....", "#....", "#####"],
    "M": ["#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"],
    "N": ["#...#", "#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#"],
    "O": [".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."],
    "P": ["####.", "#...#", "#...#", "####.", "#....", "#....", "#...."],
    "Q": [".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"],
    "R": ["####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"],
    "S": [".####", "#....", "#....", ".###.", "....#", "....#", "####."],
    "T": ["#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."],
    "U": ["#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."],
    "V": ["#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."],
    "W": ["#...#", "#...#", "#...#", "#.#.#", "#.#.#", "#.#.#", ".#.#."],
    "X": ["#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"],
    "Y": ["#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."],
    "Z": ["#####", "....#", "...#.", "..#..", ".#...", "#....", "#####"],
    ".": [".....", ".....", ".....", ".....", ".....", ".##..", ".##.."],
    ",": [".....", ".....", ".....", ".....", ".##..", "..#..", ".#..."],
    ":": [".....", ".##..", ".##..", ".....", ".##..", ".##..", "....."],
    "=": [".....", ".....", "#####", ".....", "#####", ".....", "....."],
    "-": [".....", ".....", ".....", "#####", ".....", ".....", "....."],
    "+": [".....", "..#..", "..#..", "#####", "..#..", "..#..", "....."],
    "_": [".....", ".....", ".....", ".....", ".....", ".....", "#####"],
    "(": ["...#.", "..#..", ".#...", ".#...", ".#...", "..#..", "...#."],
    ")": [".#...", "..#..", "...#.", "...#.", "...#.", "..#..", ".#..."],
    "/": [".....", "....#", "...#.", "..#..", ".#...", "#....", "....."],
    "%": ["##..#", "##..#", "...#.", "..#..", ".#...", "#..##", "#..##"],
    "'": ["..#..", "..#..", ".#...", ".....", ".....", ".....", "....."],
    "?": [".###.", "#...#", "....#", "...#.", "..#..", ".....", "..#.."],
}
PALETTE = [(31, 119, 180), (214, 39, 40), (44, 160, 44), (255, 127, 14), (148, 103, 189), (140, 86, 75),
           (227, 119, 194), (23, 190, 207), (188, 189, 34), (127, 127, 127)]


class Canvas:
    def __init__(self, w, h):
        self.w, self.h = w, h
        self.px = bytearray([255]) * (w * h * 3)

    def set(self, x, y, c):
        if 0 <= x < self.w and 0 <= y < self.h:
            i = (y * self.w + x) * 3
            self.px[i:i + 3] = bytes(c)

    def rect(self, x0, y0, x1, y1, c):
        for y in range(max(0, y0), min(self.h, y1 + 1)):
            for x in range(max(0, x0), min(self.w, x1 + 1)):
                self.set(x, y, c)

    def line(self, x0, y0, x1, y1, c, width=1, dash=0):
        x0, y0, x1, y1 = int(round(x0)), int(round(y0)), int(round(x1)), int(round(y1))
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err, step = dx + dy, 0
        while True:
            if not dash or (step // dash) % 2 == 0:
                r = width // 2
                for ox in range(-r, width - r):
                    for oy in range(-r, width - r):
                        self.set(x0 + ox, y0 + oy, c)
            if x0 == x1 and y0 == y1:
                break
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy
            step += 1

    def text(self, x, y, s, c=(0, 0, 0), scale=2, vertical=False):
        """Top-left at (x, y); vertical text reads bottom to top."""
        for k, ch in enumerate(s.upper()):
            glyph = FONT.get(ch, FONT["?"])
            for gy, row in enumerate(glyph):
                for gx, bit in enumerate(row):
                    if bit != "#":
                        continue
                    for a in range(scale):
                        for b in range(scale):
                            if vertical:
                                self.set(x + gy * scale + b, y - (k * 6 + gx) * scale - a, c)
                            else:
                                self.set(x + (k * 6 + gx) * scale + a, y + gy * scale + b, c)

    @staticmethod
    def text_width(s, scale=2):
        return len(s) * 6 * scale

    def png(self, path):
        raw = b"".join(b"\x00" + bytes(self.px[y * self.w * 3:(y + 1) * self.w * 3]) for y in range(self.h))

        def chunk(kind, data):
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

        with open(path, "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n")
            f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0)))
            f.write(chunk(b"IDAT", zlib.compress(raw, 9)))
            f.write(chunk(b"IEND", b""))


def nice_ticks(lo, hi, log):
    if log:
        ticks, e = [], math.floor(math.log10(lo))
        while 10**e <= hi * 1.0001:
            for m in (1, 2, 5):
                v = m * 10**e
                if lo * 0.9999 <= v <= hi * 1.0001:
                    ticks.append(v)
            e += 1
        return ticks
    span = hi - lo
    step = 10 ** math.floor(math.log10(span / 5)) if span > 0 else 1
    for m in (1, 2, 5, 10):
        if span / (step * m) <= 8:
            step *= m
            break
    v = math.floor(lo / step) * step
    ticks = []
    while v <= hi + 1e-9:
        if v >= lo - 1e-9:
            ticks.append(v)
        v += step
    return ticks


def fmt_us(v):
    if v >= 1000:
        return "%gK" % (v / 1000) if v < 1e6 else "%gM" % (v / 1e6)
    return "%g" % v


def plot_builtin(series, title, out, linear):
    W, H = 1000, 650
    L, R, T, B = 110, 250, 60, 95
    cv = Canvas(W, H)
    sizes = sorted({x for s in series.values() for x in s["points"]})
    values = [v for s in series.values() for v in s["points"].values()]
    if not sizes or not values:
        raise SystemExit("plot-leaders: no points to draw")
    xlo, xhi = math.log2(sizes[0]), math.log2(sizes[-1])
    if xhi == xlo:
        xlo, xhi = xlo - 1, xhi + 1
    vlo, vhi = min(values), max(values)
    if linear:
        ylo, yhi = 0.0, vhi * 1.05
        fy = lambda v: (v - ylo) / (yhi - ylo)
    else:
        ylo, yhi = 10 ** math.floor(math.log10(vlo)), 10 ** math.ceil(math.log10(vhi))
        if yhi == ylo:
            yhi = ylo * 10
        fy = lambda v: (math.log10(v) - math.log10(ylo)) / (math.log10(yhi) - math.log10(ylo))
    X = lambda b: L + (math.log2(b) - xlo) / (xhi - xlo) * (W - L - R)
    Y = lambda v: H - B - fy(v) * (H - T - B)
    grid, axis = (225, 225, 225), (0, 0, 0)
    for v in nice_ticks(max(ylo, 1e-12), yhi, not linear):
        y = Y(v)
        cv.line(L, y, W - R, y, grid)
        lab = fmt_us(v)
        cv.text(L - 8 - Canvas.text_width(lab), int(y) - 7, lab)
    for b in sizes:
        x = X(b)
        cv.line(x, T, x, H - B, grid)
        lab = size_label(b)
        cv.text(int(x) - Canvas.text_width(lab) // 2, H - B + 10, lab, scale=2 if len(sizes) <= 12 else 1)
    cv.line(L, H - B, W - R, H - B, axis, 2)
    cv.line(L, T, L, H - B, axis, 2)
    cv.text(L + (W - L - R) // 2 - Canvas.text_width("message size (bytes per rank)") // 2, H - 40,
            "message size (bytes per rank)")
    cv.text(20, H - B - (H - T - B) // 2 + Canvas.text_width("latency (us)") // 2, "latency (us)", vertical=True)
    cv.text(max(5, W // 2 - Canvas.text_width(title) // 2), 20, title, scale=2 if Canvas.text_width(title) < W - 10 else 1)
    ordered = sorted(series.items(), key=lambda kv: kv[1]["order"])
    for i, (label, s) in enumerate(ordered):
        c = PALETTE[i % len(PALETTE)]
        xs = sorted(s["points"])
        pts = [(X(x), Y(s["points"][x])) for x in xs]
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            cv.line(x0, y0, x1, y1, c, width=2 if not s["ref"] else 1, dash=6 if s["ref"] else 0)
        for x, y in pts:
            cv.rect(int(x) - 3, int(y) - 3, int(x) + 3, int(y) + 3, c)
        ly = T + 10 + i * 24
        cv.line(W - R + 15, ly + 7, W - R + 45, ly + 7, c, width=2, dash=6 if s["ref"] else 0)
        cv.text(W - R + 52, ly, label[:32], c, scale=2 if len(label) <= 16 else 1)
    cv.png(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("-o", "--output")
    ap.add_argument("--algorithm", default="allreduce.dpml")
    ap.add_argument("--refs", action="store_true")
    ap.add_argument("--title")
    ap.add_argument("--linear", action="store_true")
    ap.add_argument("--builtin", action="store_true", help="use the built-in renderer even with matplotlib")
    a = ap.parse_args()
    series, meta = load(a.results, a.algorithm, a.refs)
    if not any(not s["ref"] for s in series.values()):
        sys.exit("plot-leaders: no %s results in %s (time them with plancoll-bench -a)" % (a.algorithm, ", ".join(a.results)))
    out = a.output or os.path.splitext(a.results[0])[0] + "-leaders.png"
    title = a.title or default_title(meta, a.algorithm)
    try:
        if a.builtin:
            raise ImportError
        plot_matplotlib(series, title, out, a.linear)
        how = "matplotlib"
    except ImportError:
        plot_builtin(series, title, out, a.linear)
        how = "built-in renderer"
    print("plot-leaders: wrote %s (%d lines, %s)" % (out, len(series), how))


if __name__ == "__main__":
    main()
