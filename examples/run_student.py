#!/usr/bin/env python3
"""Runs an EdgeTrain student exported to ONNX on a video, with OpenCV's dnn module alone, and
draws its boxes.

The file says how to run it: its metadata (keys edgetrain.*, written by
`edgetrain-cli export --session DIR --out student.onnx`) gives the input size and
normalisation, the heads and their stride, the decoding and the operating threshold. This
script decodes exactly as EdgeTrain does (3x3 heatmap peaks, size and offset, the mirror view,
NMS), so its boxes are the ones `edgetrain-cli detect --detector session:DIR` prints.

    python3 run_student.py student.onnx video.avi --out boxes.avi
    python3 run_student.py student.onnx video.avi --frames 0,40,80 --out frames/ --json

Needs python3-opencv and python3-numpy; python3-onnx reads the metadata (onnx.load).
"""
import argparse
import json
import os
import sys

import cv2
import numpy as np
import onnx


def read_metadata(path):
    """The file's metadata_props as a dict; refuses a file that is not an EdgeTrain student."""
    meta = {p.key: p.value for p in onnx.load(path).metadata_props}
    if meta.get("edgetrain.format") != "centernet-student/1":
        sys.exit(f"{path}: not an EdgeTrain student export (edgetrain.format is "
                 f"{meta.get('edgetrain.format')!r})")
    return meta


class Student:
    def __init__(self, path, threshold=None):
        m = read_metadata(path)
        self.size = (int(m["edgetrain.input.width"]), int(m["edgetrain.input.height"]))
        self.mean = np.array([float(v) for v in m["edgetrain.input.mean"].split(",")], np.float32)
        self.std = np.array([float(v) for v in m["edgetrain.input.std"].split(",")], np.float32)
        self.stride = float(m["edgetrain.output.stride"])
        self.top_k = int(m["edgetrain.decode.top_k"])
        self.nms_iou = float(m["edgetrain.decode.nms_iou"])
        self.mirror = m["edgetrain.operating_views"] == "mirror"
        self.mirror_iou = float(m["edgetrain.decode.mirror_iou"])
        self.threshold = float(m["edgetrain.operating_threshold"]) if threshold is None else threshold
        self.net = cv2.dnn.readNetFromONNX(path)

    def input_batch(self, bgr):
        """Resized with INTER_AREA, (pixel / 255 - mean) / std per BGR channel, CHW; its mirror."""
        resized = cv2.resize(bgr, self.size, interpolation=cv2.INTER_AREA)
        views = [resized, cv2.flip(resized, 1)] if self.mirror else [resized]
        x = [((v.astype(np.float32) / np.float32(255) - self.mean) / self.std).transpose(2, 0, 1)
             for v in views]
        return np.ascontiguousarray(np.stack(x), dtype=np.float32)

    def peaks(self, heads, threshold):
        """One view's boxes [x0, y0, x1, y1, score] in input pixels, highest score first."""
        z = heads[0]
        th = np.float32(min(max(threshold, 1e-6), 1 - 1e-6))
        min_logit = np.log(th / (np.float32(1) - th))  # in float32, as EdgeTrain compares
        # A peak: no cell of its 3x3 neighbourhood is greater (dilate pads with -inf).
        peak = (z >= min_logit) & (z >= cv2.dilate(z, np.ones((3, 3), np.uint8)))
        ys, xs = np.nonzero(peak)  # row-major order, as the cells are scanned
        s = self.stride
        cx = (xs + heads[3, ys, xs]) * s
        cy = (ys + heads[4, ys, xs]) * s
        bw = np.exp(np.clip(heads[1, ys, xs], -20, 20)) * s
        bh = np.exp(np.clip(heads[2, ys, xs], -20, 20)) * s
        score = 1.0 / (1.0 + np.exp(-z[ys, xs].astype(np.float64)))
        boxes = [[cx[i] - bw[i] / 2, cy[i] - bh[i] / 2, cx[i] + bw[i] / 2, cy[i] + bh[i] / 2,
                  score[i]] for i in range(len(xs))]
        boxes.sort(key=lambda b: -b[4])  # stable
        return boxes[:self.top_k]

    def fuse(self, frame, mirrored):
        """A box with a partner in the other view (IoU >= mirror_iou, the best-scored free one)
        becomes their score-weighted average scored by the mean; a box alone keeps half."""
        pool = [(b, 0) for b in frame] + [(b, 1) for b in mirrored]
        pool.sort(key=lambda c: -c[0][4])
        used = [False] * len(pool)
        fused = []
        for i, (a, view) in enumerate(pool):
            if used[i]:
                continue
            used[i] = True
            out = a[:4] + [a[4] / 2]
            for j in range(i + 1, len(pool)):
                b, other = pool[j]
                if used[j] or other == view or iou(a, b) < self.mirror_iou:
                    continue
                used[j] = True
                wa = a[4] / (a[4] + b[4])
                wb = 1 - wa
                out = [wa * a[k] + wb * b[k] for k in range(4)] + [(a[4] + b[4]) / 2]
                break
            fused.append(out)
        return fused

    def detect(self, bgr):
        """Boxes [x, y, w, h, score] in frame pixels."""
        self.net.setInput(self.input_batch(bgr))
        heads = self.net.forward()
        th = np.float32(self.threshold)
        if self.mirror:
            width = self.size[0]
            frame = self.peaks(heads[0], th / np.float32(2))
            back = [[width - b[2], b[1], width - b[0], b[3], b[4]]
                    for b in self.peaks(heads[1], th / np.float32(2))]
            boxes = [b for b in self.fuse(frame, back) if b[4] >= th]
            boxes.sort(key=lambda b: -b[4])
            boxes = boxes[:self.top_k]
        else:
            boxes = self.peaks(heads[0], th)
        kx, ky = bgr.shape[1] / self.size[0], bgr.shape[0] / self.size[1]
        found = []
        for x0, y0, x1, y1, score in boxes:
            x0, y0 = max(0.0, x0 * kx), max(0.0, y0 * ky)
            x1, y1 = min(float(bgr.shape[1]), x1 * kx), min(float(bgr.shape[0]), y1 * ky)
            if x1 - x0 >= 1 and y1 - y0 >= 1:
                found.append([x0, y0, x1, y1, score])
        return [[b[0], b[1], b[2] - b[0], b[3] - b[1], b[4]] for b in self.nms(found)]

    def nms(self, boxes):
        """Greedy: drops a box overlapping a kept one by IoU > nms_iou, or lying mostly (70 %)
        inside it (or it inside the box)."""
        boxes = sorted(boxes, key=lambda b: -b[4])
        kept = []
        for b in boxes:
            if all(iou(k, b) <= self.nms_iou and
                   intersection(k, b) <= 0.7 * min(area(k), area(b)) for k in kept):
                kept.append(b)
        return kept


