#!/usr/bin/env python3
"""Issue #42: the exported student stands on its own. On frames of vtest.avi,
examples/run_student.py (OpenCV's Python dnn and the file's metadata, nothing of EdgeTrain) finds
the boxes `edgetrain-cli detect --detector session:DIR` finds, and so does
`--detector onnx:FILE` on the file `edgetrain-cli export` wrote. Also: export's bad input exits
with a message naming it. Uses the session tst_onnxexport leaves (ctest fixture student_export).

    run_student_check.py --cli BIN/edgetrain-cli --example examples/run_student.py --dir DIR
"""
import argparse
import json
import subprocess
import sys

VIDEO = "/usr/share/doc/opencv-doc/examples/data/vtest.avi"
FRAMES = "15,95,175,255,335,415,495,575"


def run(args, expect=0):
    p = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if p.returncode != expect:
        sys.exit(f"{' '.join(args)}: exit {p.returncode}, expected {expect}\n{p.stderr}")
    return p


def boxes(stdout):
    frames = json.loads(stdout.strip().splitlines()[-1])["frames"]
    return {f["index"]: [(b["x"], b["y"], b["w"], b["h"], b["score"]) for b in f["boxes"]]
            for f in frames}


def compare(name, got, want, tolerance):
    if sorted(got) != sorted(want):
        sys.exit(f"{name}: frames {sorted(got)}, expected {sorted(want)}")
    for f in want:
        if len(got[f]) != len(want[f]):
            sys.exit(f"{name}: frame {f} has {len(got[f])} boxes, detect found {len(want[f])}")
        for a, b in zip(sorted(got[f]), sorted(want[f])):
            off = max(abs(x - y) for x, y in zip(a, b))
            if off > tolerance:
                sys.exit(f"{name}: frame {f}: box {a} differs from detect's {b} by {off}")
    print(f"{name}: the same {sum(len(v) for v in want.values())} boxes as detect on "
          f"{len(want)} frames")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--example", required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--frames", default=FRAMES, help="vtest.avi frames (0-based, commas)")
    a = parser.parse_args()
    session, onnx_file = a.dir + "/session", a.dir + "/cli-student.onnx"

    bad = run([a.cli, "export", "--session", session, "--format", "tflite", "--out", onnx_file], 2)
    assert "tflite" in bad.stderr, bad.stderr
    missing = run([a.cli, "export", "--session", a.dir + "/nowhere", "--out", onnx_file], 2)
    assert "nowhere" in missing.stderr, missing.stderr
    written = run([a.cli, "export", "--session", session, "--out", onnx_file, "--json"])
    assert json.loads(written.stdout.strip().splitlines()[-1])["format"] == "onnx"

    detect = [a.cli, "detect", "--source", VIDEO, "--frames", a.frames, "--json", "--detector"]
    want = boxes(run(detect + ["session:" + session]).stdout)
    if sum(len(v) for v in want.values()) == 0:
        sys.exit("the student finds nothing on these frames: nothing would be compared")
    compare("detect --detector onnx:", boxes(run(detect + ["onnx:" + onnx_file]).stdout), want,
            0.01)
    example = run(["/usr/bin/python3", a.example, onnx_file, VIDEO, "--frames", a.frames, "--json",
                   "--out", a.dir + "/drawn/"])
    compare("examples/run_student.py", boxes(example.stdout), want, 0.05)


if __name__ == "__main__":
    main()
