"""Builds small, valid fuzz seeds for the vendor readers from the real sample files (run from `fuzz/`).

The samples are `vendor/` of the shared test data (`$EDE_DATA/vendor`, else `../../shared/data/vendor`;
see `shared/data/README.md`), far larger than a fuzzer's 128 KiB inputs. Each seed here is the
real file with its header edited to hold fewer samples (about 100 to 240) and, where the header
is large, fewer channels or shorter tables, every count, size and offset the reader checks kept
consistent, so that every seed opens. Seeds are bundles (`make.py`'s `bundle`: files each after
a line `--8<-- NAME`, the first one opened); CTF's go into a folder `r.ds`, MFF's into `r.mff`
(`fuzz/src/lib.rs`). Two seeds a target where the reader has two paths worth starting from
(another sample type, events or not, opened from another file of the set).

    nihon_kohden  .EEG cut to 8 channels, 1.2 s; .LOG to its two event blocks; .PNT and .21E cut
    neuroscan     8 of 128 channels, 200 samples, event offsets moved; int16 and int32
    mff           8 of 257 channels (E1-E7, VREF), 100 samples in two blocks; PNS, events
    egi_raw       8 of 256 channels and the 6 event channels, 77 samples; float32 and int16
    ctf           8 of 356 channels (stim, clock, references, MEG, EEG, ADC), 2 trials of 100
    persyst       8 of 83 channels, 200 samples; int32 and int16
    curry         200 of 5,000 samples, events moved; binary, and ASCII by channel
    ant           8 of 88 channels, 200 samples re-compressed (every RAW3 method) in epochs of
                  64; RF64 with its .evt, and RIFF with an evt chunk
    kit           12 of 192 channels, 200 samples around a trigger; int16, and int32 with EEG/ECG
"""
import os
import re
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make import bundle, seed  # noqa: E402

VENDOR = os.path.join(os.environ.get("EDE_DATA", "../../shared/data"), "vendor")
LIMIT = 131072  # libFuzzer's -max_len for these targets


def read(*path):
    return open(os.path.join(VENDOR, *path), "rb").read()


def put(target, name, *files):
    """Writes the bundle of `files` ((name, bytes), the first opened) as seed `name`."""
    for n, d in files:
        assert b"\n--8<-- " not in d, f"{target}/{name}: {n} holds a bundle mark"
    data = bundle(*files)
    assert len(data) <= LIMIT, f"{target}/{name}: {len(data)} bytes"
    seed(target, name, data)


def u16(b, at, e="<"):
    return struct.unpack_from(e + "H", b, at)[0]


def i32(b, at, e="<"):
    return struct.unpack_from(e + "i", b, at)[0]


# --- Nihon Kohden ---------------------------------------------------------------------------


def nihon_kohden():
    eeg = read("nihonkohden", "MB0400FU.EEG")
    control = i32(eeg, 0x92)
    block = i32(eeg, control + 18)  # the one data block (0x17FE)
    n = eeg[block + 0x26]
    data_at = block + 0x27 + 10 * n
    row = n + 1  # the channels and a marker column, unsigned 16-bit
    # Fp2 Fp1 F4 F3, A2, X1, and table entries 76/77 ($A2/$A1 by the .21E, else Mark1/Mark2).
    keep = [0, 1, 2, 3, 20, 22, 23, 24]
    tenths = 12  # 1.2 s at 200 Hz: the .LOG's second event is at 1.14 s
    fs = u16(eeg, block + 0x1A) & 0x3FFF
    samples = tenths * fs // 10
    out = bytearray(eeg[: block + 0x27])
    out[block + 0x26] = len(keep)
    struct.pack_into("<I", out, block + 0x1C, tenths)
    for k in keep:
        out += eeg[block + 0x27 + 10 * k : block + 0x27 + 10 * (k + 1)]
    for s in range(samples):
        r = data_at + 2 * row * s
        for k in keep + [n]:
            out += eeg[r + 2 * k : r + 2 * k + 2]
    eeg = bytes(out)

    # The .LOG: its header, event block 0 and the block 22 on that refines its times.
    log = read("nihonkohden", "MB0400FU.LOG")
    size = lambda at: 0x14 + 45 * log[at + 0x12]  # noqa: E731
    first, second = i32(log, 0x92), i32(log, 0x92 + 22 * 20)
    out = bytearray(log[:first])
    out += log[first : first + size(first)]
    struct.pack_into("<I", out, 0x92 + 22 * 20, len(out))
    out += log[second : second + size(second)]
    log = bytes(out)

    pnt = read("nihonkohden", "MB0400FU.PNT")[:0x80]  # the version and the start time
    # The .21E's [ELECTRODE] and [REFERENCE] tables (its montage settings left out).
    e21 = read("nihonkohden", "MB0400FU.21E")
    e21 = e21[: e21.index(b"[SD_DEF]")]
    put("nihon_kohden", "eeg", ("MB.EEG", eeg), ("MB.PNT", pnt), ("MB.LOG", log), ("MB.21E", e21))
    # Opened from the .LOG, without the .21E: channels keep the default names (Mark1, Mark2).
    put("nihon_kohden", "log_default_names", ("MB.LOG", log), ("MB.EEG", eeg), ("MB.PNT", pnt))