def area(b):
    return (b[2] - b[0]) * (b[3] - b[1])


def intersection(a, b):
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def iou(a, b):
    inter = intersection(a, b)
    return inter / (area(a) + area(b) - inter) if inter > 0 else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="the exported student (.onnx)")
    parser.add_argument("video", help="a video file OpenCV reads")
    parser.add_argument("--out", help="a video (.avi) of the frames with their boxes, or a "
                        "folder (ending in /) for one JPEG per frame")
    parser.add_argument("--frames", help="only these frames (0-based, comma-separated)")
    parser.add_argument("--max-frames", type=int, default=0, help="stop after N frames")
    parser.add_argument("--threshold", type=float, help="instead of the file's own")
    parser.add_argument("--json", action="store_true", help="the boxes as JSON on stdout")
    args = parser.parse_args()

    student = Student(args.model, args.threshold)
    wanted = {int(f) for f in args.frames.split(",")} if args.frames else None
    video = cv2.VideoCapture(args.video)
    if not video.isOpened():
        sys.exit(f"cannot read the video {args.video}")
    writer = None
    if args.out and args.out.endswith("/"):
        os.makedirs(args.out, exist_ok=True)
    results = []
    index = -1
    while True:
        ok, frame = video.read()
        index += 1
        if not ok or (args.max_frames and index >= args.max_frames) or \
                (wanted is not None and index > max(wanted)):
            break
        if wanted is not None and index not in wanted:
            continue
        boxes = student.detect(frame)
        results.append({"index": index, "boxes": [
            {"x": b[0], "y": b[1], "w": b[2], "h": b[3], "score": b[4]} for b in boxes]})
        print(f"frame {index}: {len(boxes)} boxes", file=sys.stderr)
        if args.out:
            for x, y, w, h, score in boxes:
                cv2.rectangle(frame, (round(x), round(y)), (round(x + w), round(y + h)),
                              (0, 200, 255), 2)
                cv2.putText(frame, f"{score:.2f}", (round(x), round(y) - 3),
                            cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 200, 255), 1)
            if args.out.endswith("/"):
                cv2.imwrite(os.path.join(args.out, f"{index:05d}.jpg"), frame)
            else:
                if writer is None:
                    fps = video.get(cv2.CAP_PROP_FPS) or 25.0
                    writer = cv2.VideoWriter(args.out, cv2.VideoWriter_fourcc(*"MJPG"), fps,
                                             (frame.shape[1], frame.shape[0]))
                writer.write(frame)
    if writer is not None:
        writer.release()
    if args.json:
        print(json.dumps({"model": args.model, "frames": results}))


if __name__ == "__main__":
    main()
