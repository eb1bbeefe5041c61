//! Page-level decoding of the trace's column chunks, without Arrow.
//!
//! The replay needs ~18 columns of every row once, as plain integers.  Building Arrow arrays for
//! a whole row group (and the list and all-null columns) costs more than the rest of the decode
//! and allocates tens of MB of fresh memory per row group; this decoder instead walks each column
//! chunk's pages (the parquet crate still reads and decompresses them) and decodes the values
//! itself, a few thousand rows at a time, into small buffers that are reused.
//!
//! It handles the encodings Parquet writers use for these columns: PLAIN, dictionary
//! (PLAIN_DICTIONARY / RLE_DICTIONARY, including a chunk that falls back from dictionary to PLAIN
//! pages), RLE booleans, RLE definition/repetition levels, data pages v1 and v2.  Anything else
//! (e.g. DELTA_* encodings) is refused up front by [`supported_encodings`], and the reader then
//! decodes that row group through Arrow instead.
use std::collections::HashMap;

use bytes::Bytes;
use parquet::basic::{Encoding, Type as Phys};
use parquet::column::page::{Page, PageReader};

pub(crate) type Res<T> = Result<T, String>;

/// Encodings this module decodes (values and levels).
pub(crate) fn supported_encodings(encs: &[Encoding]) -> bool {
    encs.iter().all(|e| {
        matches!(e, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY | Encoding::RLE)
    })
}

// ------------------------------------------------------------------ RLE / bit-packed hybrid
/// Decoder of Parquet's RLE / bit-packed hybrid encoding (levels, dictionary keys, RLE booleans).
pub(crate) struct Hybrid {
    data: Bytes,
    /// byte position of the next run header
    pos: usize,
    width: usize,
    rle_left: usize,
    rle_val: u32,
    /// values left in the current bit-packed run, and the bit position of the next one
    bp_left: usize,
    bp_bit: usize,
}

impl Hybrid {
    pub(crate) fn new(data: Bytes, width: usize) -> Res<Hybrid> {
        if width > 32 {
            return Err(format!("bit width {width} is too large"));
        }
        Ok(Hybrid { data, pos: 0, width, rle_left: 0, rle_val: 0, bp_left: 0, bp_bit: 0 })
    }

    fn header(&mut self) -> Res<bool> {
        if self.pos >= self.data.len() {
            return Ok(false);
        }
        let h = uleb128(&self.data, &mut self.pos)?;
        if h & 1 == 1 {
            let groups = (h >> 1) as usize;
            let avail = self.data.len() - self.pos;
            let nbytes = groups.saturating_mul(self.width).min(avail);
            // a writer may cut the last run short: only whole values that are there count
            self.bp_left = if self.width == 0 { groups.saturating_mul(8) } else { (groups.saturating_mul(8)).min(nbytes * 8 / self.width) };
            self.bp_bit = self.pos * 8;
            self.pos += nbytes;
        } else {
            self.rle_left = (h >> 1) as usize;
            let vb = self.width.div_ceil(8);
            if self.pos + vb > self.data.len() {
                return Err("RLE run truncated".into());
            }
            let mut v = 0u32;
            for (k, b) in self.data[self.pos..self.pos + vb].iter().enumerate() {
                v |= (*b as u32) << (8 * k);
            }
            self.rle_val = v;
            self.pos += vb;
        }
        Ok(true)
    }

    /// Decodes up to `out.len()` values; returns how many there were.
    pub(crate) fn get(&mut self, out: &mut [u32]) -> Res<usize> {
        let mut i = 0;
        while i < out.len() {
            if self.rle_left > 0 {
                let k = self.rle_left.min(out.len() - i);
                out[i..i + k].fill(self.rle_val);
                self.rle_left -= k;
                i += k;
            } else if self.bp_left > 0 {
                let k = self.bp_left.min(out.len() - i);
                unpack(&self.data, self.bp_bit, self.width, &mut out[i..i + k]);
                self.bp_bit += k * self.width;
                self.bp_left -= k;
                i += k;
            } else if !self.header()? {
                break;
            }
        }
        Ok(i)
    }

    /// Decodes exactly `out.len()` values.
    fn get_exact(&mut self, out: &mut [u32], what: &str) -> Res<()> {
        let got = self.get(out)?;
        if got < out.len() {
            return Err(format!("{what}: page holds {got} of {} values", out.len()));
        }
        Ok(())
    }
}

fn uleb128(d: &[u8], pos: &mut usize) -> Res<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = *d.get(*pos).ok_or("run header truncated")?;
        *pos += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift > 63 {
            return Err("run header too long".into());
        }
    }
}

