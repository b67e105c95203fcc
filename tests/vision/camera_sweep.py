#!/usr/bin/env python3
"""The camera sweep of issue 45: every teacher x every tracker runs `edgetrain-cli label` over
clips of the cameras a field engineer meets, made from the videos Debian ships (camera-clips):
frame rates 2, 5, 10 and 30/s, sizes 320x240 to 1920x1080 and a portrait one, greyscale, a
10-frame clip, a frozen and a black stretch, a video whose first frames are corrupt
(Megamind_bugy.avi), a folder with one unreadable image, a file cut off half-way (a camera gone
mid-run), and files that are no video at all.

Each run must end the way its source allows: labelled (exit 0), or stopped with the labels so
far kept (exit 1, labels.json written, the reason said), or refused with a message naming the
source (exit 1, before any work). A signal, an OpenCV assertion on stderr, an uncaught exception
or a run over the time limit is a failure. Prints the table (source x teacher x tracker -> result,
seconds) as Markdown; exits 1 if any run failed.

  tests/vision/camera_sweep.py --bin build/default/bin --tools build/default/tests \\
      --work /tmp/sweep [--frames 150] [--slow-frames 40] [--jobs 2] [--table sweep.md]
      [--only fps5] [--matrix quick|full]

--matrix full (the default) runs every source x teacher x tracker. quick, what ctest runs, keeps
every source x tracker with one teacher each, taken in turn from the four (so each teacher meets
every tracker on several sources), and all four teachers on the two lowest frame rates, where
the issue's crash was: about a third of the runs.
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time

DATA = "/usr/share/doc/opencv-doc/examples/data"
CASCADE = "/usr/share/opencv4/haarcascades/haarcascade_fullbody.xml"
TEACHERS = ["hog", "cascade:" + CASCADE, "motion", "hog+motion"]
TRACKERS = ["kcf", "csrt", "mil", "mosse", "medianflow"]
SLOW = {"csrt", "mil"}  # 10-20 times slower a frame than the others: fewer frames each


def sources(clips, frames):
    """(name, path, what the source allows, frames to label)."""
    return [
        ("fps2", f"{clips}/fps2.avi", "ok", frames),
        ("fps5", f"{clips}/fps5.avi", "ok", frames),
        ("fps10 (vtest.avi)", f"{DATA}/vtest.avi", "ok", frames),
        ("fps30", f"{clips}/fps30.avi", "ok", frames),
        ("320x240", f"{clips}/size320x240.avi", "ok", frames),
        ("1920x1080", f"{clips}/size1920x1080.avi", "ok", min(frames, 60)),
        ("portrait 432x576", f"{clips}/portrait.avi", "ok", frames),
        ("greyscale", f"{clips}/grey.avi", "ok", frames),
        ("10 frames", f"{clips}/short.avi", "ok", frames),
        ("frozen + black", f"{clips}/frozen-black.avi", "ok", frames),
        ("corrupt start (Megamind_bugy.avi)", f"{DATA}/Megamind_bugy.avi", "ok", frames),
        ("folder, 1 unreadable", f"{clips}/folder", "stopped", frames),
        ("cut off half-way", f"{clips}/ends-early.avi", "ok", frames),
        ("empty file", f"{clips}/empty.avi", "refused", frames),
        ("not a video", f"{clips}/not-a-video.avi", "refused", frames),
    ]


def judge(rc, stderr, session, expected):
    """(result, passed): what the run did, and whether its source allows that."""
    # OpenCV logs the exceptions it handles itself while probing its video backends; what
    # counts is one that reaches edgetrain-cli's own error line, or an abort.
    said = [l for l in stderr.splitlines() if l.startswith("edgetrain-cli label: error:")]
    crashed = (rc < 0 or rc > 2 or "terminate called" in stderr
               or any("OpenCV(" in l for l in said))
    if crashed:
        return f"CRASH (exit {rc})", False
    if rc == 2:
        return "usage error", False
    labels = os.path.exists(os.path.join(session, "labels.json"))
    if rc == 0:
        return "ok", expected == "ok" and labels
    message = said[-1] if said else ""
    if labels:
        return "stopped, labels kept", expected == "stopped" and "labelling stopped at frame" in stderr
    return "refused", expected == "refused" and "edgetrain-cli label: error:" in message


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="folder with edgetrain-cli")
    ap.add_argument("--tools", required=True, help="folder with camera-clips")
    ap.add_argument("--work", required=True, help="scratch folder (clips, sessions)")
    ap.add_argument("--frames", type=int, default=150, help="frames labelled per run")
    ap.add_argument("--slow-frames", type=int, default=40,
                    help="frames labelled per run with csrt and mil")
    ap.add_argument("--jobs", type=int, default=2, help="runs at once")
    ap.add_argument("--timeout", type=float, default=300, help="seconds a run may take")
    ap.add_argument("--table", help="also write the table here")
    ap.add_argument("--only", help="sources whose name contains this")
    ap.add_argument("--matrix", choices=["full", "quick"], default="full",
                    help="every teacher on every source, or a third of the runs (see above)")
    a = ap.parse_args()

    clips = os.path.join(a.work, "clips")
    if not os.path.exists(os.path.join(clips, "ends-early.avi")):
        # Every second source frame kept for the 5/s clip: enough frames for the run length.
        subprocess.run([os.path.join(a.tools, "camera-clips"), "--in", f"{DATA}/vtest.avi",
                        "--out", clips, "--frames", str(2 * a.frames)], check=True)
        open(os.path.join(clips, "empty.avi"), "wb").close()
        with open(os.path.join(clips, "not-a-video.avi"), "w") as f:
            f.write("a recorder's error page, saved as .avi\n")
    env = dict(os.environ, LC_ALL="C.UTF-8")
    runs = []
    for i, (name, path, expected, frames) in enumerate(sources(clips, a.frames)):
        if a.only and a.only not in name:
            continue
        teachers = TEACHERS
        if a.matrix == "quick" and not name.startswith(("fps2", "fps5")):
            teachers = [TEACHERS[i % len(TEACHERS)]]
        for teacher in teachers:
            for tracker in TRACKERS:
                n = min(frames, a.slow_frames) if tracker in SLOW else frames
                runs.append((len(runs), name, path, expected, n, teacher, tracker))

    def one(run):
        index, name, path, expected, frames, teacher, tracker = run
        session = os.path.join(a.work, "sessions", f"{index:03d}")
        shutil.rmtree(session, ignore_errors=True)
        cmd = [os.path.join(a.bin, "edgetrain-cli"), "label", "--source", path, "--teacher",
               teacher, "--tracker", tracker, "--max-frames", str(frames), "--out", session,
               "--json"]
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=a.timeout)
            rc, stdout, stderr = p.returncode, p.stdout, p.stderr
            result, ok = judge(rc, stderr, session, expected)
        except subprocess.TimeoutExpired:
            rc, stdout, stderr = None, "", ""
            result, ok = f"HANG (over {a.timeout:.0f} s)", False
        seconds = time.monotonic() - t0
        detail = ""
        if rc in (0, 1) and stdout.strip():
            try:
                j = json.loads(stdout.strip().splitlines()[-1])
                if "tracks" in j:
                    detail = (f"{j['frames']} frames, {j['tracks']} tracks, "
                              f"{j['dropped_boxes']['total']} dropped, "
                              f"{j['tracker_failures']} tracker errors"
                              + (", ended early" if j.get("ended_early") else ""))
                elif "error" in j:
                    detail = j["error"]
            except (ValueError, KeyError):
                detail = "no JSON line"
                ok = False
        if not ok:
            tail = "\n".join(stderr.strip().splitlines()[-3:])
            print(f"FAILED: {name} / {teacher} / {tracker}: {result}\n  {' '.join(cmd)}"
                  f"\n  {tail}", file=sys.stderr, flush=True)
        short_teacher = "cascade (full body)" if teacher.startswith("cascade:") else teacher
        return (name, short_teacher, tracker, result, seconds, detail, ok)

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        rows = list(pool.map(one, runs))
    failed = sum(1 for r in rows if not r[6])
    lines = ["| source | teacher | tracker | result | s | what it said |",
             "|---|---|---|---|---:|---|"]
    for name, teacher, tracker, result, seconds, detail, ok in rows:
        mark = "" if ok else " **(unexpected)**"
        lines.append(f"| {name} | {teacher} | {tracker} | {result}{mark} | {seconds:.1f} "
                     f"| {detail} |")
    table = "\n".join(lines)
    print(table)
    summary = (f"{len(rows)} runs in {time.monotonic() - start:.0f} s: "
               f"{len(rows) - failed} as their source allows, {failed} not")
    print(summary)
    if a.table:
        with open(a.table, "w") as f:
            f.write(table + "\n\n" + summary + "\n")
    return 1 if failed or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
