#!/usr/bin/env python3
"""Makes the tiny ONNX models tst_vision loads (checked in; rerun with python3-torch to remake).

Each is global average pooling -> one linear layer -> reshape, the operations every cv::dnn
version imports: the outputs are fixed boxes whose confidence is the image's mean brightness.

tiny_ssd.onnx   SSD-style head, output 1x1x2x7 (image, label, confidence, x1, y1, x2, y2 in [0, 1]):
                box 1 (label 1) at (0.25, 0.125)-(0.75, 0.875), confidence = brightness;
                box 2 (label 2), confidence = brightness / 10 (never passes 0.5).
tiny_yolo.onnx  YOLO-style head, output 1x2x7 (cx, cy, w, h in input pixels, objectness, 2 class
                scores): box 1 (32, 32, 32, 48), objectness = brightness, classes (0.1, 0.9);
                box 2 (10, 10, 8, 8), objectness = brightness / 10.
classifier.onnx a 10-way classifier (output 1x10): loads, runs, is not a detector.
"""
import torch


def fixed(rows, gains):
    """A linear map from the 3 channel means to the rows: bias = rows, weight = gains / 3."""
    flat = torch.tensor(rows, dtype=torch.float32).flatten()
    lin = torch.nn.Linear(3, flat.numel())
    with torch.no_grad():
        lin.bias.copy_(flat)
        lin.weight.zero_()
        for index, gain in gains.items():
            lin.weight[index, :] = gain / 3.0
    return lin


class Head(torch.nn.Module):
    def __init__(self, lin, shape):
        super().__init__()
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.lin = lin
        self.shape = shape

    def forward(self, x):
        return self.lin(torch.flatten(self.pool(x), 1)).reshape(self.shape)


ssd = Head(fixed([[0, 1, 0, 0.25, 0.125, 0.75, 0.875], [0, 2, 0, 0.0, 0.0, 0.5, 0.5]], {2: 1.0, 9: 0.1}),
           (1, 1, 2, 7))
yolo = Head(fixed([[32, 32, 32, 48, 0, 0.1, 0.9], [10, 10, 8, 8, 0, 0.5, 0.5]], {4: 1.0, 11: 0.1}), (1, 2, 7))
classifier = Head(torch.nn.Linear(3, 10), (1, 10))

for model, name in [(ssd, "tiny_ssd.onnx"), (yolo, "tiny_yolo.onnx"), (classifier, "classifier.onnx")]:
    torch.onnx.export(model, torch.zeros(1, 3, 64, 64), name, opset_version=11,
                      input_names=["image"], output_names=["detections"])
