"""Convert mne-icalabel's ICLabel network and MNE's 10-05 template into ede's assets.

Run once, from the repository root, with mne-icalabel 0.10 and onnx installed:
  python3 -m venv /tmp/iclvenv && /tmp/iclvenv/bin/pip install mne mne-icalabel onnx
  /tmp/iclvenv/bin/python tools/iclabel/convert.py

Writes:
  assets/iclabel/ICLabelNet.bin   the 20 weight and bias tensors of mne-icalabel's
                                  ICLabelNet.onnx, float32 little-endian, after an 8-byte magic
                                  "ICLABEL1", in the order (and with the shapes) printed to
                                  assets/iclabel/README.md; read by src/analysis/ica/iclabel/net.rs
  assets/standard_1005.tsv        MNE's `standard_1005` montage: label and position in metres,
                                  MNE's head frame (x right, y front, z up), where
                                  `raw.set_montage('standard_1005')` places each electrode:
                                  mne-icalabel's positions for a file that has none
Nothing is downloaded at run time: ede compiles both files in.
"""

import hashlib
import os
from importlib.resources import files

import mne
import numpy as np
import onnx
from onnx import numpy_helper

OUT = os.path.join("assets", "iclabel")
# The order net.rs reads them in.
ORDER = [
    f"{branch}.conv{i}.{kind}"
    for branch in ("img_conv", "psds_conv", "autocorr_conv")
    for i in (1, 2, 3)
    for kind in ("weight", "bias")
] + ["conv.weight", "conv.bias"]


def main():
    import mne_icalabel

    onnx_path = files("mne_icalabel.iclabel.network") / "assets" / "ICLabelNet.onnx"
    raw = open(onnx_path, "rb").read()
    model = onnx.load_from_string(raw)
    tensors = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert sorted(tensors) == sorted(ORDER), sorted(tensors)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "ICLabelNet.bin"), "wb") as f:
        f.write(b"ICLABEL1")
        for name in ORDER:
            f.write(tensors[name].astype("<f4").tobytes())
    shapes = "\n".join(f"  {n} {tuple(tensors[n].shape)}" for n in ORDER)
    print(f"mne-icalabel {mne_icalabel.__version__}, onnx sha256 {hashlib.sha256(raw).hexdigest()}")
    print(shapes)

    # Set on a recording, as mne-icalabel sees it: moved from the template's MRI frame into
    # the head frame its fiducials define.
    montage = mne.channels.make_standard_montage("standard_1005")
    info = mne.create_info(montage.ch_names, 1000.0, "eeg")
    info.set_montage(montage)
    pos = info.get_montage().get_positions()["ch_pos"]
    with open(os.path.join("assets", "standard_1005.tsv"), "w") as f:
        f.write(
            f"# label\tx\ty\tz   (metres, MNE's head frame: x right, y front, z up; "
            f"make_standard_montage('standard_1005'), MNE {mne.__version__})\n"
        )
        for name, xyz in pos.items():
            f.write(f"{name}\t{xyz[0]:.9f}\t{xyz[1]:.9f}\t{xyz[2]:.9f}\n")
    print(f"{len(pos)} template positions")


if __name__ == "__main__":
    np.set_printoptions(precision=6)
    main()
