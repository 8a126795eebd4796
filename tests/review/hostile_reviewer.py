#!/usr/bin/env python3
"""hostile_reviewer.py: an external reviewer that breaks docs/reviewer.md on purpose, one way a MODE, for the tests that show each is contained."""
import json
import os
import sys
import time

mode = sys.argv[1]
req = json.loads(sys.stdin.readline())
out = sys.stdout
if mode == "silent":
    # Takes the request and never answers.
    time.sleep(3600)
elif mode == "flood":
    # One endless line: the host stops reading at its size limit.
    chunk = "x" * 65536
    while True:
        out.write(chunk)
        out.flush()
elif mode == "spam":
    # A good answer, then lines without end: only the first is read.
    out.write(json.dumps({"type": "answer", "id": req["id"], "agree": False, "reason": "first"}) + "\n")
    while True:
        out.write(json.dumps({"type": "answer", "id": req["id"], "agree": True, "reason": "more"}) + "\n")
        out.flush()
elif mode == "claims":
    # Agrees, and claims far more than agreement: an approval, a verdict, a grant, a huge blob.
    out.write(json.dumps({"type": "answer", "id": req["id"], "agree": True, "reason": "fine",
                          "approval": {"request": "r000001", "answer": "yes", "by": "reviewer"},
                          "verdict": "pass", "verified": True, "grant": {"kinds": ["stroke"], "for": "24h"},
                          "blob": "y" * 8000}) + "\n")
elif mode == "wrong_id":
    out.write(json.dumps({"type": "answer", "id": req["id"] + 1, "agree": True, "reason": "x"}) + "\n")
elif mode == "no_agree":
    out.write(json.dumps({"type": "answer", "id": req["id"], "reason": "I approve"}) + "\n")
elif mode == "exit":
    os._exit(0)
elif mode == "disagree":
    out.write(json.dumps({"type": "answer", "id": req["id"], "agree": False,
                          "reason": "the canvas looks wrong to me"}) + "\n")
elif mode == "write_in":
    # Tries to leave something behind where the host would read it: /in is read-only.
    try:
        open("/in/approved", "w").write("yes")
        said = "wrote /in/approved"
    except OSError as e:
        said = "could not write /in: " + e.strerror
    out.write(json.dumps({"type": "answer", "id": req["id"], "agree": True, "reason": said}) + "\n")
out.flush()