#[inline]
fn load_u64(d: &[u8], byte: usize) -> u64 {
    if byte + 8 <= d.len() {
        u64::from_le_bytes(d[byte..byte + 8].try_into().unwrap())
    } else {
        let mut t = [0u8; 8];
        let n = d.len().saturating_sub(byte);
        if n > 0 {
            t[..n].copy_from_slice(&d[byte..byte + n]);
        }
        u64::from_le_bytes(t)
    }
}

/// Unpacks `out.len()` little-endian `width`-bit values starting at bit `bit` of `d`.
fn unpack(d: &[u8], bit: usize, width: usize, out: &mut [u32]) {
    if width == 0 {
        out.fill(0);
        return;
    }
    let mask = (1u64 << width) - 1;
    let mut b = bit;
    for o in out.iter_mut() {
        *o = ((load_u64(d, b >> 3) >> (b & 7)) & mask) as u32;
        b += width;
    }
}

fn bit_width(max_level: i16) -> usize {
    (16 - (max_level as u16).leading_zeros()) as usize
}

// ------------------------------------------------------------------ one column chunk
enum Vals {
    None,
    /// PLAIN values from byte `pos` (booleans: from bit `pos`)
    Plain { data: Bytes, pos: usize },
    /// dictionary keys
    Dict(Hybrid),
    /// RLE booleans
    Rle(Hybrid),
}

/// Strings a string column has held, interned: values of string columns decode to indices into it.
#[derive(Default)]
pub(crate) struct Symbols {
    pub(crate) names: Vec<Box<[u8]>>,
    index: HashMap<Box<[u8]>, u32>,
}

impl Symbols {
    fn intern(&mut self, s: &[u8]) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(s.into());
        self.index.insert(s.into(), i);
        i
    }
}

/// Levels and values of a list column, a block at a time.
#[derive(Default)]
struct LevelBlock {
    rep: Vec<u32>,
    def: Vec<u32>,
    vals: Vec<i64>,
    pos: usize,
    vpos: usize,
}

/// The lists of a few rows: `present[i]` (false = null list), elements `vals[off[i]..off[i+1]]`.
#[derive(Default)]
pub(crate) struct ListBuf {
    pub(crate) present: Vec<bool>,
    pub(crate) off: Vec<u32>,
    pub(crate) vals: Vec<u64>,
}

/// Decoder of one column chunk (one column of one row group).
pub(crate) struct Column {
    pub(crate) name: &'static str,
    phys: Phys,
    pages: Box<dyn PageReader>,
    max_def: i16,
    max_rep: i16,
    def: Option<Hybrid>,
    rep: Option<Hybrid>,
    vals: Vals,
    /// levels left in the current page
    left: usize,
    /// the dictionary: numbers, or for strings indices into `syms`
    dict: Vec<i64>,
    pub(crate) syms: Symbols,
    lv: Vec<u32>,
    keys: Vec<u32>,
    block: LevelBlock,
}

impl Column {
    pub(crate) fn new(name: &'static str, phys: Phys, max_def: i16, max_rep: i16, pages: Box<dyn PageReader>) -> Column {
        Column {
            name, phys, pages, max_def, max_rep, def: None, rep: None, vals: Vals::None, left: 0,
            dict: Vec::new(), syms: Symbols::default(), lv: Vec::new(), keys: Vec::new(),
            block: LevelBlock::default(),
        }
    }

    /// Moves to the next data page (reading a dictionary page on the way); false at the end.
    fn next_page(&mut self) -> Res<bool> {
        loop {
            let page = self.pages.get_next_page().map_err(|e| e.to_string())?;
            let Some(page) = page else { return Ok(false) };
            match page {
                Page::DictionaryPage { buf, num_values, encoding, .. } => {
                    if !matches!(encoding, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY) {
                        return Err(format!("dictionary page encoding {encoding} is not supported"));
                    }
                    let n = num_values as usize;
                    let mut d = vec![0i64; n];
                    let mut v = Vals::Plain { data: buf, pos: 0 };
                    plain_values(self.phys, &mut v, &mut d, &mut self.syms)?;
                    self.dict = d;
                }
                Page::DataPage { buf, num_values, encoding, def_level_encoding, rep_level_encoding, .. } => {
                    let mut pos = 0;
                    self.rep = None;
                    self.def = None;
                    if self.max_rep > 0 {
                        self.rep = Some(v1_levels(&buf, &mut pos, rep_level_encoding, bit_width(self.max_rep))?);
                    }
                    if self.max_def > 0 {
                        self.def = Some(v1_levels(&buf, &mut pos, def_level_encoding, bit_width(self.max_def))?);
                    }
                    self.set_values(encoding, buf.slice(pos..))?;
                    self.left = num_values as usize;
                    if self.left > 0 {
                        return Ok(true);
                    }
                }
                Page::DataPageV2 { buf, num_values, encoding, def_levels_byte_len, rep_levels_byte_len, .. } => {
                    let (r, d) = (rep_levels_byte_len as usize, def_levels_byte_len as usize);
                    if r + d > buf.len() {
                        return Err("data page levels truncated".into());
                    }
                    self.rep = None;
                    self.def = None;
                    if self.max_rep > 0 {
                        self.rep = Some(Hybrid::new(buf.slice(..r), bit_width(self.max_rep))?);
                    }
                    if self.max_def > 0 {
                        self.def = Some(Hybrid::new(buf.slice(r..r + d), bit_width(self.max_def))?);
                    }
                    self.set_values(encoding, buf.slice(r + d..))?;
                    self.left = num_values as usize;
                    if self.left > 0 {
                        return Ok(true);
                    }
                }
            }
        }
    }

