#!/usr/bin/python3
# grid_planner.py: a small external planner for brushloop, written from docs/planner.md alone: flat colours in rows of grid cells.
#
#     brushloop run examples/targets/flat-shapes.png --planner "/usr/bin/python3 $PWD/examples/planners/grid_planner.py"
#
# It reads the request line on stdin, answers with one plan line on stdout and reads the verdict.
# The painting: the target's grid cells (options.cell_mm) averaged, clustered into a few colours,
# each colour mixed in its own cell and painted as horizontal strokes along runs of its cells,
# lightest colour first. A correction: the cells the error map shows off, painted again with the
# nearest colour. Only the Python standard library: the sandbox has /usr and nothing else.
import json
import math
import struct
import sys
import zlib

# ---- colour ------------------------------------------------------------------------------

# sRGB (D65) to XYZ adapted to D50 (Bradford), the host's Lab white.
M = ((0.4360747, 0.3850649, 0.1430804), (0.2225045, 0.7168786, 0.0606169), (0.0139322, 0.0971045, 0.7141733))
WHITE = (0.9642, 1.0, 0.8251)


def srgb_to_lab(r, g, b):
    def lin(c):
        c /= 255.0
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    rl, gl, bl = lin(r), lin(g), lin(b)
    xyz = [M[i][0] * rl + M[i][1] * gl + M[i][2] * bl for i in range(3)]

    def f(t):
        return t ** (1.0 / 3.0) if t > 216.0 / 24389.0 else (24389.0 / 27.0 * t + 16.0) / 116.0
    fx, fy, fz = (f(xyz[i] / WHITE[i]) for i in range(3))
    return (116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz))


def de2000(l1, l2):
    L1, a1, b1 = l1
    L2, a2, b2 = l2
    c1, c2 = math.hypot(a1, b1), math.hypot(a2, b2)
    cm = (c1 + c2) / 2.0
    g = 0.5 * (1.0 - math.sqrt(cm ** 7 / (cm ** 7 + 25.0 ** 7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p = math.degrees(math.atan2(b1, a1p)) % 360.0 if c1p else 0.0
    h2p = math.degrees(math.atan2(b2, a2p)) % 360.0 if c2p else 0.0
    dL, dC = L2 - L1, c2p - c1p
    dh = 0.0
    if c1p * c2p:
        dh = h2p - h1p
        dh = dh - 360 if dh > 180 else dh + 360 if dh < -180 else dh
    dH = 2.0 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2.0))
    Lm, cmp_ = (L1 + L2) / 2.0, (c1p + c2p) / 2.0
    hm = h1p + h2p
    if c1p * c2p:
        hm = (hm + 360) / 2.0 if abs(h1p - h2p) > 180 and hm < 360 else (hm - 360) / 2.0 if abs(h1p - h2p) > 180 else hm / 2.0
    t = (1 - 0.17 * math.cos(math.radians(hm - 30)) + 0.24 * math.cos(math.radians(2 * hm))
         + 0.32 * math.cos(math.radians(3 * hm + 6)) - 0.20 * math.cos(math.radians(4 * hm - 63)))
    sl = 1 + 0.015 * (Lm - 50) ** 2 / math.sqrt(20 + (Lm - 50) ** 2)
    sc, sh = 1 + 0.045 * cmp_, 1 + 0.015 * cmp_ * t
    rt = (-2 * math.sqrt(cmp_ ** 7 / (cmp_ ** 7 + 25.0 ** 7))
          * math.sin(math.radians(60 * math.exp(-(((hm - 275) / 25) ** 2)))))
    return math.sqrt((dL / sl) ** 2 + (dC / sc) ** 2 + (dH / sh) ** 2 + rt * (dC / sc) * (dH / sh))


# ---- the target: a PNG, 8 bits, grey or colour, with or without alpha ----------------------

def png_rows(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG (this planner reads PNG targets only)")
    pos, idat, w = 8, [], 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or interlace:
                raise ValueError("only 8-bit, non-interlaced PNG")
            channels = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + n
    raw, stride, prev, rows = zlib.decompress(b"".join(idat)), w * channels, None, []
    for y in range(h):
        ft, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        up = prev or bytearray(stride)
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            if ft == 1:
                line[i] = (line[i] + a) & 255
            elif ft == 2:
                line[i] = (line[i] + up[i]) & 255
            elif ft == 3:
                line[i] = (line[i] + ((a + up[i]) >> 1)) & 255
            elif ft == 4:
                c = up[i - channels] if i >= channels else 0
                p = a + up[i] - c
                pa, pb, pc = abs(p - a), abs(p - up[i]), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else up[i] if pb <= pc else c)) & 255
        prev = line
        rows.append(line)
    return w, h, channels, rows


