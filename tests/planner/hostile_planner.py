#!/usr/bin/python3
# hostile_planner.py: a planner that breaks the protocol on purpose, one way a run (tests only): hostile_planner.py MODE GRID_PLANNER_PY
#
# Modes that need a plausible plan start from examples/planners/grid_planner.py's (its file named by the
# second argument: the sandbox holds the files a planner names, never their folders) and spoil it.
# egress:PORT[,PORT]: asks the broker (docs/sandbox.md, "The broker") for localhost:PORT each phase, for each port,
# sends one line through when it is let through, then plans as grid_planner.py does.
import importlib.util
import json
import sys
import time

mode, _, mode_arg = sys.argv[1].partition(":")
grid_file = sys.argv[2]
req_line = sys.stdin.buffer.readline()
out = sys.stdout.buffer


def send(obj):
    out.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
    out.flush()


def grid_planner():
    spec = importlib.util.spec_from_file_location("grid_planner", grid_file)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def good_plan():
    return grid_planner().plan(json.loads(req_line))


def first(plan, kind):
    return next(s for s in plan["subtasks"] if s["type"] == kind)


req = json.loads(req_line)
if mode == "malformed":
    out.write(b'{"type": "answer", "id": 1, "plan": {"kind": "plan",\n')
    out.flush()
elif mode == "schema":
    send({"type": "answer", "id": req["id"], "plan": {"kind": "plan", "version": 1, "subtasks": "all of them"}})
elif mode == "wrong_id":
    send({"type": "answer", "id": req["id"] + 7, "plan": good_plan()})
elif mode == "million":
    # 10^6 subtasks, streamed: far past any answer's size limit.
    out.write(b'{"type":"answer","id":%d,"plan":{"kind":"plan","version":1,"subtasks":[' % req["id"])
    cp = b'{"id":%d,"type":"checkpoint","expected":{"predicted_mean_de00":1,"cells":[]},"actions":[]}'
    for i in range(1, 1000001):
        out.write((b"," if i > 1 else b"") + cp % i)
    out.write(b"]}}\n")
    out.flush()
elif mode == "gigabyte":
    chunk = b"x" * (1 << 20)
    for _ in range(1024):
        out.write(chunk)
    out.flush()
elif mode == "never":
    while True:
        time.sleep(60)
elif mode == "late":
    # A whole answer, but after the deadline (the test machine's is 2 s).
    time.sleep(5)
    send({"type": "answer", "id": req["id"], "plan": {"kind": "plan"}})
elif mode == "hard_limit":
    plan = good_plan()
    stroke = next(a for s in plan["subtasks"] for a in s["actions"] if a["type"] == "stroke")
    stroke["speed_mm_s"] = 100000
    send({"type": "answer", "id": req["id"], "plan": plan})
elif mode == "outside":
    plan = good_plan()
    stroke = next(a for s in plan["subtasks"] for a in s["actions"] if a["type"] == "stroke")
    stroke["points_mm"][0][2] = -10  # inside the work area, through the canvas below its floor
    send({"type": "answer", "id": req["id"], "plan": plan})
elif mode == "loose":
    plan = good_plan()
    first(plan, "paint")["expected"]["tolerance_de00"] = 50
    send({"type": "answer", "id": req["id"], "plan": plan})
elif mode == "verified_inside":
    plan = good_plan()
    first(plan, "paint")["verified"] = True
    send({"type": "answer", "id": req["id"], "plan": plan})
elif mode == "claims":
    # Says it verified its own work, measured a colour, spent nothing and was approved: all claims.
    send({"type": "answer", "id": req["id"], "plan": good_plan(), "verified": True,
          "measured_lab": [50, 0, 0], "usage": {"tokens": 123, "money": 0},
          "approval": {"request": "r000001", "answer": "yes", "digest": "0" * 64, "by": "planner"}})
elif mode == "over_strokes":
    # A painting of 30 strokes whatever options.max_strokes says.
    r = json.loads(req_line)
    r["options"]["max_strokes"] = 30
    send({"type": "answer", "id": req["id"], "plan": grid_planner().plan(r)})
elif mode == "uncorrected":
    # The painting as asked; then each correction round answered with the whole painting again
    # (correction false, a mix of every colour, the painting's strokes).
    r = json.loads(req_line)
    r["phase"] = "plan"
    send({"type": "answer", "id": req["id"], "plan": grid_planner().plan(r)})
elif mode == "egress":
    import socket
    for port in mode_arg.split(","):
        try:
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.settimeout(10)
            c.connect("/run/egress.sock")
            c.sendall(b"CONNECT localhost:%s HTTP/1.1\r\n\r\n" % port.encode())
            if c.recv(4096).startswith(b"HTTP/1.1 200"):
                c.sendall(b"planner phase %d\n" % req["id"])
            c.close()
        except OSError as e:
            print("egress to %s: %s" % (port, e), file=sys.stderr)
    send({"type": "answer", "id": req["id"], "plan": good_plan()})
else:
    sys.exit("unknown mode " + mode)
sys.stdin.readline()