    fn set_values(&mut self, encoding: Encoding, data: Bytes) -> Res<()> {
        self.vals = match encoding {
            Encoding::PLAIN => Vals::Plain { data, pos: 0 },
            Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY => {
                let w = *data.first().unwrap_or(&0) as usize;
                Vals::Dict(Hybrid::new(data.slice(data.len().min(1)..), w)?)
            }
            Encoding::RLE if self.phys == Phys::BOOLEAN => {
                if data.len() < 4 {
                    return Err("RLE boolean page truncated".into());
                }
                let n = u32::from_le_bytes(data[..4].try_into().unwrap()) as usize;
                Vals::Rle(Hybrid::new(data.slice(4..(4 + n).min(data.len())), 1)?)
            }
            e => return Err(format!("value encoding {e} is not supported")),
        };
        Ok(())
    }

    /// Decodes `out.len()` values (no levels) of the current page.
    fn values(&mut self, out: &mut [i64]) -> Res<()> {
        match &mut self.vals {
            Vals::None => Err("no data page".into()),
            v @ Vals::Plain { .. } => plain_values(self.phys, v, out, &mut self.syms),
            Vals::Dict(h) => {
                self.keys.resize(out.len(), 0);
                h.get_exact(&mut self.keys, "dictionary keys")?;
                let dict = &self.dict;
                for (o, &k) in out.iter_mut().zip(&self.keys) {
                    *o = *dict.get(k as usize).ok_or_else(|| format!("dictionary key {k} out of range ({} entries)", dict.len()))?;
                }
                Ok(())
            }
            Vals::Rle(h) => {
                self.keys.resize(out.len(), 0);
                h.get_exact(&mut self.keys, "booleans")?;
                for (o, &k) in out.iter_mut().zip(&self.keys) {
                    *o = k as i64;
                }
                Ok(())
            }
        }
    }

    /// Decodes the next `out.len()` rows of a flat column; nulls become `null`, or are an error
    /// when `null` is `None`.
    pub(crate) fn read(&mut self, out: &mut [i64], null: Option<i64>) -> Res<()> {
        let n = out.len();
        let mut done = 0;
        while done < n {
            if self.left == 0 {
                if !self.next_page()? {
                    return Err(format!("column chunk ends early (after {done} of {n} rows)"));
                }
                continue;
            }
            let k = (n - done).min(self.left);
            let dst = &mut out[done..done + k];
            if let Some(d) = &mut self.def {
                self.lv.resize(k, 0);
                d.get_exact(&mut self.lv, "definition levels")?;
                let max = self.max_def as u32;
                let valid = self.lv.iter().filter(|&&l| l == max).count();
                if valid == k {
                    self.values(dst)?;
                } else {
                    let Some(nv) = null else { return Err("holds nulls".into()) };
                    self.values(&mut dst[..valid])?;
                    // spread the values out to their rows, from the back
                    let mut j = valid;
                    for i in (0..k).rev() {
                        if self.lv[i] == max {
                            j -= 1;
                            dst[i] = dst[j];
                        } else {
                            dst[i] = nv;
                        }
                    }
                }
            } else {
                self.values(dst)?;
            }
            self.left -= k;
            done += k;
        }
        Ok(())
    }

    /// Refills the level block from the current page (or the next ones); false at the end.
    fn refill(&mut self) -> Res<bool> {
        while self.left == 0 {
            if !self.next_page()? {
                return Ok(false);
            }
        }
        let k = self.left.min(4096);
        let b = &mut self.block;
        b.rep.resize(k, 0);
        b.def.resize(k, 0);
        self.rep.as_mut().ok_or("no repetition levels")?.get_exact(&mut b.rep, "repetition levels")?;
        self.def.as_mut().ok_or("no definition levels")?.get_exact(&mut b.def, "definition levels")?;
        let max = self.max_def as u32;
        let nv = b.def.iter().filter(|&&d| d == max).count();
        let mut vals = std::mem::take(&mut self.block.vals);
        vals.resize(nv, 0);
        let r = self.values(&mut vals);
        self.block.vals = vals;
        r?;
        self.block.pos = 0;
        self.block.vpos = 0;
        self.left -= k;
        Ok(true)
    }