def cell_means(path, rect, cell_mm, cols, rows_n):
    """Mean Lab of the target in every grid cell (alpha over a white canvas)."""
    w, h, ch, rows = png_rows(path)
    acc = [[0.0, 0.0, 0.0, 0] for _ in range(cols * rows_n)]
    for y in range(h):
        r = min(rows_n - 1, int((y + 0.5) / h * rect[3] / cell_mm))
        line = rows[y]
        for x in range(0, w, 2):  # every other pixel: plenty for a mean
            c = min(cols - 1, int((x + 0.5) / w * rect[2] / cell_mm))
            px = line[x * ch:(x + 1) * ch]
            rgb = (px[0],) * 3 if ch < 3 else tuple(px[:3])
            if ch in (2, 4):
                al = px[-1] / 255.0
                rgb = tuple(al * v + (1 - al) * 255 for v in rgb)
            a = acc[r * cols + c]
            a[0] += rgb[0]
            a[1] += rgb[1]
            a[2] += rgb[2]
            a[3] += 1
    return [srgb_to_lab(a[0] / a[3], a[1] / a[3], a[2] / a[3]) if a[3] else (95.0, 0.0, 2.0) for a in acc]


# ---- what the paints can reach: Kubelka-Munk over the palette's K and S -----------------------

# CIE 1931 2-degree observer and D50 at 400, 410, ... 700 nm (CIE 15:2004), the palette's bands.
XBAR = (0.01431, 0.04351, 0.13438, 0.2839, 0.34828, 0.3362, 0.2908, 0.19536, 0.09564, 0.03201, 0.0049, 0.0093,
        0.06327, 0.1655, 0.2904, 0.43345, 0.5945, 0.7621, 0.9163, 1.0263, 1.0622, 1.0026, 0.85445, 0.6424, 0.4479,
        0.2835, 0.1649, 0.0874, 0.04677, 0.0227, 0.011359)
YBAR = (0.000396, 0.00121, 0.004, 0.0116, 0.023, 0.038, 0.06, 0.09098, 0.13902, 0.20802, 0.323, 0.503, 0.71, 0.862,
        0.954, 0.99495, 0.995, 0.952, 0.87, 0.757, 0.631, 0.503, 0.381, 0.265, 0.175, 0.107, 0.061, 0.032, 0.017,
        0.00821, 0.004102)
ZBAR = (0.06785, 0.2074, 0.6456, 1.3856, 1.74706, 1.77211, 1.6692, 1.28764, 0.81295, 0.46518, 0.272, 0.1582, 0.07825,
        0.04216, 0.0203, 0.00875, 0.0039, 0.0021, 0.00165, 0.0011, 0.0008, 0.00034, 0.00019, 5e-05, 2e-05) + (0.0,) * 6
D50 = (49.31, 56.51, 60.03, 57.82, 74.82, 87.25, 90.61, 91.37, 95.11, 91.96, 95.72, 96.61, 97.13, 102.1, 100.75,
       102.32, 100.0, 97.74, 98.92, 93.5, 97.69, 99.27, 99.04, 95.72, 98.86, 95.67, 98.19, 103.0, 99.13, 87.38, 91.6)
K1, K2 = 0.04, 0.60  # Saunderson: the surface of a wet paint film


def spectrum_to_lab(refl):
    n = sum(d * y for d, y in zip(D50, YBAR))
    xyz = [sum(r * d * c for r, d, c in zip(refl, D50, cmf)) / n for cmf in (XBAR, YBAR, ZBAR)]
    white = [sum(d * c for d, c in zip(D50, cmf)) / n for cmf in (XBAR, YBAR, ZBAR)]

    def f(t):
        return t ** (1.0 / 3.0) if t > 216.0 / 24389.0 else (24389.0 / 27.0 * t + 16.0) / 116.0
    fx, fy, fz = (f(xyz[i] / white[i]) for i in range(3))
    return (116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz))


