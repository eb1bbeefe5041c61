//! Page-level decoding of the trace's column chunks, without Arrow.
//!
//! The replay needs ~18 columns of every row once, as plain integers.  Building Arrow arrays for
//! a whole row group (and the list and all-null columns) costs more than the rest of the decode
//! and allocates tens of MB of fresh memory per row group; this decoder instead walks each column
//! chunk's pages itself (page headers, decompression with one shared zstd context, values), a
//! few thousand rows at a time, into small buffers that are reused from row group to row group.
//!
//! It handles the encodings Parquet writers use for these columns: PLAIN, dictionary
//! (PLAIN_DICTIONARY / RLE_DICTIONARY, including a chunk that falls back from dictionary to PLAIN
//! pages), DELTA_BINARY_PACKED integers (what the native writer uses for sequence numbers, times
//! and requests), RLE booleans, RLE definition/repetition levels, data pages v1 and v2.
//! Anything else (e.g. DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT) is refused up front by
//! [`supported_encodings`], and the reader then decodes that row group through Arrow instead.
use std::collections::HashMap;

use std::fs::File;
use std::os::unix::fs::FileExt;

use parquet::basic::{Compression, Encoding, Type as Phys};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::format::{PageHeader, PageType};
use parquet::thrift::TSerializable;
use thrift::protocol::TCompactInputProtocol;

pub(crate) type Res<T> = Result<T, String>;

/// Encodings this module decodes (values and levels).
pub(crate) fn supported_encodings(encs: &[Encoding]) -> bool {
    encs.iter().all(|e| {
        matches!(
            e,
            Encoding::PLAIN
                | Encoding::PLAIN_DICTIONARY
                | Encoding::RLE_DICTIONARY
                | Encoding::RLE
                | Encoding::DELTA_BINARY_PACKED
        )
    })
}

// ------------------------------------------------------------------ RLE / bit-packed hybrid
/// Decoder of Parquet's RLE / bit-packed hybrid encoding (levels, dictionary keys, RLE booleans)
/// over the bytes `start..end` of a page buffer, which each call passes in.
pub(crate) struct Hybrid {
    end: usize,
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
    pub(crate) fn new(start: usize, end: usize, width: usize) -> Res<Hybrid> {
        if width > 32 {
            return Err(format!("bit width {width} is too large"));
        }
        Ok(Hybrid { end, pos: start, width, rle_left: 0, rle_val: 0, bp_left: 0, bp_bit: 0 })
    }

    /// Reads the next run's header; false at the end of the data.
    #[inline(always)]
    fn header(&mut self, d: &[u8]) -> Res<bool> {
        // the usual one, inline: an RLE run of up to 63 values of width 1..=8 (levels, small
        // dictionaries), a one-byte header and a one-byte value
        let p = self.pos;
        if p + 2 <= d.len() && d[p] & 0x81 == 0 && self.width.wrapping_sub(1) < 8 {
            self.rle_left = (d[p] >> 1) as usize;
            self.rle_val = d[p + 1] as u32;
            self.pos = p + 2;
            return Ok(true);
        }
        self.header_any(d)
    }

    #[inline(never)]
    fn header_any(&mut self, d: &[u8]) -> Res<bool> {
        let Some(&b0) = d.get(self.pos) else { return Ok(false) };
        // runs of up to 63 values (or 8 * 63 bit-packed) have a one-byte header
        let h = if b0 < 0x80 {
            self.pos += 1;
            b0 as u64
        } else {
            uleb128(d, &mut self.pos)?
        };
        if h & 1 == 1 {
            let groups = (h >> 1) as usize;
            let avail = d.len() - self.pos;
            let nbytes = groups.saturating_mul(self.width).min(avail);
            // a writer may cut the last run short: only whole values that are there count
            self.bp_left = match (nbytes * 8).checked_div(self.width) {
                Some(whole) => groups.saturating_mul(8).min(whole),
                None => groups.saturating_mul(8), // width 0: values take no bytes
            };
            self.bp_bit = self.pos * 8;
            self.pos += nbytes;
        } else {
            self.rle_left = (h >> 1) as usize;
            let vb = self.width.div_ceil(8);
            if self.pos + vb > d.len() {
                return Err("RLE run truncated".into());
            }
            // levels and small dictionaries: one byte
            self.rle_val = if vb == 1 {
                d[self.pos] as u32
            } else {
                let mut v = 0u32;
                for (k, b) in d[self.pos..self.pos + vb].iter().enumerate() {
                    v |= (*b as u32) << (8 * k);
                }
                v
            };
            self.pos += vb;
        }
        Ok(true)
    }

    /// Decodes up to `out.len()` values from `page`; returns how many there were.
    pub(crate) fn get(&mut self, page: &[u8], out: &mut [u32]) -> Res<usize> {
        let d = &page[..self.end];
        let mut i = 0;
        while i < out.len() {
            if self.rle_left > 0 {
                let k = self.rle_left.min(out.len() - i);
                out[i..i + k].fill(self.rle_val);
                self.rle_left -= k;
                i += k;
            } else if self.bp_left > 0 {
                let k = self.bp_left.min(out.len() - i);
                let (dst, bit) = (&mut out[i..i + k], self.bp_bit);
                let _ = with_width!(self.width, W => unpack_map::<W, u32>(d, bit, dst, Ok));
                self.bp_bit += k * self.width;
                self.bp_left -= k;
                i += k;
            } else if !self.header(d)? {
                break;
            }
        }
        Ok(i)
    }

