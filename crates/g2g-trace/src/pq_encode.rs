//! Encoding of the native format's column chunks without Arrow (the converse of `pages.rs`).
//!
//! parquet-rs's Arrow writer spent about 40 % of a DUMPI import in generic machinery: a
//! definition level per value for columns that hold no null, hashing every value of the
//! dictionary columns, a bit-packing run encoder called once per value, a fresh zstd context
//! per page.  The native writer knows its columns: which never hold nulls (their definition
//! levels are one RLE run), which are nearly constant (one dictionary entry, one RLE run of
//! keys), which are unique per row (PLAIN).  It encodes each column chunk here -- one
//! dictionary page where it pays, one data page v1 (levels and values, zstd as a whole, with
//! one reused compression context) -- and hands the bytes to parquet-rs's file writer, which
//! writes the footer (`SerializedRowGroupWriter::append_column`).
//!
//! Only encodings `pages.rs` decodes: PLAIN, PLAIN_DICTIONARY (dictionary page PLAIN, keys in
//! the RLE / bit-packed hybrid), RLE levels.

use parquet::basic::Encoding;
use parquet::format::{self, DataPageHeader, DictionaryPageHeader, PageHeader, PageType};
use parquet::thrift::TSerializable;
use thrift::protocol::TCompactOutputProtocol;

/// Dictionaries above this many entries are dropped for PLAIN values.
pub(crate) const MAX_DICT: usize = 4096;

