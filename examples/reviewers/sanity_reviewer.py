#!/usr/bin/env python3
"""sanity_reviewer.py: an external reviewer written from docs/reviewer.md alone: it agrees when the frame is a real JPEG of the whole view and the run's verdict follows from the run's own figures and the built-in rules found nothing wrong.

Standard library only (the sandbox has /usr and nothing else of the host). One request line in,
one answer line out; agreement is all it can give, and any answer but agree withholds it.
"""
import json
import math
import struct
import sys


def jpeg_size(path):
    """(width, height) from a JPEG's first frame header, or None when the file is not a JPEG."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[:2] != b"\xff\xd8":
        return None
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        (length,) = struct.unpack(">H", data[i + 2:i + 4])
        # Start of frame (baseline, extended, progressive): precision, height, width.
        if marker in (0xC0, 0xC1, 0xC2) and i + 9 <= len(data):
            height, width = struct.unpack(">HH", data[i + 5:i + 9])
            return width, height
        i += 2 + length
    return None


def number(o, key):
    v = o.get(key) if isinstance(o, dict) else None
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def review(req):
    """(agree, reason) for one request."""
    point = req.get("point")
    meas, exp = req.get("measurement", {}), req.get("expected", {})
    frame = req.get("files", {}).get("frame", "")
    try:
        size = jpeg_size(frame)
    except OSError as e:
        return False, f"the frame {frame} cannot be read: {e.strerror}"
    if not size or size[0] < 64 or size[1] < 64:
        return False, f"the frame {frame} is not a JPEG of a camera's view"
    if point == "checkpoint":
        figure, tol = number(meas, "observed_vs_predicted_de00"), number(exp, "tolerance_de00")
    elif point == "mix":
        figure, tol = number(meas, "de00"), number(exp, "tolerance_de00")
        lab = meas.get("measured_lab")
        if not (isinstance(lab, list) and len(lab) == 3 and all(isinstance(x, (int, float)) for x in lab)
                and 0 <= lab[0] <= 100):
            return False, "the measured mix is not a colour (measured_lab)"
    else:
        return False, f"a review point I do not know: {point!r}"
    if figure is None or tol is None or figure < 0:
        return False, "the run's figures are missing or not numbers"
    said = req.get("verdict")
    follows = "pass" if figure <= tol else "fail"
    if said != follows:
        return False, f"the run says {said} but its figure {figure:.2f} against {tol:g} says {follows}"
    rules = req.get("rules", {})
    if rules.get("agree") is False:
        fired = [r.get("rule") for r in rules.get("rules", []) if r.get("judged") and not r.get("agree")]
        return False, "the built-in rules disagree: " + ", ".join(str(r) for r in fired)
    return True, f"the frame is a {size[0]}x{size[1]} JPEG and the verdict {said} follows from {figure:.2f} against {tol:g}"


def main():
    line = sys.stdin.readline()
    try:
        req = json.loads(line)
    except ValueError:
        return 2
    agree, reason = review(req)
    sys.stdout.write(json.dumps({"type": "answer", "id": req.get("id"), "agree": agree, "reason": reason}) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