    /// If the next `k` values are one RLE run, consumes them and returns the run's value.
    fn take_run(&mut self, page: &[u8], k: usize) -> Res<Option<u32>> {
        match self.rle_run(page)? {
            Some((v, left)) if left >= k => {
                self.rle_left -= k;
                Ok(Some(v))
            }
            _ => Ok(None),
        }
    }

    /// The RLE run the next values are in, as (value, values left in it); `None` if they are
    /// bit-packed (or there are none: [`Hybrid::get`] then says so).
    #[inline(always)]
    fn rle_run(&mut self, page: &[u8]) -> Res<Option<(u32, usize)>> {
        if self.rle_left == 0 && self.bp_left == 0 {
            self.header(&page[..self.end])?;
        }
        Ok((self.rle_left > 0).then_some((self.rle_val, self.rle_left)))
    }

    /// Values left in the current run (RLE or bit-packed), reading its header if need be.
    fn run_left(&mut self, page: &[u8]) -> Res<usize> {
        self.rle_run(page)?;
        Ok(self.rle_left + self.bp_left)
    }

    /// Decodes exactly `out.len()` dictionary keys and looks them up in `dict`.
    fn get_mapped(&mut self, page: &[u8], out: &mut [i64], dict: &[i64]) -> Res<()> {
        let d = &page[..self.end];
        let oob = |k: u32| format!("dictionary key {k} out of range ({} entries)", dict.len());
        let mut i = 0;
        while i < out.len() {
            if self.rle_left > 0 {
                let k = self.rle_left.min(out.len() - i);
                let v = *dict.get(self.rle_val as usize).ok_or_else(|| oob(self.rle_val))?;
                out[i..i + k].fill(v);
                self.rle_left -= k;
                i += k;
            } else if self.bp_left > 0 {
                let k = self.bp_left.min(out.len() - i);
                let (dst, bit) = (&mut out[i..i + k], self.bp_bit);
                // a dictionary of 2^width entries or more takes any key: no check per key
                let r = if dict.len() >> self.width > 0 {
                    with_width!(self.width, W => {
                        let dict = &dict[..1 << W];
                        unpack_map::<W, i64>(d, bit, dst, |key| Ok(dict[key as usize]))
                    })
                } else {
                    with_width!(self.width, W => unpack_map::<W, i64>(d, bit, dst, |key| dict.get(key as usize).copied().ok_or(key)))
                };
                r.map_err(oob)?;
                self.bp_bit += k * self.width;
                self.bp_left -= k;
                i += k;
            } else if !self.header(d)? {
                return Err(format!("dictionary keys: page holds {i} of {} values", out.len()));
            }
        }
        Ok(())
    }