// ------------------------------------------------------------------ RLE / bit-packed hybrid
fn uleb(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// One RLE run: `count` times `v`.
fn rle_run(out: &mut Vec<u8>, count: usize, v: u32, width: usize) {
    uleb(out, (count as u64) << 1);
    for k in 0..width.div_ceil(8) {
        out.push((v >> (8 * k)) as u8);
    }
}

/// One bit-packed run of `vals` (zero-padded to a multiple of 8 values; width 1..=32).
fn bitpack_run(out: &mut Vec<u8>, vals: &[u32], width: usize) {
    let groups = vals.len().div_ceil(8);
    uleb(out, ((groups as u64) << 1) | 1);
    out.reserve(groups * width);
    let mut acc: u64 = 0;
    let mut bits = 0usize;
    let pad = groups * 8 - vals.len();
    // 8 values take `width` bytes: whole 32-bit words but for a trailing half word at odd widths
    for &v in vals.iter().chain(std::iter::repeat_n(&0u32, pad)) {
        acc |= (v as u64) << bits;
        bits += width;
        if bits >= 32 {
            out.extend_from_slice(&(acc as u32).to_le_bytes());
            acc >>= 32;
            bits -= 32;
        }
    }
    while bits > 0 {
        out.push(acc as u8);
        acc >>= 8;
        bits = bits.saturating_sub(8);
    }
}

/// Appends `vals` (each below 2^width, width 1..=32) in the RLE / bit-packed hybrid encoding:
/// runs of 16 or more equal values as RLE runs, the rest bit-packed.
pub(crate) fn hybrid(out: &mut Vec<u8>, vals: &[u32], width: usize) {
    let n = vals.len();
    let (mut i, mut bp) = (0, 0);
    while i < n {
        let v = vals[i];
        let mut j = i + 1;
        while j < n && vals[j] == v {
            j += 1;
        }
        if j - i >= 16 {
            // the bit-packed values before the run take the run's head up to a multiple of 8
            let head = (8 - (i - bp) % 8) % 8;
            let s = i + head;
            if s > bp {
                bitpack_run(out, &vals[bp..s], width);
            }
            rle_run(out, j - s, v, width);
            bp = j;
        }
        i = j;
    }
    if n > bp {
        bitpack_run(out, &vals[bp..], width);
    }
}

/// Bits needed for values up to `max` (at least 1).
pub(crate) fn width_of(max: u32) -> usize {
    (32 - max.leading_zeros()).max(1) as usize
}

/// v1 page levels: a 4-byte length, then the hybrid encoding.
fn levels(out: &mut Vec<u8>, lv: &[u32], width: usize) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    hybrid(out, lv, width);
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// v1 page levels, all equal to `v`: one RLE run.
fn levels_const(out: &mut Vec<u8>, n: usize, v: u32, width: usize) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    if n > 0 {
        rle_run(out, n, v, width);
    }
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

// ------------------------------------------------------------------ DELTA_BINARY_PACKED
/// Values per block and miniblocks per block of the delta encoding (the usual 128 and 4).
const DELTA_BLOCK: usize = 128;
const DELTA_MINIBLOCKS: usize = 4;
const DELTA_MINI: usize = DELTA_BLOCK / DELTA_MINIBLOCKS;

/// Appends 32 values of `w` bits (1..=64), bit-packed least significant bit first: 4 * `w` bytes.
fn pack32(out: &mut Vec<u8>, vals: &[u64; DELTA_MINI], w: usize) {
    let mut buf = [0u8; DELTA_MINI * 8];
    let mut pos = 0;
    let mut acc: u128 = 0;
    let mut bits = 0;
    for &v in vals {
        acc |= (v as u128) << bits;
        bits += w;
        while bits >= 32 {
            buf[pos..pos + 4].copy_from_slice(&(acc as u32).to_le_bytes());
            acc >>= 32;
            bits -= 32;
            pos += 4;
        }
    }
    debug_assert_eq!((bits, pos), (0, 4 * w));
    out.extend_from_slice(&buf[..pos]);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Appends `vals` in Parquet's DELTA_BINARY_PACKED encoding: a header (block size, miniblocks
/// per block, value count, first value), then per block of 128 deltas the smallest delta and
/// four miniblocks of 32 deltas less that smallest one, each bit-packed at its own width.  For
/// an INT32 column (`int32`) the deltas are taken in 32-bit wrapping arithmetic, as readers of
/// INT32 pages undo them; the values are then the columns' i32 bits, sign-extended.
pub(crate) fn delta_binary_packed(out: &mut Vec<u8>, vals: &[i64], int32: bool) {
    uleb(out, DELTA_BLOCK as u64);
    uleb(out, DELTA_MINIBLOCKS as u64);
    uleb(out, vals.len() as u64);
    let first = vals.first().copied().unwrap_or(0);
    uleb(out, zigzag(if int32 { first as i32 as i64 } else { first }));
    if vals.len() < 2 {
        return;
    }
    let mut d = [0i64; DELTA_BLOCK];
    let mut i = 1;
    while i < vals.len() {
        let k = (vals.len() - i).min(DELTA_BLOCK);
        for j in 0..k {
            d[j] = if int32 {
                (vals[i + j] as i32).wrapping_sub(vals[i + j - 1] as i32) as i64
            } else {
                vals[i + j].wrapping_sub(vals[i + j - 1])
            };
        }
        let min = d[..k].iter().copied().min().unwrap();
        uleb(out, zigzag(min));
        let widths_at = out.len();
        out.extend_from_slice(&[0u8; DELTA_MINIBLOCKS]);
        for (m, mb) in d[..k].chunks(DELTA_MINI).enumerate() {
            // deltas less the smallest, as unsigned numbers of the column's width
            let mut rel = [0u64; DELTA_MINI];
            if int32 {
                for (r, &x) in rel.iter_mut().zip(mb) {
                    *r = (x as i32).wrapping_sub(min as i32) as u32 as u64;
                }
            } else {
                for (r, &x) in rel.iter_mut().zip(mb) {
                    *r = x.wrapping_sub(min) as u64;
                }
            }
            let w = (64 - rel.iter().fold(0, |a, &r| a | r).leading_zeros()) as usize;
            out[widths_at + m] = w as u8;
            if w > 0 {
                pack32(out, &rel, w);
            }
        }
        i += k;
    }
}

// ------------------------------------------------------------------ dictionary of numbers
/// An open-addressing table from values to dictionary keys, cleared per column chunk.
pub(crate) struct DictTable {
    slots: Vec<u32>, // key + 1, 0 = empty
    used: Vec<usize>,
    pub(crate) values: Vec<i64>,
}

const SLOTS: usize = MAX_DICT * 4;

impl DictTable {
    pub(crate) fn new() -> DictTable {
        DictTable { slots: vec![0; SLOTS], used: Vec::new(), values: Vec::new() }
    }

    fn clear(&mut self) {
        for &s in &self.used {
            self.slots[s] = 0;
        }
        self.used.clear();
        self.values.clear();
    }

    /// The key of `v`, added if new; None once the dictionary is full.
    #[inline]
    fn key(&mut self, v: i64) -> Option<u32> {
        let mut s = ((v as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 50) as usize; // 14 bits
        loop {
            let k = self.slots[s];
            if k == 0 {
                if self.values.len() >= MAX_DICT {
                    return None;
                }
                self.values.push(v);
                let key = self.values.len() as u32;
                self.slots[s] = key;
                self.used.push(s);
                return Some(key - 1);
            }
            if self.values[(k - 1) as usize] == v {
                return Some(k - 1);
            }
            s = (s + 1) & (SLOTS - 1);
        }
    }

    /// Dictionary keys of `vals` into `keys`; false (keys undefined) if the dictionary is full.
    pub(crate) fn build(&mut self, vals: &[i64], keys: &mut Vec<u32>) -> bool {
        self.clear();
        keys.clear();
        let (mut last_v, mut last_k) = (0i64, u32::MAX);
        for &v in vals {
            if v != last_v || last_k == u32::MAX {
                match self.key(v) {
                    Some(k) => {
                        last_v = v;
                        last_k = k;
                    }
                    None => return false,
                }
            }
            keys.push(last_k);
        }
        true
    }
}

// ------------------------------------------------------------------ pages and chunks
/// How a column without nulls is encoded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum How {
    /// a dictionary (PLAIN values if it would be too large)
    Dict,
    /// DELTA_BINARY_PACKED: values that grow row by row (sequence numbers, times, requests)
    Delta,
}

/// Physical value types of the native format's columns.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Phys {
    I32,
    I64,
}

impl Phys {
    fn put(self, out: &mut Vec<u8>, v: i64) {
        match self {
            Phys::I32 => out.extend_from_slice(&(v as i32).to_le_bytes()),
            Phys::I64 => out.extend_from_slice(&v.to_le_bytes()),
        }
    }
}

/// One encoded column chunk: its pages as they go in the file.
pub(crate) struct Chunk {
    pub(crate) bytes: Vec<u8>,
    /// a dictionary page at offset 0, the data page at `data_offset`
    pub(crate) has_dict: bool,
    pub(crate) data_offset: i64,
    /// levels (rows, or list elements and empty/null lists)
    pub(crate) num_values: i64,
    pub(crate) uncompressed: i64,
    pub(crate) encodings: Vec<Encoding>,
    /// zstd pages; false: stored as they are (pages of a few bytes, which zstd's frame would
    /// only make larger)
    pub(crate) compressed: bool,
}

/// Encodes column chunks; its buffers and zstd context are reused.
pub(crate) struct ChunkEncoder {
    z: zstd::bulk::Compressor<'static>,
    page: Vec<u8>,
    zbuf: Vec<u8>,
    hdr: Vec<u8>,
    dict: DictTable,
    keys: Vec<u32>,
    lv: Vec<u32>,
    rep: Vec<u32>,
    out: Vec<u8>,
    uncompressed: i64,
    compress: bool,
}

impl ChunkEncoder {
    pub(crate) fn new(level: i32) -> ChunkEncoder {
        ChunkEncoder {
            z: zstd::bulk::Compressor::new(level).expect("zstd level"),
            page: Vec::new(),
            zbuf: Vec::new(),
            hdr: Vec::new(),
            dict: DictTable::new(),
            keys: Vec::new(),
            lv: Vec::new(),
            rep: Vec::new(),
            out: Vec::new(),
            uncompressed: 0,
            compress: true,
        }
    }

    /// Compresses `self.page` and appends it with its header to the chunk.
    fn emit(&mut self, dict_values: Option<usize>, data: Option<(usize, Encoding)>) {
        let ulen = self.page.len();
        self.zbuf.clear();
        if self.compress {
            self.zbuf.reserve(zstd::zstd_safe::compress_bound(ulen));
            self.z.compress_to_buffer(&self.page, &mut self.zbuf).expect("zstd compression into a bound-sized buffer");
        } else {
            self.zbuf.extend_from_slice(&self.page);
        }
        let h = PageHeader {
            type_: if dict_values.is_some() { PageType::DICTIONARY_PAGE } else { PageType::DATA_PAGE },
            uncompressed_page_size: ulen as i32,
            compressed_page_size: self.zbuf.len() as i32,
            crc: None,
            data_page_header: data.map(|(n, e)| DataPageHeader {
                num_values: n as i32,
                encoding: format::Encoding::from(e),
                definition_level_encoding: format::Encoding::RLE,
                repetition_level_encoding: format::Encoding::RLE,
                statistics: None,
            }),
            index_page_header: None,
            dictionary_page_header: dict_values.map(|n| DictionaryPageHeader {
                num_values: n as i32,
                encoding: format::Encoding::PLAIN_DICTIONARY,
                is_sorted: None,
            }),
            data_page_header_v2: None,
        };
        self.hdr.clear();
        {
            let mut prot = TCompactOutputProtocol::new(&mut self.hdr);
            h.write_to_out_protocol(&mut prot).expect("a page header writes to memory");
        }
        self.uncompressed += (self.hdr.len() + ulen) as i64;
        self.out.extend_from_slice(&self.hdr);
        self.out.extend_from_slice(&self.zbuf);
    }

    fn start(&mut self) {
        self.out = Vec::new();
        self.uncompressed = 0;
        self.compress = true;
    }

    fn done(&mut self, has_dict: bool, data_offset: usize, num_values: usize, values: Encoding) -> Chunk {
        let mut encodings = vec![Encoding::RLE, values];
        if has_dict {
            encodings = vec![Encoding::PLAIN, Encoding::RLE, Encoding::PLAIN_DICTIONARY];
        }
        Chunk {
            bytes: std::mem::take(&mut self.out),
            has_dict,
            data_offset: data_offset as i64,
            num_values: num_values as i64,
            uncompressed: self.uncompressed,
            encodings,
            compressed: self.compress,
        }
    }

    /// A column that holds no null (definition level 1 everywhere), encoded as `how` says
    /// (a dictionary only if it has at most [`MAX_DICT`] values, else PLAIN).
    pub(crate) fn numbers(&mut self, phys: Phys, vals: &[i64], how: How) -> Chunk {
        self.start();
        let n = vals.len();
        if how == How::Delta {
            self.page.clear();
            levels_const(&mut self.page, n, 1, 1);
            delta_binary_packed(&mut self.page, vals, phys == Phys::I32);
            self.emit(None, Some((n, Encoding::DELTA_BINARY_PACKED)));
            return self.done(false, 0, n, Encoding::DELTA_BINARY_PACKED);
        }
        if how == How::Dict && n > 0 {
            let constant = vals.iter().all(|&v| v == vals[0]);
            let ok = constant || {
                let mut keys = std::mem::take(&mut self.keys);
                let ok = self.dict.build(vals, &mut keys);
                self.keys = keys;
                ok
            };
            if ok {
                // a constant's pages are a few bytes: stored as they are
                self.compress = !constant;
                // dictionary page
                self.page.clear();
                if constant {
                    phys.put(&mut self.page, vals[0]);
                } else {
                    for &v in &self.dict.values {
                        phys.put(&mut self.page, v);
                    }
                }
                let nd = if constant { 1 } else { self.dict.values.len() };
                self.emit(Some(nd), None);
                let data_offset = self.out.len();
                // data page: levels, key width, keys
                self.page.clear();
                levels_const(&mut self.page, n, 1, 1);
                let w = width_of(nd as u32 - 1);
                self.page.push(w as u8);
                if constant {
                    rle_run(&mut self.page, n, 0, w);
                } else {
                    hybrid(&mut self.page, &self.keys, w);
                }
                self.emit(None, Some((n, Encoding::PLAIN_DICTIONARY)));
                return self.done(true, data_offset, n, Encoding::PLAIN_DICTIONARY);
            }
        }
        self.page.clear();
        levels_const(&mut self.page, n, 1, 1);
        self.page.reserve(n * 8);
        match phys {
            Phys::I32 => {
                for &v in vals {
                    self.page.extend_from_slice(&(v as i32).to_le_bytes());
                }
            }
            Phys::I64 => {
                for &v in vals {
                    self.page.extend_from_slice(&v.to_le_bytes());
                }
            }
        }
        self.emit(None, Some((n, Encoding::PLAIN)));
        self.done(false, 0, n, Encoding::PLAIN)
    }

    /// An INT64 column with nulls where `valid` is false (the valid rows' values delta-encoded).
    pub(crate) fn nullable_i64(&mut self, vals: &[i64], valid: &[bool]) -> Chunk {
        self.start();
        let n = vals.len();
        self.page.clear();
        let mut lv = std::mem::take(&mut self.lv);
        lv.clear();
        lv.extend(valid.iter().map(|&b| b as u32));
        levels(&mut self.page, &lv, 1);
        self.lv = lv;
        let there: Vec<i64> = vals.iter().zip(valid).filter(|(_, &ok)| ok).map(|(&v, _)| v).collect();
        delta_binary_packed(&mut self.page, &there, false);
        self.emit(None, Some((n, Encoding::DELTA_BINARY_PACKED)));
        self.done(false, 0, n, Encoding::DELTA_BINARY_PACKED)
    }

    /// A string column with no null, dictionary-encoded (few distinct strings: the op names,
    /// memory spaces).  Strings are told apart by their address first, then by content.
    pub(crate) fn strings(&mut self, vals: &[&'static str]) -> Chunk {
        self.start();
        let n = vals.len();
        // distinct strings by content, keyed by address through the number table
        let mut addr: Vec<i64> = Vec::with_capacity(n);
        addr.extend(vals.iter().map(|s| s.as_ptr() as i64 ^ ((s.len() as i64) << 48)));
        let mut keys = std::mem::take(&mut self.keys);
        let ok = self.dict.build(&addr, &mut keys);
        if !ok {
            // more distinct addresses than a dictionary holds: every row's string, PLAIN
            self.keys = keys;
            self.page.clear();
            levels_const(&mut self.page, n, 1, 1);
            for s in vals {
                self.page.extend_from_slice(&(s.len() as u32).to_le_bytes());
                self.page.extend_from_slice(s.as_bytes());
            }
            self.emit(None, Some((n, Encoding::PLAIN)));
            return self.done(false, 0, n, Encoding::PLAIN);
        }
        // the first row of each address gives its string; equal strings share one entry
        let na = self.dict.values.len();
        let mut first = vec![usize::MAX; na];
        for (i, &k) in keys.iter().enumerate() {
            if first[k as usize] == usize::MAX {
                first[k as usize] = i;
            }
        }
        let mut entries: Vec<&str> = Vec::new();
        let mut remap = vec![0u32; na];
        for (a, &row) in first.iter().enumerate() {
            let s = vals[row];
            remap[a] = match entries.iter().position(|e| *e == s) {
                Some(p) => p as u32,
                None => {
                    entries.push(s);
                    (entries.len() - 1) as u32
                }
            };
        }
        for k in keys.iter_mut() {
            *k = remap[*k as usize];
        }
        self.compress = entries.len() > 1;
        self.page.clear();
        for s in &entries {
            self.page.extend_from_slice(&(s.len() as u32).to_le_bytes());
            self.page.extend_from_slice(s.as_bytes());
        }
        self.emit(Some(entries.len()), None);
        let data_offset = self.out.len();
        self.page.clear();
        levels_const(&mut self.page, n, 1, 1);
        let w = width_of(entries.len().max(1) as u32 - 1);
        self.page.push(w as u8);
        hybrid(&mut self.page, &keys, w);
        self.keys = keys;
        self.emit(None, Some((n, Encoding::PLAIN_DICTIONARY)));
        self.done(true, data_offset, n, Encoding::PLAIN_DICTIONARY)
    }

    /// A string column of `rows` rows, null but at the given (row, value) pairs (in row
    /// order): PLAIN values.
    pub(crate) fn sparse_strings<S: AsRef<str>>(&mut self, v: &[(usize, S)], rows: usize) -> Chunk {
        self.start();
        self.page.clear();
        if v.is_empty() {
            self.compress = false;
            levels_const(&mut self.page, rows, 0, 1);
        } else {
            let mut lv = std::mem::take(&mut self.lv);
            lv.clear();
            lv.resize(rows, 0);
            for (i, _) in v {
                lv[*i] = 1;
            }
            levels(&mut self.page, &lv, 1);
            self.lv = lv;
            for (_, s) in v {
                let s = s.as_ref();
                self.page.extend_from_slice(&(s.len() as u32).to_le_bytes());
                self.page.extend_from_slice(s.as_bytes());
            }
        }
        self.emit(None, Some((rows, Encoding::PLAIN)));
        self.done(false, 0, rows, Encoding::PLAIN)
    }

    /// A boolean column with no null: PLAIN (bit-packed, least significant bit first).
    pub(crate) fn booleans(&mut self, vals: &[bool]) -> Chunk {
        self.start();
        let n = vals.len();
        self.page.clear();
        levels_const(&mut self.page, n, 1, 1);
        for c in vals.chunks(8) {
            let mut b = 0u8;
            for (k, &x) in c.iter().enumerate() {
                b |= (x as u8) << k;
            }
            self.page.push(b);
        }
        self.emit(None, Some((n, Encoding::PLAIN)));
        self.done(false, 0, n, Encoding::PLAIN)
    }

    /// A list<uint64> column (optional list of optional elements, no null element): `offsets`
    /// (rows + 1), `values` (their INT64 bits), `valid` per row (None: every row has a list).
    pub(crate) fn lists(&mut self, offsets: &[i32], values: &[i64], valid: Option<&[bool]>) -> Chunk {
        self.start();
        let rows = offsets.len() - 1;
        self.page.clear();
        let all_null = values.is_empty() && valid.is_some_and(|v| v.iter().all(|&b| !b));
        let nlev;
        if all_null {
            self.compress = false;
            nlev = rows;
            levels_const(&mut self.page, rows, 0, 1);
            levels_const(&mut self.page, rows, 0, 2);
            // no values, but their header (readers read it before they count levels)
            delta_binary_packed(&mut self.page, &[], false);
        } else {
            let mut rep = std::mem::take(&mut self.rep);
            let mut lv = std::mem::take(&mut self.lv);
            rep.clear();
            lv.clear();
            for r in 0..rows {
                let (a, b) = (offsets[r] as usize, offsets[r + 1] as usize);
                if !valid.is_none_or(|v| v[r]) {
                    rep.push(0);
                    lv.push(0);
                } else if a == b {
                    rep.push(0);
                    lv.push(1);
                } else {
                    rep.push(0);
                    lv.push(3);
                    for _ in a + 1..b {
                        rep.push(1);
                        lv.push(3);
                    }
                }
            }
            nlev = rep.len();
            levels(&mut self.page, &rep, 1);
            levels(&mut self.page, &lv, 2);
            self.rep = rep;
            self.lv = lv;
            delta_binary_packed(&mut self.page, values, false);
        }
        self.emit(None, Some((nlev, Encoding::DELTA_BINARY_PACKED)));
        self.done(false, 0, nlev, Encoding::DELTA_BINARY_PACKED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes the hybrid encoding (a plain reference implementation, not pages.rs's).
    fn decode(d: &[u8], width: usize, n: usize) -> Vec<u32> {
        let mut out = Vec::new();
        let mut p = 0;
        while out.len() < n {
            let mut h = 0u64;
            let mut s = 0;
            loop {
                let b = d[p];
                p += 1;
                h |= ((b & 0x7f) as u64) << s;
                s += 7;
                if b < 0x80 {
                    break;
                }
            }
            if h & 1 == 1 {
                let cnt = (h >> 1) as usize * 8;
                let mut bit = p * 8;
                for _ in 0..cnt {
                    let mut v = 0u32;
                    for k in 0..width {
                        let byte = d[(bit + k) / 8];
                        v |= (((byte >> ((bit + k) % 8)) & 1) as u32) << k;
                    }
                    bit += width;
                    out.push(v);
                }
                p += (h >> 1) as usize * width;
            } else {
                let cnt = (h >> 1) as usize;
                let mut v = 0u32;
                for k in 0..width.div_ceil(8) {
                    v |= (d[p + k] as u32) << (8 * k);
                }
                p += width.div_ceil(8);
                out.extend(std::iter::repeat_n(v, cnt));
            }
        }
        out.truncate(n);
        out
    }

    #[test]
    fn hybrid_round_trips_runs_and_mixtures() {
        let mut seed = 7u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as u32
        };
        for width in [1usize, 2, 3, 7, 8, 9, 12, 16, 17, 31, 32] {
            let max = if width == 32 { u32::MAX } else { (1u32 << width) - 1 };
            for case in 0..20 {
                let mut v = Vec::new();
                while v.len() < 200 + case * 37 {
                    let x = rnd() & max;
                    let run = if rnd() % 3 == 0 { (rnd() % 40) as usize + 1 } else { 1 };
                    v.extend(std::iter::repeat_n(x, run));
                }
                let mut out = Vec::new();
                hybrid(&mut out, &v, width);
                assert_eq!(decode(&out, width, v.len()), v, "width {width}, case {case}");
            }
        }
        // a long run compresses to an RLE run
        let mut out = Vec::new();
        hybrid(&mut out, &[5; 1000], 3);
        assert!(out.len() <= 3, "{out:?}");
    }

    #[test]
    fn dictionary_table_keys_values_and_gives_up_when_full() {
        let mut t = DictTable::new();
        let mut keys = Vec::new();
        let vals: Vec<i64> = (0..10_000).map(|i| [3, -1, i64::MIN, 0, 3][i % 5]).collect();
        assert!(t.build(&vals, &mut keys));
        assert_eq!(t.values, vec![3, -1, i64::MIN, 0]);
        for (v, k) in vals.iter().zip(&keys) {
            assert_eq!(t.values[*k as usize], *v);
        }
        let many: Vec<i64> = (0..(MAX_DICT as i64 + 1)).map(|i| i * 1_000_003).collect();
        assert!(!t.build(&many, &mut keys));
        let fits: Vec<i64> = (0..MAX_DICT as i64).map(|i| i << 20).collect();
        assert!(t.build(&fits, &mut keys));
        assert_eq!(t.values.len(), MAX_DICT);
    }
}
