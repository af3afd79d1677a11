"""Publishes a CSV export of a recording (`ede export FILE --out X.csv`) as an LSL EEG outlet
with pylsl, the way an acquisition program would: chunks stamped by pylsl when pushed, channel
labels, units and types in the metadata. The interoperability partner of `ede live --lsl`
(docs/BENCHMARKS.md, "Live mode"): python3 pylsl_outlet.py X.csv NAME [SPEED]."""
import csv
import sys
import time

import pylsl

path, name = sys.argv[1], sys.argv[2]
speed = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
with open(path) as f:
    rows = list(csv.reader(f))
labels = rows[0][1:]
data = [[float(v) for v in r[1:]] for r in rows[1:]]
fs = 1.0 / (float(rows[2][0]) - float(rows[1][0]))
info = pylsl.StreamInfo(name, "EEG", len(labels), fs, "float32", "pylsl-" + name)
channels = info.desc().append_child("channels")
for label in labels:
    kind = "EOG" if label.upper().startswith("EOG") else "EEG"
    ch = channels.append_child("channel")
    ch.append_child_value("label", label)
    ch.append_child_value("unit", "microvolts")
    ch.append_child_value("type", kind)
outlet = pylsl.StreamOutlet(info, 4)
print(f"{name}: {len(labels)} channels at {fs:g} Hz, waiting for a receiver", flush=True)
outlet.wait_for_consumers(60)
chunk = 4
start = time.perf_counter()
for i in range(0, len(data), chunk):
    due = start + (i + chunk) / fs / speed
    time.sleep(max(0.0, due - time.perf_counter()))
    outlet.push_chunk(data[i : i + chunk])
time.sleep(0.5)
print(f"{name}: {len(data)} samples sent", flush=True)