# --- Neuroscan CNT --------------------------------------------------------------------------


def neuroscan():
    b = read("cnt", "scan41_short.cnt")
    channels, table = u16(b, 370), i32(b, 886)
    start = 900 + 75 * channels
    old_samples = (table - start) // (2 * channels)
    size = i32(b, table + 1)
    events = b[table + 9 : table + 9 + size]
    keep, samples = 8, 200
    for width, name in [(2, "int16"), (4, "int32")]:
        head = bytearray(b[:900])
        struct.pack_into("<H", head, 370, keep)
        new_start = 900 + 75 * keep
        row = keep * width
        data = bytearray()
        for s in range(samples):
            for c in range(keep):
                v = struct.unpack_from("<h", b, start + 2 * (channels * s + c))[0]
                data += struct.pack("<h" if width == 2 else "<i", v)
        new_table = new_start + len(data)
        struct.pack_into("<i", head, 886, new_table)
        if width == 4:
            # The sample count in the header tells 32-bit from 16-bit; a date that parses.
            struct.pack_into("<i", head, 864, samples)
            head[225:235] = b"05/10/00".ljust(10, b"\0")
        # Events (type 2, 19 bytes): their offsets point at the same place in the shorter data.
        ev = bytearray(events)
        for k in range(0, len(ev) - 18, 19):
            offset = i32(ev, k + 4)
            old = (offset - start) // (2 * channels) - 1
            new = min(max(old, 0) * samples // old_samples, samples - 1)
            struct.pack_into("<i", ev, k + 4, new_start + (new + 1) * row)
        tail = bytes([b[table]]) + struct.pack("<i", len(ev)) + b[table + 5 : table + 9] + ev
        cnt = bytes(head) + b[900 : 900 + 75 * keep] + bytes(data) + tail
        put("neuroscan", name, ("s.cnt", cnt))


# --- EGI MFF --------------------------------------------------------------------------------


def mff_blocks(b, keep, samples, per_block):
    """signalN.bin with channels `keep` (indices), `samples` samples in blocks of `per_block`:
    the first with a header, the others reusing it (flag 0)."""
    assert b[:4] == b"\1\0\0\0"
    size, data, nc = struct.unpack_from("<3I", b, 4)
    offsets = struct.unpack_from(f"<{nc}I", b, 16)
    codes = struct.unpack_from(f"<{nc}I", b, 16 + 4 * nc)
    extra = b[16 + 8 * nc : size]  # the optional header after the channel tables
    out = bytearray()
    for first in range(0, samples, per_block):
        n = min(per_block, samples - first)
        if first == 0:
            k = len(keep)
            out += struct.pack("<4I", 1, 16 + 8 * k + len(extra), 4 * k * n, k)
            out += struct.pack(f"<{k}I", *[4 * n * j for j in range(k)])
            out += struct.pack(f"<{k}I", *[codes[c] for c in keep])
            out += extra
        else:
            assert n == per_block, "a flag-0 block repeats the first block's size"
            out += struct.pack("<I", 0)
        for c in keep:
            at = size + offsets[c] + 4 * first
            out += b[at : at + 4 * n]
    return bytes(out)


def compact(xml):
    return re.sub(rb">\s+<", b"><", xml)


def sensors(xml, wanted):
    """The XML with only the <sensor> elements `wanted` keeps, and nothing after the sensors."""
    head = xml[: xml.index(b"<sensor>")]
    tail = xml[xml.rindex(b"</sensor>") + len(b"</sensor>") :]
    tail = tail[: tail.index(b"</sensors>")] + b"</sensors>"
    closing = b"</sensorLayout>" if b"<sensorLayout" in head else b""
    if b"<coordinates" in head:
        closing += b"</coordinates>"
    kept = [s for s in re.findall(rb"<sensor>.*?</sensor>", xml, re.S) if wanted(s)]
    return compact(head + b"".join(kept) + tail + closing)


def mff():
    d = ("egi", "example_3.mff")
    keep = [0, 1, 2, 3, 4, 5, 6, 256]  # E1-E7 and VREF (sensor 257)
    numbers = {str(c + 1).encode() for c in keep}
    number = lambda s: re.search(rb"<number>(\d+)</number>", s).group(1)  # noqa: E731
    info = compact(read(*d, "info.xml"))
    info1 = read(*d, "info1.xml")
    info1 = re.sub(rb'\s*<ch n="(\d+)">[^<]*</ch>',
                   lambda m: m.group(0) if int(m.group(1)) <= len(keep) else b"", info1)
    info1 = compact(info1)
    info2 = compact(read(*d, "info2.xml"))
    layout = sensors(read(*d, "sensorLayout.xml"),
                     lambda s: number(s) in numbers or b"<name>COM</name>" in s)
    coords = sensors(read(*d, "coordinates.xml"),
                     lambda s: number(s) in numbers or b"<type>2</type>" in s)
    pns_set = compact(read(*d, "pnsSet.xml"))
    # 100 samples in two blocks of 50, read as two epochs with a gap (a BAD_ACQ_SKIP).
    eeg = mff_blocks(read(*d, "signal1.bin"), keep, 100, 50)
    pns = mff_blocks(read(*d, "signal2.bin"), [0, 1], 100, 100)
    epoch = "<epoch><beginTime>{}</beginTime><endTime>{}</endTime><firstBlock>{}</firstBlock>" \
            "<lastBlock>{}</lastBlock></epoch>"
    head = b'<?xml version="1.0" encoding="UTF-8" standalone="yes" ?>' \
           b'<epochs xmlns="http://www.egi.com/epochs_mff">'
    epochs = head + (epoch.format(0, 200000, 1, 1) + epoch.format(300000, 500000, 2, 2)).encode() \
        + b"</epochs>"
    # Events at 40, 100 and 300 ms after the recordTime (2020-01-29T06:19:39.202537-08:00).
    event = "<event><beginTime>2020-01-29T06:19:39.{:06d}-08:00</beginTime><duration>1000</duration>" \
            "<relativeBeginTime>{}</relativeBeginTime><segmentationEvent>false</segmentationEvent>" \
            "<code>{}</code><label>{}</label></event>"
    evs = [(242537, 40000, "DIN1"), (302537, 100000, "DIN2"), (502537, 300000, "DIN1")]
    user = compact(read(*d, "Events_User_Events.xml"))
    user = user.replace(b"</eventTrack>", "".join(
        event.format(t, rel, c, c) for t, rel, c in evs).encode() + b"</eventTrack>")
    put("mff", "pns_events", ("info.xml", info), ("info1.xml", info1), ("signal1.bin", eeg),
        ("info2.xml", info2), ("signal2.bin", pns), ("pnsSet.xml", pns_set),
        ("epochs.xml", epochs), ("sensorLayout.xml", layout), ("coordinates.xml", coords),
        ("Events_User_Events.xml", user))
    # The EEG alone, one block, opened from its signal file.
    one = mff_blocks(read(*d, "signal1.bin"), keep, 100, 100)
    epochs = head + epoch.format(0, 400000, 1, 1).encode() + b"</epochs>"
    put("mff", "eeg_only", ("signal1.bin", one), ("info.xml", info), ("info1.xml", info1),
        ("epochs.xml", epochs))


# --- EGI simple binary ----------------------------------------------------------------------


def egi_raw():
    b = read("egi", "test_egi.raw")
    version = i32(b, 0, ">")
    assert version == 4  # continuous float32
    channels = struct.unpack_from(">h", b, 22)[0]
    samples = i32(b, 30, ">")
    events = struct.unpack_from(">h", b, 34)[0]
    data_at = 36 + 4 * events
    width = channels + events
    keep = list(range(8)) + list(range(channels, width))
    values = [struct.unpack_from(">f", b, data_at + 4 * (width * s + c))[0]
              for s in range(samples) for c in keep]
    for name, ver, fmt, bits, rng in [("float32", 4, ">f", 0, 0), ("int16", 2, ">h", 16, 1)]:
        head = bytearray(b[:data_at])
        struct.pack_into(">i", head, 0, ver)
        struct.pack_into(">h", head, 22, 8)
        struct.pack_into(">hh", head, 26, bits, rng)
        if fmt == ">h":
            data = b"".join(struct.pack(fmt, max(-32768, min(32767, round(v)))) for v in values)
        else:
            data = b"".join(struct.pack(fmt, v) for v in values)
        put("egi_raw", name, ("e.raw", bytes(head) + data))


# --- CTF ------------------------------------------------------------------------------------


def ctf():
    d = ("ctf", "testdata_ctf_short_discontinuous.ds")
    stem = "testdata_ctf_short_discontinuous"
    res4 = read(*d, stem + ".res4")
    nsamp, nchan = struct.unpack_from(">ih", res4, 1288)
    rdlen = i32(res4, 1836, ">")
    at = 1844 + rdlen
    assert struct.unpack_from(">h", res4, at)[0] == 0  # no filters
    names_at = at + 2
    records_at = names_at + 32 * nchan
    name = lambda i: res4[names_at + 32 * i : names_at + 32 * i + 32].split(b"\0")[0]  # noqa
    want = [b"UPPT001", b"SCLK01-177", b"BG1-4304", b"G11-4304", b"MLC11-4304", b"MRC11-4304",
            b"EEG057", b"UADC001-4302"]
    index = {name(i): i for i in range(nchan)}
    keep = [index[w] for w in want if w in index]
    assert len(keep) >= 6, keep
    samples, trials = 100, 2
    head = bytearray(res4[:names_at])
    struct.pack_into(">ih", head, 1288, samples, len(keep))
    out = bytes(head) + b"".join(res4[names_at + 32 * i : names_at + 32 * (i + 1)] for i in keep)
    out += b"".join(res4[records_at + 1328 * i : records_at + 1328 * (i + 1)] for i in keep)
    meg4 = read(*d, stem + ".meg4")
    data = bytearray(meg4[:8])
    for t in range(trials):
        for i in keep:
            at = 8 + 4 * nsamp * (t * nchan + i)
            data += meg4[at : at + 4 * samples]
    hc = read(*d, stem + ".hc")
    # A marker in each trial and a bad segment, at times that fall in the run once the header's
    # pre-trigger offset (-2 s here) is added.
    offset = i32(res4, 1316, ">") / struct.unpack_from(">d", res4, 1296)[0]
    trial_s = samples / struct.unpack_from(">d", res4, 1296)[0]
    times = [0.025 - offset, 0.05 - trial_s - offset]
    markers = (
        "PATH OF DATASET:\n/tmp/r.ds\n\n\nNUMBER OF MARKERS:\n1\n\n\nCLASSGROUPID:\n3\nNAME:\n"
        "stim\nCOMMENT:\n\nCOLOR:\nRed\nEDITABLE:\nYes\nCLASSID:\n1\nNUMBER OF SAMPLES:\n2\n"
        "LIST OF SAMPLES:\nTRIAL NUMBER\t\tTIME FROM SYNC POINT (in seconds)\n"
        + "".join(f"                  +{t}\t\t\t\t     {v:+.13f}\n" for t, v in enumerate(times))
        + "\n\n"
    ).encode()
    bad = f"1\t{0.1 - offset:.3f}\t{0.12 - offset:.3f}\n".encode()
    put("ctf", "run", ("r.res4", out), ("r.meg4", bytes(data)), ("r.hc", hc),
        ("BadChannels", b"EEG057\n"), ("bad.segments", bad),
        ("MarkerFile.mrk", markers))
    put("ctf", "meg4_only", ("r.meg4", bytes(data)), ("r.res4", out))


# --- Persyst --------------------------------------------------------------------------------


def persyst():
    stem = "sub-pt1_ses-02_task-monitor_acq-ecog_run-01_clip2"
    lay = read("persyst", stem + ".lay").decode("latin1")
    dat = read("persyst", stem + ".dat")
    names = re.search(r"\[ChannelMap\]\r?\n(.*?)\r?\n\r?\n", lay, re.S).group(1).splitlines()
    n = len(names)
    keep = [0, 1, 2, 3, 19, 77, 78, 82]  # Fp1 Fp2 F3 F4, POL E, POL EKG1/EKG2, POL BP4
    samples = 200
    values = [struct.unpack_from("<i", dat, 4 * (n * s + c))[0] for s in range(samples) for c in keep]
    chanmap = "\n".join(f"{names[c].split('=')[0]}={k + 1}" for k, c in enumerate(keep))
    lay = lay.replace("\r\n", "\n")
    lay = re.sub(r"\[ChannelMap\]\n.*?\n\n", f"[ChannelMap]\n{chanmap}\n\n", lay, flags=re.S)
    lay = re.sub(r"File=.*", "File=p.dat", lay)
    lay = lay.replace(f"WaveformCount={n}", f"WaveformCount={len(keep)}")
    data32 = struct.pack(f"<{len(values)}i", *values)
    put("persyst", "int32", ("p.lay", lay.encode()), ("p.dat", data32))
    lay16 = lay.replace("DataType=7", "DataType=0").replace("Calibration=0.390625", "Calibration=25")
    data16 = struct.pack(f"<{len(values)}h", *[max(-32768, min(32767, v // 64)) for v in values])
    # Opened from the data file, the layout beside it.
    put("persyst", "int16_from_dat", ("p.dat", data16), ("p.lay", lay16.encode()))


# --- Curry ----------------------------------------------------------------------------------


def curry():
    stem = "test_bdf_stim_channel Curry 8.cdt"
    cdt, dpa, cef = read("curry", stem), read("curry", stem + ".dpa"), read("curry", stem + ".cef")
    text = dpa.decode("utf-8")
    old = int(re.search(r"NumSamples\s*=\s*(\d+)", text).group(1))
    channels = int(re.search(r"NumChannels\s*=\s*(\d+)", text).group(1))
    samples, step = 200, old // 200
    text = re.sub(r"(NumSamples\s*=\s*)\d+", rf"\g<1>{samples}", text)
    values = struct.unpack_from(f"<{samples * channels}f", cdt)  # by sample
    # Events: the sample numbers (columns 1, 5 and 6 of each row) moved into the 200 samples.
    def moved(m):
        rows = []
        for line in m.group(2).splitlines():
            f = line.split("\t")
            for k in (0, 4, 5):
                f[k] = f" {int(f[k]) // step}"
            rows.append("\t".join(f))
        return m.group(1) + "\n".join(rows) + "\n" + m.group(3)

    events = re.sub(r"(NUMBER_LIST START_LIST[^\n]*\n)(.*?)(NUMBER_LIST END_LIST)", moved,
                    cef.decode("utf-8"), flags=re.S).encode()
    put("curry", "binary", ("c.cdt", struct.pack(f"<{len(values)}f", *values)),
        ("c.cdt.dpa", text.encode()), ("c.cdt.cef", events))
    # ASCII, channel after channel, a valid start, opened from the parameters.
    ascii_text = re.sub(r"(DataFormat\s*=\s*)\S+", r"\g<1>ASCII", text)
    ascii_text = re.sub(r"(DataSampOrder\s*=\s*)\S+", r"\g<1>CHAN", ascii_text)
    ascii_text = re.sub(r"(StartSec\s*=\s*)\d+", r"\g<1>11", ascii_text)
    rows = [" ".join(f"{values[s * channels + c]:.3f}" for s in range(samples))
            for c in range(channels)]
    put("curry", "ascii_by_channel", ("c.cdt.dpa", ascii_text.encode()),
        ("c.cdt", ("\n".join(rows) + "\n").encode()), ("c.cdt.cef", events))


# --- ANT Neuro CNT --------------------------------------------------------------------------


class BitReader:
    """libeep's RAW3 bits, as `ant/raw3.rs` reads them (big-endian, sign-extended)."""

    def __init__(self, b, pos):
        self.b, self.pos = b, pos

    def take(self, n):
        if n == 0:
            return 0
        i = self.pos // 8
        w = int.from_bytes(self.b[i : i + 8].ljust(8, b"\0"), "big")
        w = (w << (self.pos % 8)) & ((1 << 64) - 1)
        self.pos += n
        v = w >> (64 - n)
        return v - (1 << n) if v >> (n - 1) else v


def raw3_decode(b, n, last):
    """One channel of one epoch: (values, bytes used)."""
    method = b[0] >> 4
    width = 32 if method & 8 else 16
    bits = BitReader(b, 4)
    res = [0] * n
    if method & 7 == 0:
        bits.pos = 8
        res = [bits.take(width) for _ in range(n)]
    else:
        field = 4 if width == 16 else 6

        def size():
            v = bits.take(field) & ((1 << field) - 1)
            return 16 if v == 0 and width == 16 else v

        nbit, nexc = size(), size()
        res[0] = bits.take(width)
        escape = -(1 << (nbit - 1))
        for s in range(1, n):
            v = bits.take(nbit)
            res[s] = bits.take(nexc) if v == escape and nbit != nexc else v
    cur = [0] * n
    cur[0] = res[0]
    wrap = lambda v: (v + (1 << 31)) % (1 << 32) - (1 << 31)  # noqa: E731
    for s in range(1, n):
        p = cur[s - 1]
        m = method & 7
        if m == 0:
            cur[s] = res[s]
        elif m == 1 or (m == 2 and s == 1):
            cur[s] = wrap(p + res[s])
        elif m == 2:
            cur[s] = wrap(2 * p - cur[s - 2] + res[s])
        else:
            cur[s] = wrap(p + last[s] - last[s - 1] + res[s])
    return cur, (bits.pos + 7) // 8


class BitWriter:
    def __init__(self):
        self.bits = []

    def put(self, v, n):
        self.bits += [(v >> k) & 1 for k in range(n - 1, -1, -1)]

    def bytes(self):
        bits = self.bits + [0] * (-len(self.bits) % 8)
        return bytes(int("".join(map(str, bits[i : i + 8])), 2) for i in range(0, len(bits), 8))


def signed_bits(v):
    n = 1
    while not -(1 << (n - 1)) <= v < (1 << (n - 1)):
        n += 1
    return n


def raw3_encode(cur, last, method, wide):
    """Packs one channel as libeep does: `method` 0 (raw) to 3 (off the previous channel)."""
    n = len(cur)
    width = 32 if wide else 16
    w = BitWriter()
    w.put(method | (8 if wide else 0), 4)
    if method == 0:
        w.put(0, 4)
        for v in cur:
            w.put(v, width)
        return w.bytes()
    res = [cur[0]]
    for s in range(1, n):
        if method == 1 or (method == 2 and s == 1):
            pred = cur[s - 1]
        elif method == 2:
            pred = 2 * cur[s - 1] - cur[s - 2]
        else:
            pred = cur[s - 1] + last[s] - last[s - 1]
        res.append(cur[s] - pred)
    need = sorted(signed_bits(r) for r in res[1:]) or [1]
    nexc = need[-1]
    nbit = min(need[len(need) * 3 // 4], nexc)  # a quarter escaped, where the sizes differ
    if not wide:
        assert nexc <= 16 and signed_bits(cur[0]) <= 16
    field = 4 if width == 16 else 6
    w.put(nbit % 16 if width == 16 else nbit, field)
    w.put(nexc % 16 if width == 16 else nexc, field)
    w.put(cur[0], width)
    escape = -(1 << (nbit - 1))
    for r in res[1:]:
        if nbit != nexc and (r == escape or signed_bits(r) > nbit):
            w.put(escape, nbit)
            w.put(r, nexc)
        else:
            w.put(r, nbit)
    return w.bytes()


def riff_chunks(b, at, end, wide):
    """The chunks of a RIFF/RF64 body: {id: (data start, size)}, LIST ones by their type."""
    h = 12 if wide else 8
    out = {}
    while at < end:
        cid = b[at : at + 4]
        size = struct.unpack_from("<Q" if wide else "<I", b, at + 4)[0]
        key = b[at + h : at + h + 4] if cid == b"LIST" else cid
        out[key] = (at + h, size)
        at += h + size + (size & 1)
    return out


def chunk(cid, body, wide):
    pad = b"\0" if len(body) & 1 else b""
    return cid + struct.pack("<Q" if wide else "<I", len(body)) + body + pad


class Fread:
    """Enough of `ant/evt.rs`'s reading to find where each event's date lies."""

    def __init__(self, b):
        self.b, self.at = b, 0

    def upto(self, n):
        s = self.b[self.at : self.at + n]
        self.at = min(self.at + n, len(self.b))
        return s

    def i32(self):
        return struct.unpack("<i", self.upto(4))[0]

    def string(self):
        n = self.upto(1)[0]
        assert n != 0xFF
        return self.upto(n) if n else None

    def cls(self):
        return self.string() if self.i32() == -1 else None


def evt_dates(b):
    """The byte offsets of each event's date and fraction (f64s) in an .evt file."""
    r = Fread(b)
    version = i32(b, 12)
    r.upto(24)
    assert r.cls() == b"class dcEventsLibrary_c"
    r.string()
    n = struct.unpack("<I", r.upto(4))[0]
    at = []
    for _ in range(n):
        c = r.cls()
        assert c == b"class dcEventMarker_c", c
        r.i32()
        r.upto(16)
        r.cls()
        r.string()
        if version >= 78:
            r.string()
        r.upto(4 + 4 + 1 + 8 + 8)
        at.append(r.at)
        r.upto(16)
        for _ in range(max(r.i32(), 0)):
            r.string()
            kind = struct.unpack("<H", r.upto(2))[0]
            assert kind & 0x6000 and kind not in (2, 3, 4, 5, 8, 11), kind
            assert struct.unpack("<H", r.upto(2))[0] == 4  # a float32, then the array
            r.upto(4)
            r.upto(4 * struct.unpack("<I", r.upto(4))[0])
            r.string()
        r.string()
        r.string()
        r.string()
        r.upto(5 if version >= 103 else 2)
    return at


def ant():
    b = read("ant", "CA_208", "test_CA_208.cnt")
    assert b[:4] == b"RF64"
    top = riff_chunks(b, 16, len(b), True)
    raw3 = riff_chunks(b, top[b"raw3"][0] + 4, sum(top[b"raw3"]), True)
    eeph = b[slice(top[b"eeph"][0], sum(top[b"eeph"]))].decode("latin1")
    info = b[slice(top[b"info"][0], sum(top[b"info"]))]
    data_at, _ = raw3[b"data"]
    ep_at, ep_size = raw3[b"ep  "]
    epoch_len, first = struct.unpack_from("<2Q", b, ep_at)
    total = int(re.search(r"\[Samples\]\n(\d+)", eeph).group(1))
    nch = int(re.search(r"\[Channels\]\n(\d+)", eeph).group(1))
    assert ep_size == 16 and total <= epoch_len  # one epoch
    order = struct.unpack_from(f"<{nch}h", b, raw3[b"chan"][0])
    assert list(order) == list(range(nch))
    # Decode the channels of the one epoch, in order, up to the last one kept.
    keep = [0, 1, 2, 3, 4, 5, 6, 64]  # Fp1 Fpz Fp2 F7 F3 Fz F4, BIP1
    at, last, values = data_at + first, [0] * total, []
    for c in range(max(keep) + 1):
        cur, used = raw3_decode(b[at:], total, last)
        values.append(cur)
        at, last = at + used, cur
    samples, new_len = 200, 64
    chans = [values[c][:samples] for c in keep]
    # Re-compress in epochs of 64: every method and both widths among the channels.
    methods = [(1, False), (2, False), (3, False), (0, True), (1, True), (3, True), (2, False),
               (0, False)]
    data, starts = bytearray(), []
    for e in range(0, samples, new_len):
        starts.append(len(data))
        last = [0] * min(new_len, samples - e)
        for k, ch in enumerate(chans):
            cur = ch[e : e + new_len]
            method, wide = methods[k]
            if not wide and (max(cur) > 32767 or min(cur) < -32768):
                wide = True
            packed = raw3_encode(cur, last, method, wide)
            assert raw3_decode(packed, len(cur), last) == (cur, len(packed))
            data += packed
            last = cur
    lines = eeph.split("\n")
    table = lines.index("[Basic Channel Data]")
    head = lines[: table + 2]  # up to the column comment
    rows = [lines[table + 2 + c] for c in keep]
    eeph = "\n".join(head + rows) + "\n"
    eeph = re.sub(r"\[Samples\]\n\d+", f"[Samples]\n{samples}", eeph)
    eeph = re.sub(r"\[Channels\]\n\d+", f"[Channels]\n{len(keep)}", eeph).encode("latin1")
    tfh = f"[Samples]\n{samples}\n".encode()

    def cnt(wide, extra=()):
        word = "<Q" if wide else "<I"
        ep = b"".join(struct.pack(word, v) for v in [new_len] + starts)
        order = struct.pack(f"<{len(keep)}h", *range(len(keep)))
        raw = chunk(b"LIST", b"raw3" + chunk(b"chan", order, wide) + chunk(b"data", bytes(data), wide)
                    + chunk(b"ep  ", ep, wide), wide)
        body = b"CNT " + raw + chunk(b"eeph", eeph, wide) + chunk(b"tfh ", tfh, wide) \
            + chunk(b"info", info, wide) + b"".join(extra)
        return chunk(b"RF64" if wide else b"RIFF", body, wide)

    # The .evt: its two impedance events moved to 0 and 150 ms after the start.
    evt = bytearray(read("ant", "CA_208", "test_CA_208.evt"))
    date = float(re.search(rb"\[StartDate\]\n([0-9.]+)", info).group(1))
    fraction = float(re.search(rb"\[StartFraction\]\n([0-9.]+)", info).group(1))
    for k, at in enumerate(evt_dates(evt)):
        struct.pack_into("<2d", evt, at, date, fraction + 0.15 * k)
    put("ant", "rf64_evt", ("a.evt", bytes(evt)), ("a.cnt", cnt(True)))
    # RIFF (32-bit sizes) with triggers in an evt chunk: sample, then an 8-byte code.
    trig = b"".join(struct.pack("<i", s) + c.ljust(8, b"\0")
                    for s, c in [(30, b"1"), (30, b"1024"), (120, b"2")])
    put("ant", "riff_trigger_chunk", ("a.cnt", cnt(False, [chunk(b"evt ", trig, False)])))


# --- KIT/Yokogawa ---------------------------------------------------------------------------


def kit():
    b = read("kit", "test.sqd")
    dirs = [list(struct.unpack_from("<Iiii", b, 16 * i)) for i in range(32)]
    system = dirs[1][0]
    nchan = i32(b, system + 268)
    allocated = i32(b, system + 728)
    assert allocated == 16
    keep = [0, 1, 2, 157] + list(range(160, 168))  # 3 gradiometers, a reference, 8 trigger lines
    rows = range(200, 400)  # a trigger at sample 281

    def build(eeg):
        out = bytearray(b[:512])
        sections = {}

        def add(i, body, count=None):
            sections[i] = len(out)
            out.extend(body)
            struct.pack_into("<I", out, 16 * i, sections[i])
            if count is not None:
                struct.pack_into("<ii", out, 16 * i + 8, count, count)

        sysinfo = bytearray(b[system : system + dirs[1][1]])
        struct.pack_into("<i", sysinfo, 268, len(keep))
        if eeg:
            struct.pack_into("<i", sysinfo, 728, 32)
        add(1, sysinfo)
        add(2, b[dirs[2][0] : dirs[2][0] + dirs[2][1] * dirs[2][3]])
        add(3, b[dirs[3][0] : dirs[3][0] + dirs[3][1] * dirs[3][3]])
        stride = dirs[4][1]
        records = [bytearray(b[dirs[4][0] + stride * i : dirs[4][0] + stride * (i + 1)]) for i in keep]
        if eeg:
            # Two trigger lines made an EEG and an ECG channel, with their names and gains.
            e, g = records[-2], records[-1]
            e[:] = bytes(stride)
            struct.pack_into("<ii", e, 0, -2, 1)
            e[12:20] = b"Fz".ljust(8, b"\0")
            struct.pack_into("<d", e, 26, 0.5)
            g[:] = bytes(stride)
            struct.pack_into("<ii", g, 0, -3, 1)
            g[12:44] = b"ECG1".ljust(32, b"\0")
            struct.pack_into("<d", g, 52, 0.25)
        add(4, b"".join(records), len(keep))
        add(5, b"".join(b[dirs[5][0] + 16 * i : dirs[5][0] + 16 * (i + 1)] for i in keep), len(keep))
        add(6, b"".join(b[dirs[6][0] + 12 * i : dirs[6][0] + 12 * (i + 1)] for i in keep[:4]), 4)
        add(7, b[dirs[7][0] : dirs[7][0] + dirs[7][1] * dirs[7][3]])
        acq = bytearray(b[dirs[8][0] : dirs[8][0] + 256])
        struct.pack_into("<ii", acq, 12, len(rows), len(rows))
        add(8, acq)
        struct.pack_into("<i", out, 16 * 8 + 4, len(acq))
        add(11, b[dirs[11][0] : dirs[11][0] + dirs[11][1]])
        add(12, b[dirs[12][0] : dirs[12][0] + dirs[12][1]])
        fmt = "<i" if eeg else "<h"
        raw = bytearray()
        for s in rows:
            for i in keep:
                v = struct.unpack_from("<h", b, dirs[9][0] + 2 * (nchan * s + i))[0]
                raw += struct.pack(fmt, v)
        add(9, raw, len(rows) * len(keep))
        if eeg:
            struct.pack_into("<i", out, 16 * 9 + 4, 4)
        # The sections after the samples (empty here but one), moved along.
        tail_at = dirs[13][0]
        for i in range(13, 32):
            if dirs[i][0] >= tail_at:
                struct.pack_into("<I", out, 16 * i, len(out) + dirs[i][0] - tail_at)
        out += b[tail_at:]
        return bytes(out)

    put("kit", "int16", ("k.sqd", build(False)))
    put("kit", "int32_eeg_ecg", ("k.sqd", build(True)))


def main():
    if not os.path.isdir(VENDOR):
        sys.exit(f"no vendor samples at {VENDOR}: set EDE_DATA to the shared test data")
    for make in [nihon_kohden, neuroscan, mff, egi_raw, ctf, persyst, curry, ant, kit]:
        make()
        print(make.__name__, "done")


if __name__ == "__main__":
    main()