def km_lab(paints, units):
    """The colour of a mix: K and S averaged by units, R of an opaque film, Saunderson's surface."""
    tot = float(sum(units.values()))
    refl = []
    for b in range(len(D50)):
        k = sum(u * paints[i]["k"][b] for i, u in units.items()) / tot
        sc = sum(u * paints[i]["s"][b] for i, u in units.items()) / tot
        q = max(k / sc, 1e-6)
        r = 1.0 + q - math.sqrt(q * q + 2.0 * q)
        refl.append((1 - K1) * (1 - K2) * r / (1.0 - K2 * r))
    return spectrum_to_lab(refl)


def reachable(palette, want, n_units=12, max_paints=3):
    """The nearest mix of at most max_paints paints in n_units units: (lab, {paint index: units})."""
    paints = [{"name": p["name"], "well": p["well"], "k": p["spectral"]["k"], "s": p["spectral"]["s"]}
              for p in palette["paints"] if "spectral" in p]
    best = (1e9, None, None)
    pairs = []
    for i in range(len(paints)):
        for j in range(i, len(paints)):
            for u in range(1, n_units if i != j else 2):
                units = {i: n_units} if i == j else {i: u, j: n_units - u}
                lab = km_lab(paints, units)
                d = de2000(want, lab)
                pairs.append((d, units))
                if d < best[0]:
                    best = (d, lab, units)
    if max_paints >= 3:
        # A third paint into the best few pairs, a unit at a time.
        for _, units in sorted(pairs, key=lambda x: x[0])[:6]:
            for k in range(len(paints)):
                if k in units:
                    continue
                for u in (1, 2, 3):
                    mix = dict(units)
                    mix[k] = u
                    lab = km_lab(paints, mix)
                    d = de2000(want, lab)
                    if d < best[0]:
                        best = (d, lab, mix)
    return best[1], {paints[i]["name"]: (paints[i]["well"], u) for i, u in best[2].items()}


def kmeans(points, k):
    """Lab clusters, seeded far apart (deterministic)."""
    centres = [points[0]]
    while len(centres) < k:
        centres.append(max(points, key=lambda p: min(de2000(p, c) for c in centres)))
    for _ in range(8):
        groups = [[] for _ in centres]
        for p in points:
            groups[min(range(len(centres)), key=lambda i: de2000(p, centres[i]))].append(p)
        centres = [tuple(sum(v[j] for v in g) / len(g) for j in range(3)) if g else centres[i]
                   for i, g in enumerate(groups)]
    return centres


def r2(v):
    return round(v, 2)


# ---- the plan ----------------------------------------------------------------------------