    /// Decodes the next `n` rows of a list column (optional list of optional elements:
    /// definition level 0 = null list, 1 = empty list, 2 = null element, 3 = element).
    pub(crate) fn read_lists(&mut self, n: usize, out: &mut ListBuf) -> Res<()> {
        out.present.clear();
        out.off.clear();
        out.vals.clear();
        out.off.push(0);
        let max = self.max_def as u32;
        let mut row = 0;
        while row < n {
            if self.block.pos == self.block.rep.len() && !self.refill()? {
                return Err(format!("column chunk ends early (after {row} of {n} rows)"));
            }
            let b = &mut self.block;
            // the common case: a run of null lists
            while row < n && b.pos < b.rep.len() && b.def[b.pos] == 0 && b.rep[b.pos] == 0 {
                out.present.push(false);
                out.off.push(out.vals.len() as u32);
                b.pos += 1;
                row += 1;
            }
            if row == n || b.pos == b.rep.len() {
                continue;
            }
            if b.rep[b.pos] != 0 {
                return Err("list levels out of step (a row starts inside a list)".into());
            }
            // one row: its first level, then those that continue its list (repetition level 1)
            out.present.push(true);
            let mut first = true;
            loop {
                let b = &mut self.block;
                if b.pos == b.rep.len() {
                    if !self.refill()? {
                        break;
                    }
                    continue;
                }
                if !first && b.rep[b.pos] == 0 {
                    break;
                }
                let d = b.def[b.pos];
                if first && d == 0 {
                    *out.present.last_mut().unwrap() = false;
                }
                if d == max {
                    out.vals.push(b.vals[b.vpos] as u64);
                    b.vpos += 1;
                } else if d + 1 == max {
                    out.vals.push(0); // null element
                }
                b.pos += 1;
                first = false;
            }
            out.off.push(out.vals.len() as u32);
            row += 1;
        }
        Ok(())
    }
}

fn v1_levels(buf: &Bytes, pos: &mut usize, enc: Encoding, width: usize) -> Res<Hybrid> {
    if enc != Encoding::RLE {
        return Err(format!("level encoding {enc} is not supported"));
    }
    if *pos + 4 > buf.len() {
        return Err("data page levels truncated".into());
    }
    let n = u32::from_le_bytes(buf[*pos..*pos + 4].try_into().unwrap()) as usize;
    let start = *pos + 4;
    if start + n > buf.len() {
        return Err("data page levels truncated".into());
    }
    *pos = start + n;
    Hybrid::new(buf.slice(start..start + n), width)
}

/// PLAIN-decodes `out.len()` values (strings: interned into `syms`).
fn plain_values(phys: Phys, v: &mut Vals, out: &mut [i64], syms: &mut Symbols) -> Res<()> {
    let Vals::Plain { data, pos } = v else { unreachable!() };
    let d: &[u8] = data;
    let trunc = || "PLAIN values truncated".to_string();
    match phys {
        Phys::INT32 => {
            let end = *pos + 4 * out.len();
            let src = d.get(*pos..end).ok_or_else(trunc)?;
            for (o, c) in out.iter_mut().zip(src.chunks_exact(4)) {
                *o = i32::from_le_bytes(c.try_into().unwrap()) as i64;
            }
            *pos = end;
        }
        Phys::INT64 => {
            let end = *pos + 8 * out.len();
            let src = d.get(*pos..end).ok_or_else(trunc)?;
            for (o, c) in out.iter_mut().zip(src.chunks_exact(8)) {
                *o = i64::from_le_bytes(c.try_into().unwrap());
            }
            *pos = end;
        }
        Phys::BOOLEAN => {
            // bit-packed, least significant bit first; `pos` counts bits
            if (*pos + out.len()).div_ceil(8) > d.len() {
                return Err(trunc());
            }
            for o in out.iter_mut() {
                *o = ((d[*pos >> 3] >> (*pos & 7)) & 1) as i64;
                *pos += 1;
            }
        }
        Phys::BYTE_ARRAY => {
            for o in out.iter_mut() {
                let l = d.get(*pos..*pos + 4).ok_or_else(trunc)?;
                let l = u32::from_le_bytes(l.try_into().unwrap()) as usize;
                let s = d.get(*pos + 4..*pos + 4 + l).ok_or_else(trunc)?;
                *o = syms.intern(s) as i64;
                *pos += 4 + l;
            }
        }
        p => return Err(format!("physical type {p} is not supported")),
    }
    Ok(())
}
