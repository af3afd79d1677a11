//! libeep's RAW3 compression: each epoch's channels packed as residuals of a prediction
//! (none, first or second order, or from the previous channel) in 16 or 32-bit words.

use super::*;

/// The sign-extended `n`-bit numbers of a compressed channel, most significant bit first.
pub(super) struct Bits<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Bits<'_> {
    fn take(&mut self, n: u32) -> i32 {
        let i = self.pos / 8;
        let mut w = [0u8; 8];
        let rest = self.b.get(i..).unwrap_or(&[]);
        let k = rest.len().min(8);
        w[..k].copy_from_slice(&rest[..k]);
        let word = u64::from_be_bytes(w) << (self.pos % 8);
        self.pos += n as usize;
        if n == 0 {
            0
        } else {
            ((word as i64) >> (64 - n)) as i32
        }
    }
}

/// Decodes one channel of an epoch (libeep's `decompchan`): `n` samples into `cur`, from the
/// previous channel's `last`; the bytes it took.
pub(super) fn decode_channel(
    b: &[u8],
    n: usize,
    last: &[i32],
    cur: &mut [i32],
    res: &mut [i32],
) -> Result<usize, String> {
    let method = b.first().ok_or("its data ends inside an epoch")? >> 4;
    if method & 7 > 3 {
        return Err(format!(
            "a channel is compressed in an unknown way (method {method})"
        ));
    }
    // Bit 3 of the method: 32-bit values with 6-bit sizes, else 16-bit with 4-bit ones.
    let width = if method & 8 == 0 { 16 } else { 32 };
    let mut bits = Bits { b, pos: 4 };
    if method & 7 == 0 {
        // The values as they are, after 4 unused bits.
        bits.pos = 8;
        res.iter_mut().for_each(|r| *r = bits.take(width));
    } else {
        let field = if width == 16 { 4 } else { 6 };
        // A 4-bit size of 0 means 16.
        let mut size = || match bits.take(field) & ((1 << field) - 1) {
            0 if width == 16 => 16,
            v => v as u32,
        };
        let (nbit, nexc) = (size(), size());
        if !(1..=32).contains(&nbit) || nexc > 32 {
            return Err(format!(
                "a channel packs its values in {nbit} or {nexc} bits"
            ));
        }
        res[0] = bits.take(width);
        // Residuals in `nbit` bits; the lowest value flags one in `nexc` bits after it.
        let escape = (-1i64 << (nbit - 1)) as i32;
        for r in res.iter_mut().skip(1) {
            let v = bits.take(nbit);
            *r = if v == escape && nbit != nexc {
                bits.take(nexc)
            } else {
                v
            };
        }
    }
    cur[0] = res[0];
    for s in 1..n {
        let prev = cur[s - 1];
        cur[s] = match method & 7 {
            0 => res[s],
            1 => prev.wrapping_add(res[s]),
            2 if s == 1 => prev.wrapping_add(res[s]),
            2 => (prev.wrapping_mul(2).wrapping_sub(cur[s - 2])).wrapping_add(res[s]),
            _ => (prev.wrapping_add(last[s]).wrapping_sub(last[s - 1])).wrapping_add(res[s]),
        };
    }
    Ok(bits.pos.div_ceil(8))
}

/// The samples of a RAW3 `data` chunk, decoded an epoch at a time.
pub(super) struct Raw3 {
    pub(super) path: PathBuf,
    pub(super) map: Mmap,
    /// File offset of the `data` chunk's first byte, and its size.
    pub(super) data: usize,
    pub(super) data_size: u64,
    /// Each epoch's offset in `data`.
    pub(super) epochs: Vec<u64>,
    pub(super) epoch_len: usize,
    /// The header's sample count.
    pub(super) samples: usize,
    /// The channel each compressed block holds, in file order.
    pub(super) order: Vec<usize>,
    pub(super) scales: Vec<f32>,
    pub(super) last: LastWindow,
}

impl Raw3 {
    /// Epoch `e`'s `n` samples of every channel, channel after channel, scaled.
    fn decode(&self, e: usize, n: usize) -> Result<Vec<f32>, ReadError> {
        let bad = |why: String| ReadError::invalid(&self.path, format!("epoch {} {why}", e + 1));
        // libeep reads from this epoch's offset to the next one's (the last: to the chunk end).
        let to = self.epochs.get(e + 1).copied().unwrap_or(self.data_size);
        let at = |o: u64| usize::try_from(o).ok()?.checked_add(self.data);
        let bytes = (at(self.epochs[e]).zip(at(to)))
            .and_then(|(a, b)| self.map.get(a..b))
            .ok_or_else(|| bad("lies outside the file: the file is truncated or damaged".into()))?;
        let chanc = self.order.len();
        // Every channel takes at least a bit a sample: a shorter epoch is damaged, and is
        // refused before its buffers are made.
        if (bytes.len() as u64) * 8 < chanc as u64 * (n as u64 - 1) {
            return Err(bad("is shorter than its samples need".into()));
        }
        let mut out = vec![0f32; chanc * n];
        let (mut last, mut cur, mut res) = (vec![0i32; n], vec![0i32; n], vec![0i32; n]);
        let mut at = 0;
        for &ch in &self.order {
            at += decode_channel(bytes.get(at..).unwrap_or(&[]), n, &last, &mut cur, &mut res)
                .map_err(bad)?;
            for (o, &v) in out[ch * n..(ch + 1) * n].iter_mut().zip(&cur) {
                *o = v as f32 * self.scales[ch];
            }
            std::mem::swap(&mut last, &mut cur);
        }
        if at != bytes.len() {
            return Err(bad(format!(
                "is damaged: its channels take {at} bytes, the epoch table gives {}",
                bytes.len()
            )));
        }
        Ok(out)
    }
}

impl SampleSource for Raw3 {
    fn read(&self, signal: usize, start: usize, out: &mut [f32]) -> Result<(), ReadError> {
        let l = self.epoch_len;
        let mut done = 0;
        while done < out.len() {
            let s = start + done;
            let (e, first) = (s / l, s / l * l);
            // libeep decodes the last epoch to the sample count, the others whole.
            let n = if e + 1 == self.epochs.len() {
                (self.samples - first).min(l)
            } else {
                l
            };
            let (values, _) = self.last.rows(first, n, || self.decode(e, n))?;
            let take = (n - (s - first)).min(out.len() - done);
            let at = signal * n + (s - first);
            out[done..done + take].copy_from_slice(&values[at..at + take]);
            done += take;
        }
        Ok(())
    }

    fn release_pages(&self) {
        release_mapped_pages(&self.map);
    }
}
