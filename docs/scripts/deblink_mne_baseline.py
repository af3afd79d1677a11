"""Blink removal quality: ede beside MNE-Python on the same files, in one run.

MNE's pipeline is its tutorial's: ICA (fastica, 25 components, random_state 97) fitted on a
1 Hz high-passed copy, components matched to the EOG channels by `find_bads_eog` (to FPz, see
PROXY, where they match none), excluded and applied to the raw data; its blinks (for F1) are
`find_eog_events` on FPz.

  python3 -m venv /tmp/mne && /tmp/mne/bin/pip install mne scikit-learn edfio
  /tmp/mne/bin/python docs/scripts/deblink_mne_baseline.py target/release/ede \
      ../shared/data/eeg/eeglab_sample_32ch_128hz.edf docs/bench-deblink-quality.json

Real blinks: `ede blinks measure ORIGINAL CLEANED` for every cleaning (ede's default, which
removes blinks only, and `--remove-eye-movements`, which removes the eye's whole activity, each
batch and live; MNE's), on blinks and eye events
found on the original independently of either cleaner (blink-locked residual per channel,
change of O1/Oz/O2 outside eye events, posterior samples changed by more than 20 uV, change of
the kept EOG channels).
Simulated blinks: `ede blinks simulate` at 50/100/200 uV, seeds 1-3, onto the EEGLAB sample
(its own blinks are left out of the score), then `ede blinks score` of ede's pipeline and of
MNE's cleaning (`--cleaned --found`).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import mne

mne.set_log_level("ERROR")
# With 15 components the EEGLAB sample's EOG1/EOG2 gave no component above find_bads_eog's
# threshold; then FPz, MNE's suggestion where no vertical EOG is recorded, finds the blink one.
PROXY = "FPz"


def ede(binary, *args):
    out = subprocess.run([binary, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return out


def mne_clean(path, out_edf):
    raw = mne.io.read_raw_edf(path, preload=True)
    eog = [c for c in raw.ch_names if "EOG" in c.upper()]
    raw.set_channel_types({c: "eog" for c in eog})
    t0 = time.perf_counter()
    filtered = raw.copy().filter(l_freq=1.0, h_freq=None)
    ica = mne.preprocessing.ICA(n_components=25, method="fastica", random_state=97, max_iter="auto")
    ica.fit(filtered)
    bads, _ = ica.find_bads_eog(raw) if eog else ([], None)
    if not bads:
        bads, _ = ica.find_bads_eog(raw, ch_name=PROXY)
    ica.exclude = bads
    clean = ica.apply(raw.copy())
    elapsed = time.perf_counter() - t0
    events = mne.preprocessing.find_eog_events(raw, ch_name=PROXY)
    peaks = [float((e[0] - raw.first_samp) / raw.info["sfreq"]) for e in events]
    mne.export.export_raw(out_edf, clean, fmt="edf", overwrite=True)
    return elapsed, peaks, bads, raw.times[-1] + 1 / raw.info["sfreq"]


def main(binary, eeglab, out_json):
    tmp = tempfile.mkdtemp()
    p = lambda name: os.path.join(tmp, name)
    real = {}
    t0 = time.perf_counter()
    runs = [("ede", []), ("ede_eye", ["--remove-eye-movements"])]
    for name, extra in runs:
        ede(binary, "deblink", eeglab, "--backend", "cpu", *extra, "--out", p(name + ".edf"),
            "--report", p(name + ".json"))
        ede(binary, "live", eeglab, "--speed", "max", "--backend", "cpu", *extra,
            "--out", p(name + "_live.edf"))
    seconds = {name: json.load(open(p(name + ".json")))["elapsed_s"] for name, _ in runs}
    elapsed, _, bads, length = mne_clean(eeglab, p("mne.edf"))
    seconds["mne"] = elapsed
    cleanings = [(name, p(name + ".edf")) for name in ("ede", "ede_eye", "mne")]
    cleanings += [(name + "_live", p(name + "_live.edf")) for name, _ in runs]
    for name, cleaned in cleanings:
        ede(binary, "blinks", "measure", eeglab, cleaned, "--out", p(name + "_measure.json"))
        m = json.load(open(p(name + "_measure.json")))
        if name in seconds:
            m["seconds"] = seconds[name]
            m["real_time_factor"] = length / seconds[name]
        real[name] = m
    real["mne"]["components_excluded"] = [int(b) for b in bads]
    simulated = []
    for amplitude in (50, 100, 200):
        for seed in (1, 2, 3):
            sim, truth = p(f"sim{amplitude}_{seed}.edf"), p(f"truth{amplitude}_{seed}.json")
            ede(binary, "blinks", "simulate", eeglab, "--seed", str(seed), "--rate", "15",
                "--amplitude", str(amplitude), "--out", sim, "--truth", truth)
            ede(binary, "blinks", "score", sim, truth, "--backend", "cpu", "--out", p("s_ede.json"))
            elapsed, peaks, _, _ = mne_clean(sim, p("sim_mne.edf"))
            json.dump(peaks, open(p("found.json"), "w"))
            ede(binary, "blinks", "score", sim, truth, "--cleaned", p("sim_mne.edf"),
                "--found", p("found.json"), "--out", p("s_mne.json"))
            row = {"amplitude_uv": amplitude, "seed": seed,
                   "ede": json.load(open(p("s_ede.json"))), "mne": json.load(open(p("s_mne.json")))}
            row["mne"]["elapsed_s"] = elapsed
            simulated.append(row)
            print(amplitude, seed, {k: round(row[k]["f1"], 3) for k in ("ede", "mne")}, file=sys.stderr)
    medians = {}
    for amplitude in (50, 100, 200):
        rows = [r for r in simulated if r["amplitude_uv"] == amplitude]
        medians[str(amplitude)] = {
            tool: {k: statistics.median(r[tool][k] for r in rows)
                   for k in ("f1", "residual_inside_pct", "change_outside_pct")}
            for tool in ("ede", "mne")}
    report = {"mne_version": mne.__version__, "real_blinks": real, "simulated_medians": medians,
              "simulated": simulated, "wall_s": time.perf_counter() - t0}
    json.dump(report, open(out_json, "w"), indent=2)
    print(json.dumps({"real_blinks": real, "simulated_medians": medians}, indent=2))


if __name__ == "__main__":
    main(*sys.argv[1:4])
