#!/usr/bin/env python3
"""test_layers.py: every `#include "part/..."` of the product points down HACKING.md's layer table, its one source."""
import os
import re
import sys

SRC = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("BRUSHLOOP_SRC", ".")
SOURCE_ENDS = (".c", ".h", ".cpp", ".hpp", ".cc", ".def", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/[^"]*"')


def part_of(path):
    """The part a directory or file of the tree belongs to: host/X/... is X, any other top folder its own name."""
    bits = path.strip().strip("/").split("/")
    return bits[1] if bits[0] == "host" and len(bits) > 1 else bits[0]


EXCEPTION = re.compile(r"^- `(\w+)` includes `(\w+)`:")


def read_layers(hacking):
    """{part: row} from the table under '## The layers' (row 0 the lowest; a row's parts are peers), its
    directories, and the set of (part, part) its list of includes that point up on purpose names."""
    rank, dirs, allowed, in_section, row = {}, [], set(), False, 0
    with open(hacking, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                in_section = line.strip() == "## The layers"
                continue
            m = EXCEPTION.match(line) if in_section else None
            if m:
                allowed.add((m.group(1), m.group(2)))
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")] if in_section and line.startswith("|") else []
            if len(cells) < 2 or cells[0] == "layer" or set(cells[0]) <= set("-: "):
                continue
            for d in cells[1].split(","):
                d = d.strip().rstrip("*").strip("/")
                rank[part_of(d)] = row
                dirs.append(d)
            row += 1
    return rank, dirs, allowed


def main():
    rank, dirs, allowed = read_layers(os.path.join(SRC, "HACKING.md"))
    if len(set(rank.values())) < 10:
        print(f"HACKING.md: the layer table has {len(set(rank.values()))} rows, fewer than the 10 it must: not read")
        return 1
    bad, files, includes = [], 0, 0
    # A part the tree has and the table lacks is a layer nobody placed.
    for top in ["host"]:
        for name in sorted(os.listdir(os.path.join(SRC, top))):
            if os.path.isdir(os.path.join(SRC, top, name)) and name not in rank:
                bad.append(f"{top}/{name}: a part HACKING.md's layer table does not name")
    for d in dirs:
        for root, _, names in os.walk(os.path.join(SRC, d)):
            for name in sorted(names):
                if not name.endswith(SOURCE_ENDS):
                    continue
                path = os.path.relpath(os.path.join(root, name), SRC)
                own = part_of(path)
                files += 1
                with open(os.path.join(SRC, path), encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        includes += 1
                        to = m.group(1)
                        if to not in rank:
                            bad.append(f"{path}:{n}: {own} includes {line.strip()[8:].strip()}, of a part the layer table does not name")
                        elif rank[to] > rank[own] and (own, to) not in allowed:
                            bad.append(f"{path}:{n}: {own} includes {line.strip()[8:].strip()}, from {to}, a layer above it")
    for b in bad:
        print(b)
    print(f"{files} files, {includes} includes of a part, {len(set(rank.values()))} layers: "
          f"{len(bad)} pointing up or outside the table")
    return 1 if bad or files == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
