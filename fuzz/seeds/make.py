"""Builds the fuzz seeds, one folder per target, from the test fixtures (run from `fuzz/`).

The small hand-made seeds (EDF, BDF, CSV, WFDB) are checked in as they are; this rewrites the
others. Single-file targets take a file as it is; bundle targets take files one after another, each after
a line `--8<-- NAME` (see `fuzz/src/lib.rs`). Data files are cut to a few KiB: the readers take
the sample count from the file's size, and small inputs keep the fuzzer fast.
"""
import os

FIX = "../tests/fixtures"
CUT = 4096


def read(path, cut=None):
    data = open(path, "rb").read()
    return data[:cut] if cut else data


def seed(target, name, data):
    os.makedirs(f"seeds/{target}", exist_ok=True)
    open(f"seeds/{target}/{name}", "wb").write(data)


def bundle(*files):
    return b"\n".join(b"--8<-- " + n.encode() + b"\n" + d for n, d in files)


def fixture_bundle(target, name, *files, cut=CUT):
    """The fixture's first file whole, the others cut to `cut` bytes (None: whole)."""
    seed(target, name, bundle(*[(f, read(f"{FIX}/{f}", cut if i else None)) for i, f in enumerate(files)]))


def compressed_eeglab():
    """A MAT v5 file of compressed elements (as EEGLAB saves by default), made with SciPy."""
    try:
        import scipy.io as sio
    except ImportError:
        print("no SciPy: the compressed EEGLAB seed is left as it is")
        return
    m = sio.loadmat(f"{FIX}/set_epochs.set")
    m = {k: v for k, v in m.items() if not k.startswith("__")}
    sio.savemat("/tmp/ede-compressed.set", m, do_compression=True)
    seed("eeglab", "compressed", bundle(("c.set", read("/tmp/ede-compressed.set"))))


def main():
    fixture_bundle("brainvision", "int16", "bv_int16.vhdr", "bv_int16.vmrk", "bv_int16.eeg")
    fixture_bundle("brainvision", "float32", "bv_float32.vhdr", "bv_float32.vmrk", "bv_float32.eeg")
    fixture_bundle("brainvision", "ascii", "bv_ascii.vhdr", "bv_ascii.dat")
    fixture_bundle("brainvision", "ascii_comma", "bv_ascii_comma.vhdr", "bv_ascii_comma.dat")

    fixture_bundle("eeglab", "inline", "set_inline.set")
    fixture_bundle("eeglab", "epochs", "set_epochs.set")
    # EEGLAB checks the data file's size against the header.
    fixture_bundle("eeglab", "twofile", "set_twofile.set", "set_twofile.fdt", cut=None)
    compressed_eeglab()
    fixture_bundle("eeglab_v73", "struct", "set73_struct.set")
    fixture_bundle("eeglab_v73", "fields", "set73_fields.set", "set73_fields.fdt", cut=None)

    seed("fif", "short", read(f"{FIX}/fif_short_raw.fif"))
    seed("fif", "channel_annotations", read(f"{FIX}/fif_channel_annotations_raw.fif"))
    seed("xdf", "streams", read(f"{FIX}/streams.xdf"))

    for kind in ["bti_short", "bti_float"]:
        # Whole: a 4D file's header is at its end.
        seed("bti", kind, bundle(("c,rfDC", read(f"{FIX}/{kind}/c,rfDC")),
                                 ("config", read(f"{FIX}/{kind}/config"))))

    # A BIDS run: its data and every sidecar ede applies (renamed to the folder's subject).
    run = f"{FIX}/bids/sub-02/eeg"
    names = ["sub-02_task-rest_eeg.vhdr", "sub-02_task-rest_eeg.vmrk", "sub-02_task-rest_eeg.eeg",
             "sub-02_task-rest_channels.tsv", "sub-02_task-rest_events.tsv",
             "sub-02_space-CapTrak_electrodes.tsv", "sub-02_space-CapTrak_coordsystem.json"]
    files = []
    for n in names:
        data = read(f"{run}/{n}", CUT if n.endswith(".eeg") else None)
        if not n.endswith(".eeg"):
            data = data.replace(b"sub-02", b"sub-01")
        files.append((n.replace("sub-02", "sub-01"), data))
    seed("bids", "rest", bundle(*files))


if __name__ == "__main__":
    main()