class Plan:
    def __init__(self, req):
        self.req, self.m, self.o = req, req["machine"], req["options"]
        self.next_id = 1
        self.subtasks = []
        self.strokes = 0

    def action(self, kind, **fields):
        a = {"type": kind, "id": self.next_id, "speed_mm_s": self.o["travel_speed_mm_s"]}
        a.update(fields)
        self.next_id += 1
        return a

    def circling(self, station):
        """Stir and wash circle at half the station's radius: v^2 / R within the working curve acceleration."""
        v = math.sqrt(0.95 * self.m["motion"]["curve_accel_mm_s2"] * station["radius_mm"] / 2)
        return math.floor(min(self.o["travel_speed_mm_s"], v))

    def wash(self):
        return self.action("wash", zones=["travel", "water"], ms=self.o["wash_ms"],
                           speed_mm_s=self.circling(self.m["zones"]["water"]))

    def subtask(self, kind, **fields):
        s = {"id": len(self.subtasks) + 1, "type": kind}
        s.update(fields)
        self.subtasks.append(s)
        return s

    def mix(self, colour, recipe, ml):
        mx, cell = self.m["mixing"], colour["cell"]
        station = next(c for c in self.m["zones"]["mixing_cells"] if c["name"] == cell)
        units = max(1, round(min(mx["cell_max_ml"], max(mx["cell_min_ml"], ml)) / mx["dispense_unit_ml"]))
        # The recipe found, scaled to the volume: the host's mixing loop measures and corrects it itself.
        total = sum(u for _, u in recipe.values())
        items = [{"paint": name, "well": well, "units": max(1, round(u * units / total))}
                 for name, (well, u) in sorted(recipe.items())]
        acts = [self.action("dispense", zones=["travel", "well", "cell"], well=it["well"], cell=cell, units=it["units"])
                for it in items]
        acts += [
                 self.action("stir", zones=["travel", "cell"], cell=cell, depth_mm=r2(0.8 * station["depth_mm"]),
                             ms=mx["stir_ms"], speed_mm_s=self.circling(station)),
                 self.wash(),
                 self.action("wipe", zones=["travel", "wipe"]),
                 self.action("park", zones=["travel"])]
        self.subtask("mix", colour=colour["name"], target_lab=colour["lab"], volume_ml=r2(units * mx["dispense_unit_ml"]),
                     recipe=items, predicted_lab=colour["lab"], actions=acts)

    def paint(self, k, colour, runs, grid, canvas, batch):
        """One batch: a horizontal stroke along each run of cells (row, c0, c1), a dip before each load."""
        m, o, g = self.m, self.o, grid
        brush = max(m["brushes"], key=lambda b: b["width_mm"])
        half = brush["width_mm"] / 2.0
        z = r2(m["zones"]["canvas"]["surface_z_mm"] - min(o["press_mm"], m["motion"]["press_max_mm"]))
        ox, oy = m["zones"]["canvas"]["origin_mm"]
        sw, sh = m["zones"]["canvas"]["size_mm"]
        acts, left, cells, box = [], 0.0, [], [1e9, 1e9, -1e9, -1e9]
        for row, c0, c1 in runs:
            y = g["rect"][1] + (row + 0.5) * g["cell"]
            x0 = max(half, g["rect"][0] + c0 * g["cell"] + half / 2)
            x1 = min(sw - half, g["rect"][0] + (c1 + 1) * g["cell"] - half / 2)
            y = min(max(y, half), sh - half)
            if x1 - x0 < 1.0:
                x0, x1 = max(half, x0 - 1.0), min(sw - half, x0 + 1.0)
            if left < x1 - x0:
                acts.append(self.action("dip", zones=["travel", "cell"], brush=brush["name"], cell=colour["cell"],
                                        depth_mm=2.5))
                left = brush["reload_mm"]
            left -= x1 - x0
            acts.append(self.action("stroke", zones=["travel", "canvas"], brush=brush["name"],
                                    speed_mm_s=o["stroke_speed_mm_s"],
                                    points_mm=[[r2(ox + x0), r2(oy + y), z], [r2(ox + x1), r2(oy + y), z]]))
            box = [min(box[0], x0 - half), min(box[1], y - half), max(box[2], x1 + half), max(box[3], y + half)]
            for c in range(c0, c1 + 1):
                i = row * g["cols"] + c
                canvas[i] = tuple(canvas[i][j] + o["opacity"] * (colour["lab"][j] - canvas[i][j]) for j in range(3))
                cells.append({"cell": [c, row], "coverage": 1, "repaint": o["opacity"],
                              "lab": [r2(v) for v in canvas[i]]})
        acts += [self.wash(),
                 self.action("wipe", zones=["travel", "wipe"]), self.action("park", zones=["travel"])]
        n = sum(1 for a in acts if a["type"] == "stroke")
        self.strokes += n
        self.subtask("paint", colour=colour["name"], batch=batch, brush=brush["name"], strokes=n,
                     region_mm=[r2(max(0, box[0])), r2(max(0, box[1])), r2(min(sw, box[2])), r2(min(sh, box[3]))],
                     expected={"cells": cells}, actions=acts)

    def checkpoint(self, canvas, want):
        cols = self.grid["cols"]
        cells = [{"cell": [i % cols, i // cols], "coverage": 1, "lab": [r2(v) for v in c]} for i, c in enumerate(canvas)]
        mean = sum(de2000(c, w) for c, w in zip(canvas, want)) / len(canvas)
        self.subtask("checkpoint", expected={"predicted_mean_de00": r2(mean), "cells": cells},
                     actions=[self.action("park", zones=["travel"])])
        return mean


def runs_of(cells, cols):
    """(row, c0, c1) runs of consecutive cells along each row."""
    out = []
    for i in sorted(cells):
        row, c = divmod(i, cols)
        if out and out[-1][0] == row and out[-1][2] == c - 1:
            out[-1] = (row, out[-1][1], c)
        else:
            out.append((row, c, c))
    return out


def plan(req):
    m, o = req["machine"], req["options"]
    p = Plan(req)
    correct = req["phase"] == "correct"
    if correct:
        base = req["painting"]
        rect, cell_mm = base["target"]["rect_mm"], base["grid"]["cell_mm"]
    else:
        sw, sh = m["zones"]["canvas"]["size_mm"]
        tw, th = req["target"]["size_px"]
        s = min(sw / tw, sh / th)
        rect = [r2((sw - tw * s) / 2), r2((sh - th * s) / 2), r2(tw * s), r2(th * s)]
        cell_mm = o["cell_mm"]
    cols, rows = math.ceil(rect[2] / cell_mm - 1e-9), math.ceil(rect[3] / cell_mm - 1e-9)
    p.grid = {"rect": rect, "cell": cell_mm, "cols": cols, "rows": rows}
    want = cell_means(req["files"]["target"], rect, cell_mm, cols, rows)
    canvas_lab = tuple(o["canvas_lab"])
    if correct:
        colours = base["colours"]
        errs = req["error_map"]["de00"]
        # The run's canvas is unknown cell by cell here but for the error map: paint what is well off.
        todo = [i for i, e in enumerate(errs) if e is not None and e > 3.0]
        canvas = list(want)
        for i in todo:
            canvas[i] = canvas_lab
    else:
        k = o["colours"] or min(6, len(m["zones"]["mixing_cells"]))
        centres = sorted(kmeans(want, k), key=lambda c: -c[0])
        colours, p.recipes = [], []
        for i, c in enumerate(centres):
            lab, recipe = reachable(req["palette"], c, max_paints=m["mixing"]["max_paints"])
            colours.append({"name": "c%d" % (i + 1), "want_lab": [r2(v) for v in c], "lab": [r2(v) for v in lab],
                            "cell": m["zones"]["mixing_cells"][i]["name"], "paint_ml": 0, "strokes": 0,
                            "stroke_mm": 0})
            p.recipes.append(recipe)
        todo = list(range(cols * rows))
        canvas = [canvas_lab] * (cols * rows)
    # A cell the blank canvas already shows well enough needs no paint.
    todo = [i for i in todo if de2000(want[i], canvas_lab) > 2.0]
    nearest = {i: min(range(len(colours)), key=lambda k: de2000(want[i], colours[k]["lab"])) for i in todo}
    # Within the stroke budget, the longest runs first: they cover the most cells a stroke.
    runs = sorted(((k, r) for k in range(len(colours)) for r in runs_of([i for i in todo if nearest[i] == k], cols)),
                  key=lambda kr: kr[1][1] - kr[1][2])[:o["max_strokes"]]
    for k, colour in sorted(enumerate(colours), key=lambda kc: -kc[1]["lab"][0]):
        runs_k = sorted(r for kk, r in runs if kk == k)
        if not runs_k:
            continue
        if not correct:
            length = sum((c1 - c0 + 1) * cell_mm for _, c0, c1 in runs_k)
            brush = max(m["brushes"], key=lambda b: b["width_mm"])
            p.mix(colour, p.recipes[k], 1.5 * brush["load_ml"] * (len(runs_k) + length / brush["reload_mm"]))
        for b in range(0, len(runs_k), o["batch_strokes"]):
            p.paint(k, colour, runs_k[b:b + o["batch_strokes"]], p.grid, canvas, b // o["batch_strokes"])
        colour["strokes"] = sum(s["strokes"] for s in p.subtasks if s.get("colour") == colour["name"] and s["type"] == "paint")
    mean = p.checkpoint(canvas, want)
    return {"kind": "plan", "version": 1, "correction": correct,
            "target": {"file": req["files"]["target"], "hash": req["target"]["hash"],
                       "size_px": req["target"]["size_px"], "rect_mm": rect},
            "machine": {"name": m["name"], "canvas_origin_mm": m["zones"]["canvas"]["origin_mm"],
                        "canvas_size_mm": m["zones"]["canvas"]["size_mm"],
                        "canvas_surface_z_mm": m["zones"]["canvas"]["surface_z_mm"]},
            "model": {"canvas_lab": list(canvas_lab), "opacity": o["opacity"]},
            "grid": {"cell_mm": cell_mm, "cols": cols, "rows": rows},
            "predicted": {"mean_de00": r2(mean), "p95_de00": r2(mean * 2)},
            "strokes": p.strokes, "arm_time_s": 0, "colours": colours, "subtasks": p.subtasks, "unfixable": []}


def main():
    req = json.loads(sys.stdin.buffer.readline())
    answer = {"type": "answer", "id": req["id"], "plan": plan(req), "usage": {"tokens": 0, "money": 0}}
    sys.stdout.write(json.dumps(answer, separators=(",", ":")) + "\n")
    sys.stdout.flush()
    verdict = sys.stdin.readline()
    sys.stderr.write("grid_planner: verdict " + verdict)


if __name__ == "__main__":
    main()