    /// Decodes exactly `out.len()` values.
    fn get_exact(&mut self, page: &[u8], out: &mut [u32], what: &str) -> Res<()> {
        let got = self.get(page, out)?;
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

/// Runs `$body` with `$W` a constant equal to the bit width `$w` (0..=32, as [`Hybrid::new`]
/// checks), so that [`unpack_map`] gets constant offsets, shifts and masks.
macro_rules! with_width {
    ($w:expr, $W:ident => $body:expr) => {
        with_width!(@arms $w, $W, $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32)
    };
    (@arms $w:expr, $W:ident, $body:expr; $($n:literal)*) => {
        match $w {
            $( $n => {
                const $W: usize = $n;
                $body
            } )*
            w => unreachable!("bit width {w}"),
        }
    };
}
use with_width;

/// Unpacks the `out.len()` little-endian `W`-bit values from bit `bit` of `d` through `f` (a
/// dictionary lookup, or none); stops at the first value `f` refuses and returns it.
///
/// Eight values take `W` whole bytes: from a byte boundary on, each group of eight is read from
/// one bounds-checked slice with constant offsets and shifts (a handful of instructions a value,
/// against a dozen with a variable width).
#[inline(always)]
fn unpack_map<const W: usize, T>(
    d: &[u8],
    bit: usize,
    out: &mut [T],
    mut f: impl FnMut(u32) -> Result<T, u32>,
) -> Result<(), u32> {
    let mask = (1u64 << W) - 1;
    let one = |b: usize| ((load_u64(d, b >> 3) >> (b & 7)) & mask) as u32;
    let n = out.len();
    let mut b = bit;
    let mut i = 0;
    // one at a time up to a byte boundary (at most 7 values: run starts are byte-aligned)
    while i < n && b & 7 != 0 {
        out[i] = f(one(b))?;
        b += W;
        i += 1;
    }
    while i + 8 <= n && (b >> 3) + W + 8 <= d.len() {
        let s = &d[b >> 3..(b >> 3) + W + 8];
        let o = &mut out[i..i + 8];
        for (j, o) in o.iter_mut().enumerate() {
            let at = j * W;
            let w = u64::from_le_bytes(s[at / 8..at / 8 + 8].try_into().unwrap());
            *o = f(((w >> (at % 8)) & mask) as u32)?;
        }
        b += 8 * W;
        i += 8;
    }
    // the careful tail, near the end of the page
    for o in out[i..].iter_mut() {
        *o = f(one(b))?;
        b += W;
    }
    Ok(())
}

fn bit_width(max_level: i16) -> usize {
    (16 - (max_level as u16).leading_zeros()) as usize
}

// ------------------------------------------------------------------ pages
/// Decompressors shared by all columns (a zstd context is costly to create).
#[derive(Default)]
pub(crate) struct Decomp {
    zstd: Option<zstd::bulk::Decompressor<'static>>,
    snappy: Option<snap::raw::Decoder>,
}

/// Codecs the page decoder handles.
pub(crate) fn supported_codec(c: Compression) -> bool {
    matches!(c, Compression::UNCOMPRESSED | Compression::ZSTD(_) | Compression::SNAPPY)
}

impl Decomp {
    fn run(&mut self, codec: Compression, src: &[u8], out: &mut Vec<u8>, n: usize) -> Res<()> {
        match codec {
            Compression::UNCOMPRESSED => {
                if src.len() != n {
                    return Err(format!("page is {} bytes, its header says {n}", src.len()));
                }
                out.extend_from_slice(src);
            }
            Compression::ZSTD(_) => {
                if self.zstd.is_none() {
                    self.zstd = Some(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?);
                }
                let at = out.len();
                out.resize(at + n, 0);
                let got = self
                    .zstd
                    .as_mut()
                    .unwrap()
                    .decompress_to_buffer(src, &mut out[at..])
                    .map_err(|e| format!("zstd: {e}"))?;
                if got != n {
                    return Err(format!("page decompresses to {got} bytes, its header says {n}"));
                }
            }
            Compression::SNAPPY => {
                let at = out.len();
                out.resize(at + n, 0);
                let got = self
                    .snappy
                    .get_or_insert_with(snap::raw::Decoder::new)
                    .decompress(src, &mut out[at..])
                    .map_err(|e| format!("snappy: {e}"))?;
                if got != n {
                    return Err(format!("page decompresses to {got} bytes, its header says {n}"));
                }
            }
            c => return Err(format!("compression {c} is not supported")),
        }
        Ok(())
    }
}

// ------------------------------------------------------------------ one column chunk
enum Vals {
    None,
    /// PLAIN values from byte `pos` (booleans: from bit `pos`) up to byte `end` of the page
    Plain {
        pos: usize,
        end: usize,
    },
    /// dictionary keys
    Dict(Hybrid),
    /// RLE booleans
    Rle(Hybrid),
    /// DELTA_BINARY_PACKED integers, decoded with the page into `Column::delta`; the next is at `pos`
    Delta {
        pos: usize,
    },
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
    fn clear(&mut self) {
        self.names.clear();
        self.index.clear();
    }
}

/// Levels of a list column decoded into arrays, where they are bit-packed, and their values.
#[derive(Default)]
struct LevelBlock {
    /// the levels are `rep[..len]`, `def[..len]` (the buffers only grow: no zeroing per block)
    rep: Vec<u32>,
    def: Vec<u32>,
    len: usize,
    vals: Vec<i64>,
    pos: usize,
    vpos: usize,
}

/// The lists of a few rows, only those that are not null (most rows have none, and a run of null
/// lists then costs nothing): row `rows[j]` (ascending) has the elements `vals[off[j]..off[j+1]]`.
#[derive(Default)]
pub(crate) struct ListBuf {
    pub(crate) rows: Vec<u32>,
    pub(crate) off: Vec<u32>,
    pub(crate) vals: Vec<u64>,
}

/// The first `k` elements of a scratch buffer, grown (zeroed) only when it is too short.
fn scratch<T: Copy + Default>(v: &mut Vec<T>, k: usize) -> &mut [T] {
    if v.len() < k {
        v.resize(k, T::default());
    }
    &mut v[..k]
}

/// Decoder of one column, a column chunk (one row group) at a time; its buffers are reused.
pub(crate) struct Column {
    phys: Phys,
    max_def: i16,
    max_rep: i16,
    codec: Compression,
    /// the column chunk as stored, and the position of the next page header in it
    chunk: Vec<u8>,
    cpos: usize,
    /// the current page, decompressed
    page: Vec<u8>,
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
    /// the values of a DELTA_BINARY_PACKED page
    delta: Vec<i64>,
}

impl Column {
    pub(crate) fn new(phys: Phys, max_def: i16, max_rep: i16) -> Column {
        Column {
            phys,
            max_def,
            max_rep,
            codec: Compression::UNCOMPRESSED,
            chunk: Vec::new(),
            cpos: 0,
            page: Vec::new(),
            def: None,
            rep: None,
            vals: Vals::None,
            left: 0,
            dict: Vec::new(),
            syms: Symbols::default(),
            lv: Vec::new(),
            keys: Vec::new(),
            block: LevelBlock::default(),
            delta: Vec::new(),
        }
    }

    /// Starts on a column chunk: reads it from `file` (all of it: a few MB at most).
    pub(crate) fn start(&mut self, file: &File, meta: &ColumnChunkMetaData) -> Res<()> {
        let (start, len) = meta.byte_range();
        self.chunk.clear();
        self.chunk.resize(len as usize, 0);
        file.read_exact_at(&mut self.chunk, start)
            .map_err(|e| format!("cannot read {len} bytes at offset {start}: {e}"))?;
        self.codec = meta.compression();
        self.cpos = 0;
        self.def = None;
        self.rep = None;
        self.vals = Vals::None;
        self.left = 0;
        self.dict.clear();
        self.syms.clear();
        self.block.len = 0;
        self.block.pos = 0;
        Ok(())
    }

    /// Moves to the next data page (reading a dictionary page on the way); false at the end.
    fn next_page(&mut self, z: &mut Decomp) -> Res<bool> {
        loop {
            if self.cpos >= self.chunk.len() {
                return Ok(false);
            }
            let mut rd: &[u8] = &self.chunk[self.cpos..];
            let before = rd.len();
            let h = {
                let mut prot = TCompactInputProtocol::new(&mut rd);
                PageHeader::read_from_in_protocol(&mut prot).map_err(|e| format!("bad page header: {e}"))?
            };
            let body = self.cpos + (before - rd.len());
            let clen = h.compressed_page_size.max(0) as usize;
            let ulen = h.uncompressed_page_size.max(0) as usize;
            if body + clen > self.chunk.len() {
                return Err("page truncated".into());
            }
            self.cpos = body + clen;
            let src = &self.chunk[body..body + clen];
            self.page.clear();
            let enc = |e: parquet::format::Encoding| Encoding::try_from(e).map_err(|e| e.to_string());
            match h.type_ {
                PageType::DICTIONARY_PAGE => {
                    let dh = h.dictionary_page_header.ok_or("dictionary page without its header")?;
                    let e = enc(dh.encoding)?;
                    if !matches!(e, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY) {
                        return Err(format!("dictionary page encoding {e} is not supported"));
                    }
                    z.run(self.codec, src, &mut self.page, ulen)?;
                    let n = dh.num_values.max(0) as usize;
                    let mut d = std::mem::take(&mut self.dict);
                    d.clear();
                    d.resize(n, 0);
                    let mut v = Vals::Plain { pos: 0, end: self.page.len() };
                    let r = plain_values(self.phys, &mut v, &self.page, &mut d, &mut self.syms);
                    self.dict = d;
                    r?;
                }
                PageType::DATA_PAGE => {
                    let dh = h.data_page_header.ok_or("data page without its header")?;
                    z.run(self.codec, src, &mut self.page, ulen)?;
                    let mut pos = 0;
                    self.rep = None;
                    self.def = None;
                    if self.max_rep > 0 {
                        self.rep = Some(v1_levels(
                            &self.page,
                            &mut pos,
                            enc(dh.repetition_level_encoding)?,
                            bit_width(self.max_rep),
                        )?);
                    }
                    if self.max_def > 0 {
                        self.def = Some(v1_levels(
                            &self.page,
                            &mut pos,
                            enc(dh.definition_level_encoding)?,
                            bit_width(self.max_def),
                        )?);
                    }
                    self.set_values(enc(dh.encoding)?, pos, dh.num_values.max(0) as usize)?;
                    self.left = dh.num_values.max(0) as usize;
                    if self.left > 0 {
                        return Ok(true);
                    }
                }
                PageType::DATA_PAGE_V2 => {
                    let dh = h.data_page_header_v2.ok_or("data page without its header")?;
                    let (r, d) = (
                        dh.repetition_levels_byte_length.max(0) as usize,
                        dh.definition_levels_byte_length.max(0) as usize,
                    );
                    if r + d > clen || r + d > ulen {
                        return Err("data page levels truncated".into());
                    }
                    // the levels are never compressed
                    self.page.extend_from_slice(&src[..r + d]);
                    if dh.is_compressed.unwrap_or(true) {
                        z.run(self.codec, &src[r + d..], &mut self.page, ulen - r - d)?;
                    } else {
                        self.page.extend_from_slice(&src[r + d..]);
                    }
                    self.rep = None;
                    self.def = None;
                    if self.max_rep > 0 {
                        self.rep = Some(Hybrid::new(0, r, bit_width(self.max_rep))?);
                    }
                    if self.max_def > 0 {
                        self.def = Some(Hybrid::new(r, r + d, bit_width(self.max_def))?);
                    }
                    self.set_values(enc(dh.encoding)?, r + d, dh.num_values.max(0) as usize)?;
                    self.left = dh.num_values.max(0) as usize;
                    if self.left > 0 {
                        return Ok(true);
                    }
                }
                _ => {} // index pages: nothing for us
            }
        }
    }

    /// Starts on the values of a data page of `levels` levels (at most as many values).
    fn set_values(&mut self, encoding: Encoding, pos: usize, levels: usize) -> Res<()> {
        let end = self.page.len();
        self.vals = match encoding {
            Encoding::DELTA_BINARY_PACKED if matches!(self.phys, Phys::INT32 | Phys::INT64) => {
                delta_values(&self.page[pos..], self.phys == Phys::INT32, levels, &mut self.delta)?;
                Vals::Delta { pos: 0 }
            }
            // booleans are bit-packed: their position counts bits
            Encoding::PLAIN if self.phys == Phys::BOOLEAN => Vals::Plain { pos: pos * 8, end },
            Encoding::PLAIN => Vals::Plain { pos, end },
            Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY => {
                let w = *self.page.get(pos).unwrap_or(&0) as usize;
                Vals::Dict(Hybrid::new((pos + 1).min(end), end, w)?)
            }
            Encoding::RLE if self.phys == Phys::BOOLEAN => {
                if pos + 4 > end {
                    return Err("RLE boolean page truncated".into());
                }
                let n = u32::from_le_bytes(self.page[pos..pos + 4].try_into().unwrap()) as usize;
                Vals::Rle(Hybrid::new(pos + 4, (pos + 4 + n).min(end), 1)?)
            }
            e => return Err(format!("value encoding {e} is not supported")),
        };
        Ok(())
    }

    /// Decodes `out.len()` values (no levels) of the current page.
    fn values(&mut self, out: &mut [i64]) -> Res<()> {
        match &mut self.vals {
            Vals::None => Err("no data page".into()),
            Vals::Delta { pos } => {
                let src = self.delta.get(*pos..*pos + out.len()).ok_or("page has fewer values than levels")?;
                out.copy_from_slice(src);
                *pos += out.len();
                Ok(())
            }
            v @ Vals::Plain { .. } => plain_values(self.phys, v, &self.page, out, &mut self.syms),
            Vals::Dict(h) => h.get_mapped(&self.page, out, &self.dict),
            Vals::Rle(h) => {
                let keys = scratch(&mut self.keys, out.len());
                h.get_exact(&self.page, keys, "booleans")?;
                for (o, &k) in out.iter_mut().zip(keys.iter()) {
                    *o = k as i64;
                }
                Ok(())
            }
        }
    }

    /// Decodes the next `out.len()` rows of a flat column; nulls become `null`, or are an error
    /// when `null` is `None`.
    pub(crate) fn read(&mut self, z: &mut Decomp, out: &mut [i64], null: Option<i64>) -> Res<()> {
        let n = out.len();
        let mut done = 0;
        while done < n {
            if self.left == 0 {
                if !self.next_page(z)? {
                    return Err(format!("column chunk ends early (after {done} of {n} rows)"));
                }
                continue;
            }
            let k = (n - done).min(self.left);
            let dst = &mut out[done..done + k];
            if let Some(d) = &mut self.def {
                let max = self.max_def as u32;
                // the usual cases: all of them there, or all null (one RLE run of levels)
                match d.take_run(&self.page, k)? {
                    Some(l) if l == max => {
                        self.values(dst)?;
                        self.left -= k;
                        done += k;
                        continue;
                    }
                    Some(_) => {
                        dst.fill(null.ok_or("holds nulls")?);
                        self.left -= k;
                        done += k;
                        continue;
                    }
                    None => {}
                }
                let lv = scratch(&mut self.lv, k);
                d.get_exact(&self.page, lv, "definition levels")?;
                let valid = lv.iter().filter(|&&l| l == max).count();
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

    /// Decodes the next `k` levels of the current page (and their values) into the level block.
    fn fill_block(&mut self, k: usize) -> Res<()> {
        let b = &mut self.block;
        b.pos = 0;
        b.vpos = 0;
        b.len = 0;
        let rep = self.rep.as_mut().ok_or("no repetition levels")?;
        let def = self.def.as_mut().ok_or("no definition levels")?;
        rep.get_exact(&self.page, scratch(&mut b.rep, k), "repetition levels")?;
        def.get_exact(&self.page, scratch(&mut b.def, k), "definition levels")?;
        b.len = k;
        let max = self.max_def as u32;
        let nv = b.def[..k].iter().filter(|&&d| d == max).count();
        let mut vals = std::mem::take(&mut self.block.vals);
        let r = self.values(scratch(&mut vals, nv));
        self.block.vals = vals;
        r?;
        self.left -= k;
        Ok(())
    }

    /// Decodes the next `n` rows of a list column (optional list of optional elements:
    /// definition level 0 = null list, 1 = empty list, 2 = null element, 3 = element).
    ///
    /// Where both level streams are in RLE runs (runs of null lists, and the elements of a list,
    /// as writers encode sparse list columns), the runs are taken whole; elsewhere the levels are
    /// decoded into the level block and taken one by one.
    pub(crate) fn read_lists(&mut self, z: &mut Decomp, n: usize, out: &mut ListBuf) -> Res<()> {
        out.rows.clear();
        out.off.clear();
        out.vals.clear();
        let max = self.max_def as u32;
        let mut row = 0;
        // whether the last row started is a list (not null): repetition level 1 continues it
        let mut open = false;
        loop {
            let b = &mut self.block;
            if b.pos < b.len {
                // repetition level 0 starts a row, 1 continues its list
                let (rep, def, vals) = (&b.rep[..b.len], &b.def[..b.len], &b.vals[..]);
                let mut p = b.pos;
                let mut vp = b.vpos;
                while p < rep.len() {
                    let d = def[p];
                    if rep[p] == 0 {
                        if row == n {
                            break;
                        }
                        open = d != 0;
                        if open {
                            out.rows.push(row as u32);
                            out.off.push(out.vals.len() as u32);
                        }
                        row += 1;
                    } else if !open {
                        return Err("list levels out of step (a row starts inside a list)".into());
                    }
                    if d == max {
                        out.vals.push(vals[vp] as u64);
                        vp += 1;
                    } else if d + 1 == max {
                        out.vals.push(0); // null element
                    }
                    p += 1;
                }
                b.pos = p;
                b.vpos = vp;
                if p < rep.len() {
                    break; // row n + 1 starts here
                }
                continue;
            }
            if self.left == 0 {
                // the next page may hold the rest of the last row's list
                if !self.next_page(z)? {
                    if row < n {
                        return Err(format!("column chunk ends early (after {row} of {n} rows)"));
                    }
                    break;
                }
                continue;
            }
            let rep = self.rep.as_mut().ok_or("no repetition levels")?;
            let def = self.def.as_mut().ok_or("no definition levels")?;
            let (Some((r, rn)), Some((d, dn))) = (rep.rle_run(&self.page)?, def.rle_run(&self.page)?) else {
                // bit-packed levels: decode them up to the end of the shorter run
                let k = rep.run_left(&self.page)?.min(def.run_left(&self.page)?).clamp(1, 4096).min(self.left);
                self.fill_block(k)?;
                continue;
            };
            let mut k = rn.min(dn).min(self.left);
            // elements per level: a value, a null element, or none (null or empty list)
            let elem = d == max || d + 1 == max;
            if r == 0 {
                // k rows of one level each
                if row == n {
                    break;
                }
                k = k.min(n - row);
                open = d != 0;
                if open {
                    let at = out.vals.len();
                    out.rows.extend(row as u32..(row + k) as u32);
                    out.off.extend((0..k).map(|j| (at + if elem { j } else { 0 }) as u32));
                }
                row += k;
            } else if !open {
                return Err("list levels out of step (a row starts inside a list)".into());
            }
            rep.rle_left -= k;
            def.rle_left -= k;
            self.left -= k;
            if d == max {
                let mut v = std::mem::take(&mut self.block.vals);
                let r = self.values(scratch(&mut v, k));
                if r.is_ok() {
                    out.vals.extend(v[..k].iter().map(|&x| x as u64));
                }
                self.block.vals = v;
                r?;
            } else if elem {
                out.vals.resize(out.vals.len() + k, 0); // null elements
            }
        }
        out.off.push(out.vals.len() as u32);
        Ok(())
    }
}

fn v1_levels(page: &[u8], pos: &mut usize, enc: Encoding, width: usize) -> Res<Hybrid> {
    if enc != Encoding::RLE {
        return Err(format!("level encoding {enc} is not supported"));
    }
    if *pos + 4 > page.len() {
        return Err("data page levels truncated".into());
    }
    let n = u32::from_le_bytes(page[*pos..*pos + 4].try_into().unwrap()) as usize;
    let start = *pos + 4;
    if start + n > page.len() {
        return Err("data page levels truncated".into());
    }
    *pos = start + n;
    Hybrid::new(start, start + n, width)
}

/// PLAIN-decodes `out.len()` values from `page` (strings: interned into `syms`).
/// `w` bits (0..=64) of `d` from bit `bit`, little-endian (missing bytes past the end read as 0).
#[inline]
fn bits_at(d: &[u8], bit: usize, w: usize) -> u64 {
    if w == 0 {
        return 0;
    }
    let (byte, sh) = (bit >> 3, bit & 7);
    let mut v = load_u64(d, byte) >> sh;
    if sh + w > 64 {
        v |= (*d.get(byte + 8).unwrap_or(&0) as u64) << (64 - sh);
    }
    if w == 64 {
        v
    } else {
        v & ((1u64 << w) - 1)
    }
}

/// Decodes a DELTA_BINARY_PACKED page's values (at most `max` of them) into `out`: a header
/// (block size, miniblocks per block, value count, first value as a zigzag varint), then per
/// block the smallest delta (zigzag varint), the miniblocks' bit widths and the miniblocks,
/// bit-packed.  INT32 pages (`int32`) add their deltas in 32-bit wrapping arithmetic.
fn delta_values(d: &[u8], int32: bool, max: usize, out: &mut Vec<i64>) -> Res<()> {
    let mut p = 0;
    let block = uleb128(d, &mut p)? as usize;
    let minis = uleb128(d, &mut p)? as usize;
    let total = uleb128(d, &mut p)? as usize;
    let unzig = |v: u64| ((v >> 1) as i64) ^ -((v & 1) as i64);
    let mut last = unzig(uleb128(d, &mut p)?);
    if block == 0
        || !block.is_multiple_of(128)
        || minis == 0
        || !block.is_multiple_of(minis)
        || !(block / minis).is_multiple_of(32)
    {
        return Err(format!("DELTA_BINARY_PACKED block of {block} values in {minis} miniblocks"));
    }
    if total > max {
        return Err(format!("DELTA_BINARY_PACKED page of {total} values for {max} levels"));
    }
    let per_mini = block / minis;
    let wmax = if int32 { 32 } else { 64 };
    out.clear();
    if total == 0 {
        return Ok(());
    }
    if int32 {
        last = last as i32 as i64;
    }
    out.push(last);
    while out.len() < total {
        let min = unzig(uleb128(d, &mut p)?);
        let widths = d.get(p..p + minis).ok_or("DELTA_BINARY_PACKED block truncated")?;
        p += minis;
        for &w in widths {
            if out.len() >= total {
                break;
            }
            let w = w as usize;
            if w > wmax {
                return Err(format!("DELTA_BINARY_PACKED bit width {w}"));
            }
            let k = per_mini.min(total - out.len());
            // the values this miniblock holds must be there (its padding need not be)
            if p + (k * w).div_ceil(8) > d.len() {
                return Err("DELTA_BINARY_PACKED miniblock truncated".into());
            }
            if int32 {
                let (mut l, m) = (last as i32, min as i32);
                for j in 0..k {
                    l = l.wrapping_add(m.wrapping_add(bits_at(d, p * 8 + j * w, w) as u32 as i32));
                    out.push(l as i64);
                }
                last = l as i64;
            } else if w == 0 {
                for _ in 0..k {
                    last = last.wrapping_add(min);
                    out.push(last);
                }
            } else {
                for j in 0..k {
                    last = last.wrapping_add(min.wrapping_add(bits_at(d, p * 8 + j * w, w) as i64));
                    out.push(last);
                }
            }
            p += (per_mini * w / 8).min(d.len() - p);
        }
    }
    Ok(())
}

fn plain_values(phys: Phys, v: &mut Vals, page: &[u8], out: &mut [i64], syms: &mut Symbols) -> Res<()> {
    let Vals::Plain { pos, end } = v else { unreachable!() };
    let d: &[u8] = &page[..*end];
    let trunc = || "PLAIN values truncated".to_string();
    match phys {
        Phys::INT32 => {
            let stop = *pos + 4 * out.len();
            let src = d.get(*pos..stop).ok_or_else(trunc)?;
            for (o, c) in out.iter_mut().zip(src.chunks_exact(4)) {
                *o = i32::from_le_bytes(c.try_into().unwrap()) as i64;
            }
            *pos = stop;
        }
        Phys::INT64 => {
            let stop = *pos + 8 * out.len();
            let src = d.get(*pos..stop).ok_or_else(trunc)?;
            for (o, c) in out.iter_mut().zip(src.chunks_exact(8)) {
                *o = i64::from_le_bytes(c.try_into().unwrap());
            }
            *pos = stop;
        }
        Phys::BOOLEAN => {
            // bit-packed, least significant bit first; `pos` counts bits from the page start
            if (*pos + out.len()).div_ceil(8) > d.len() {
                return Err(trunc());
            }
            let bit = |o: &mut i64, pos: &mut usize| {
                *o = ((d[*pos >> 3] >> (*pos & 7)) & 1) as i64;
                *pos += 1;
            };
            // to a byte boundary, then eight at a time (all true or all false: a plain fill)
            let head = ((8 - (*pos & 7)) & 7).min(out.len());
            let (first, rest) = out.split_at_mut(head);
            first.iter_mut().for_each(|o| bit(o, pos));
            let whole = (rest.len() / 8) * 8;
            let mut groups = rest.chunks_exact_mut(8);
            for (o8, &byte) in (&mut groups).zip(&d[*pos >> 3..]) {
                match byte {
                    0xff => o8.fill(1),
                    0 => o8.fill(0),
                    _ => o8.iter_mut().enumerate().for_each(|(j, o)| *o = ((byte >> j) & 1) as i64),
                }
            }
            *pos += whole;
            groups.into_remainder().iter_mut().for_each(|o| bit(o, pos));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A reference encoder: `runs` of (RLE?, values); bit-packed runs are padded to groups of 8.
    fn encode(width: usize, runs: &[(bool, Vec<u32>)]) -> Vec<u8> {
        let mut d = Vec::new();
        let uleb = |d: &mut Vec<u8>, mut v: u64| loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                d.push(b);
                break;
            }
            d.push(b | 0x80);
        };
        for (rle, vals) in runs {
            if *rle {
                uleb(&mut d, (vals.len() as u64) << 1);
                d.extend_from_slice(&vals[0].to_le_bytes()[..width.div_ceil(8)]);
            } else {
                let groups = vals.len().div_ceil(8);
                uleb(&mut d, ((groups as u64) << 1) | 1);
                let mut bits = vec![0u8; groups * width];
                for (i, &v) in vals.iter().enumerate() {
                    for k in 0..width {
                        if (v >> k) & 1 == 1 {
                            let b = i * width + k;
                            bits[b / 8] |= 1 << (b % 8);
                        }
                    }
                }
                d.extend_from_slice(&bits);
            }
        }
        d
    }

    /// Runs of every kind for `width`: short and long RLE runs, bit-packed runs of odd lengths.
    fn runs(width: usize) -> (Vec<(bool, Vec<u32>)>, Vec<u32>) {
        let max = if width == 0 { 0 } else { ((1u64 << width) - 1) as u32 };
        let mut x = 0x9e3779b9u32.wrapping_mul(width as u32 + 1);
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x & max
        };
        let mut runs = Vec::new();
        for (rle, len) in
            [(false, 8), (true, 3), (false, 24), (false, 200), (true, 1000), (false, 8 * 63), (true, 1), (false, 16)]
        {
            let vals: Vec<u32> = if rle { vec![next(); len] } else { (0..len).map(|_| next()).collect() };
            runs.push((rle, vals));
        }
        let all = runs.iter().flat_map(|r| r.1.clone()).collect();
        (runs, all)
    }

    #[test]
    fn hybrid_decodes_every_width_in_any_steps() {
        for width in 0..=32 {
            let (r, want) = runs(width);
            let page = encode(width, &r);
            for step in [1, 3, 7, 8, 13, 64, 4096] {
                let mut h = Hybrid::new(0, page.len(), width).unwrap();
                let mut got = Vec::new();
                while got.len() < want.len() {
                    let mut out = vec![0u32; step.min(want.len() - got.len())];
                    h.get_exact(&page, &mut out, "test").unwrap();
                    got.extend(out);
                }
                assert_eq!(got, want, "width {width} step {step}");
                // the dictionary path, a dictionary of 2^width entries (no check per key) ...
                if width <= 12 {
                    let dict: Vec<i64> = (0..1i64 << width).map(|k| k * 10 - 3).collect();
                    let mut h = Hybrid::new(0, page.len(), width).unwrap();
                    let mut got = Vec::new();
                    while got.len() < want.len() {
                        let mut out = vec![0i64; step.min(want.len() - got.len())];
                        h.get_mapped(&page, &mut out, &dict).unwrap();
                        got.extend(out);
                    }
                    assert!(got.iter().zip(&want).all(|(&g, &w)| g == w as i64 * 10 - 3), "width {width} step {step}");
                    // ... and one entry short of it (checked keys): the largest key is then out of range
                    let short = &dict[..dict.len() - 1];
                    let mut h = Hybrid::new(0, page.len(), width).unwrap();
                    let mut out = vec![0i64; want.len()];
                    let r = h.get_mapped(&page, &mut out, short);
                    if want.iter().any(|&k| k as usize >= short.len()) {
                        let e = r.unwrap_err();
                        assert!(e.contains(&format!("out of range ({} entries)", short.len())), "width {width}: {e}");
                    } else {
                        r.unwrap();
                    }
                }
            }
        }
    }

    #[test]
    fn out_of_range_dictionary_keys_are_errors() {
        // width 3, five entries: keys 5..7 are out of range, bit-packed and in an RLE run
        let dict = [10i64, 11, 12, 13, 14];
        for (runs, bad) in [
            (vec![(false, vec![0, 1, 2, 3, 4, 0, 1, 2]), (false, vec![1, 2, 6, 0])], 6),
            (vec![(true, vec![4; 20]), (true, vec![7; 9])], 7),
            (vec![(false, (0..200).map(|i| i % 5).collect::<Vec<u32>>()), (false, vec![3, 5])], 5),
        ] {
            let page = encode(3, &runs);
            let n: usize = runs.iter().map(|r| r.1.len()).sum();
            let mut h = Hybrid::new(0, page.len(), 3).unwrap();
            let mut out = vec![0i64; n];
            let e = h.get_mapped(&page, &mut out, &dict).unwrap_err();
            assert_eq!(e, format!("dictionary key {bad} out of range (5 entries)"));
        }
    }

    #[test]
    fn delta_binary_packed_round_trips_any_values() {
        use crate::pq_encode::delta_binary_packed;
        let mut seed = 11u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seed
        };
        let mut out = Vec::new();
        for int32 in [false, true] {
            for n in [0usize, 1, 2, 3, 31, 32, 33, 127, 128, 129, 130, 257, 1000, 5000] {
                for kind in 0..6 {
                    let vals: Vec<i64> = (0..n)
                        .map(|i| {
                            let r = rnd();
                            let v = match kind {
                                0 => i as i64 * 1000 + (r % 7) as i64,   // times: growing
                                1 => (r % 3) as i64 - 1,                 // small, negative too
                                2 => r as i64,                           // anything
                                3 => [i64::MIN, i64::MAX, 0, -1][i % 4], // extremes
                                4 => 42,                                 // constant
                                _ => {
                                    if r % 50 == 0 {
                                        r as i64
                                    } else {
                                        i as i64
                                    }
                                } // rare jumps
                            };
                            if int32 {
                                v as i32 as i64
                            } else {
                                v
                            }
                        })
                        .collect();
                    let mut page = Vec::new();
                    delta_binary_packed(&mut page, &vals, int32);
                    delta_values(&page, int32, n, &mut out).unwrap();
                    assert_eq!(out, vals, "int32 {int32}, n {n}, kind {kind}");
                    // a page cut short or claiming more values than levels is an error, not a panic
                    if n > 1 {
                        let cut = &page[..page.len() - 1];
                        let _ = delta_values(cut, int32, n, &mut out);
                        assert!(delta_values(&page, int32, n - 1, &mut out).is_err());
                    }
                }
            }
        }
        // constant steps need no bits: a long run is a few bytes a block
        let vals: Vec<i64> = (0..10_000).collect();
        let mut page = Vec::new();
        delta_binary_packed(&mut page, &vals, true);
        assert!(page.len() < 10_000 / 128 * 8, "{} bytes", page.len());
    }

    #[test]
    fn delta_binary_packed_garbage_is_an_error() {
        let mut out = Vec::new();
        let mut seed = 5u64;
        for len in 0..200 {
            let page: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (seed >> 56) as u8
                })
                .collect();
            for int32 in [false, true] {
                if delta_values(&page, int32, 1 << 16, &mut out).is_ok() {
                    assert!(out.len() <= 1 << 16);
                }
            }
        }
    }
}
