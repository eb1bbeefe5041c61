//! Decoding of one rank's DUMPI record stream, a chunk of the file at a time.
//!
//! The layout is the one `python/g2gsim/readers/dumpi_reader.py` documents and decodes (the
//! reference); this module decodes the same fields into [`Args`] without allocating per record.
//! The file's sections (index, header, footer, datatype sizes) are parsed by the Python reader,
//! which passes the record stream's bounds and the version here.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use crate::layouts::FUNCTIONS;

pub const ALL_FUNCTIONS: u16 = 290;
pub const FUNCTION_ENTER: u16 = 291;
pub const FUNCTION_EXIT: u16 = 292;
pub const END_OF_STREAM: u16 = 293;

const STATUS_BITS: u8 = 0x03;
const CPU_BIT: u8 = 0x04;
const WALL_BIT: u8 = 0x08;
const THREAD_BIT: u8 = 0x40;
const PERF_BIT: u8 = 0x80;
const WRAP_SLACK: i64 = 600;


/// A decoded argument.  Arrays live in [`Args::pool`], strings in [`Args::text`], statuses in
/// [`Args::sts`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Val {
    Int(i64),
    /// an argument the record does not carry (Gather's receive count away from the root)
    None,
    /// (start, len) in `pool`
    Arr(u32, u32),
    /// (start, count) in `pool`: `count` sub-arrays, each its length then its elements
    Arr2(u32, u32),
    /// (start, count) in `text`/`strs`: `count` strings (1 for a plain char array)
    Strs(u32, u32, u8),
    /// (start, len) in `sts`; `NoSts`: the record has no status bits
    Sts(u32, u32),
    NoSts,
}

#[derive(Default, Debug, Clone)]
pub struct Args {
    pub v: Vec<Val>,
    pub pool: Vec<i64>,
    pub strs: Vec<(u32, u32)>,
    pub text: Vec<u8>,
    pub sts: Vec<[i32; 3]>,
}

impl Args {
    fn clear(&mut self) {
        self.v.clear();
        self.pool.clear();
        self.strs.clear();
        self.text.clear();
        self.sts.clear();
    }
    /// The integer argument `k` (0 when it is not one: layouts are fixed, so this is a bug guard).
    #[inline]
    pub fn i(&self, k: usize) -> i64 {
        match self.v.get(k) {
            Some(Val::Int(x)) => *x,
            _ => 0,
        }
    }
    #[inline]
    pub fn opt(&self, k: usize) -> Option<i64> {
        match self.v.get(k) {
            Some(Val::Int(x)) => Some(*x),
            _ => None,
        }
    }
    #[inline]
    pub fn arr(&self, k: usize) -> Option<&[i64]> {
        match self.v.get(k) {
            Some(Val::Arr(s, n)) => Some(&self.pool[*s as usize..(*s + *n) as usize]),
            _ => None,
        }
    }
    /// Array argument `k`, empty when absent.
    #[inline]
    pub fn a(&self, k: usize) -> &[i64] {
        self.arr(k).unwrap_or(&[])
    }
    /// Statuses of argument `k`: `None` when the record has none.
    pub fn statuses(&self, k: usize) -> Option<&[[i32; 3]]> {
        match self.v.get(k) {
            Some(Val::Sts(s, n)) => Some(&self.sts[*s as usize..(*s + *n) as usize]),
            _ => None,
        }
    }
    pub fn sub_arrays(&self, k: usize) -> Vec<&[i64]> {
        let mut out = Vec::new();
        if let Some(Val::Arr2(s, n)) = self.v.get(k) {
            let mut p = *s as usize;
            for _ in 0..*n {
                let len = self.pool[p] as usize;
                out.push(&self.pool[p + 1..p + 1 + len]);
                p += 1 + len;
            }
        }
        out
    }
    pub fn strings(&self, k: usize) -> Vec<String> {
        match self.v.get(k) {
            Some(Val::Strs(s, n, _)) => self.strs[*s as usize..(*s + *n) as usize]
                .iter()
                .map(|(a, b)| String::from_utf8_lossy(&self.text[*a as usize..*b as usize]).into_owned())
                .collect(),
            _ => Vec::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Tok {
    I,
    Q,
    B,
    H,
    A,
    D,
    Bv,
    C,
    A2,
    S,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Special {
    Gather,
    Gatherv,
    Scatter,
    Scatterv,
    TypeStruct,
    CartGet,
    Init,
    InitThread,
    CommSpawn,
    CommSpawnMultiple,
}

#[derive(Clone, Debug)]
enum Dec {
    None,
    Toks(Vec<Tok>),
    Special(Special),
}

/// Name of a DUMPI function id (Function_enter/exit for 291/292).
pub fn fname(fid: u16) -> String {
    if fid < ALL_FUNCTIONS {
        FUNCTIONS[fid as usize].0.to_string()
    } else if fid == FUNCTION_ENTER {
        "Function_enter".into()
    } else if fid == FUNCTION_EXIT {
        "Function_exit".into()
    } else {
        fid.to_string()
    }
}

/// Name of a call for messages: MPI_Send, MPIO_Wait, DUMPI Function_enter.
pub fn call(fid: u16) -> String {
    let n = fname(fid);
    if fid >= ALL_FUNCTIONS {
        format!("DUMPI {n}")
    } else if n.starts_with("MPIO_") {
        n
    } else {
        format!("MPI_{n}")
    }
}

pub fn fid_of(name: &str) -> u16 {
    FUNCTIONS.iter().position(|(n, _)| *n == name).unwrap_or_else(|| panic!("no DUMPI function {name}")) as u16
}

fn decoders() -> Vec<Dec> {
    let mut d: Vec<Dec> = FUNCTIONS
        .iter()
        .map(|(name, spec)| match spec {
            Some(s) => Dec::Toks(
                s.split_whitespace()
                    .map(|t| match t {
                        "i" | "r" => Tok::I,
                        "q" => Tok::Q,
                        "b" => Tok::B,
                        "h" => Tok::H,
                        "A" => Tok::A,
                        "D" => Tok::D,
                        "B" => Tok::Bv,
                        "C" => Tok::C,
                        "A2" => Tok::A2,
                        "S" => Tok::S,
                        _ => panic!("layout token {t}"),
                    })
                    .collect(),
            ),
            None => match *name {
                "Gather" => Dec::Special(Special::Gather),
                "Gatherv" => Dec::Special(Special::Gatherv),
                "Scatter" => Dec::Special(Special::Scatter),
                "Scatterv" => Dec::Special(Special::Scatterv),
                "Type_struct" => Dec::Special(Special::TypeStruct),
                "Cart_get" => Dec::Special(Special::CartGet),
                "Init" => Dec::Special(Special::Init),
                "Init_thread" => Dec::Special(Special::InitThread),
                "Comm_spawn" => Dec::Special(Special::CommSpawn),
                "Comm_spawn_multiple" => Dec::Special(Special::CommSpawnMultiple),
                _ => Dec::None,
            },
        })
        .collect();
    d.push(Dec::None); // ALL_FUNCTIONS: not a record
    d.push(Dec::Toks(vec![Tok::Q])); // Function_enter
    d.push(Dec::Toks(vec![Tok::Q])); // Function_exit
    d
}

enum DErr {
    /// needs the data up to this position (relative to the buffer)
    Short(usize),
    Bad(String),
}

type R<T> = Result<T, DErr>;

struct Cur<'a> {
    b: &'a [u8],
    p: usize,
}

impl<'a> Cur<'a> {
    #[inline]
    fn need(&self, n: usize) -> R<()> {
        if self.p + n > self.b.len() {
            Err(DErr::Short(self.p + n))
        } else {
            Ok(())
        }
    }
    #[inline]
    fn i32(&mut self) -> R<i32> {
        self.need(4)?;
        let v = i32::from_be_bytes(self.b[self.p..self.p + 4].try_into().unwrap());
        self.p += 4;
        Ok(v)
    }
    #[inline]
    fn u16(&mut self) -> R<u16> {
        self.need(2)?;
        let v = u16::from_be_bytes([self.b[self.p], self.b[self.p + 1]]);
        self.p += 2;
        Ok(v)
    }
    #[inline]
    fn u8(&mut self) -> R<u8> {
        self.need(1)?;
        let v = self.b[self.p];
        self.p += 1;
        Ok(v)
    }
    #[inline]
    fn i64(&mut self) -> R<i64> {
        self.need(8)?;
        let v = i64::from_be_bytes(self.b[self.p..self.p + 8].try_into().unwrap());
        self.p += 8;
        Ok(v)
    }
    #[inline]
    fn count(&mut self, elem: usize) -> R<usize> {
        let c = self.i32()?;
        if c < 0 {
            return Err(DErr::Bad(format!("negative array length {c}")));
        }
        let c = c as usize;
        self.need(c * elem)?;
        Ok(c)
    }
}

struct Version {
    status_tag: bool,
    status_size: usize,
    old_struct: bool,
    old_cart_get: bool,
    double_argc: bool,
}

impl Version {
    fn new(v: (u8, u8, u8)) -> Version {
        let status_tag = v >= (0, 6, 3);
        Version {
            status_tag,
            status_size: if status_tag { 14 } else { 10 },
            old_struct: v < (0, 6, 9),
            old_cart_get: v < (0, 6, 8),
            double_argc: v < (0, 6, 2),
        }
    }
}

/// One decoded record.
pub struct Record {
    pub idx: u64,
    /// byte offset of the record in the file
    pub offset: u64,
    pub fid: u16,
    /// call start and end, ns since the epoch (wall clock; CPU clock without wall times)
    pub t0: Option<i64>,
    pub t1: Option<i64>,
}

/// What the caller knows about a rank's file (from the Python reader's section parse).
#[derive(Clone, Debug)]
pub struct RankFile {
    pub path: String,
    pub rank: u32,
    pub body_off: u64,
    /// where END_OF_STREAM sits (the header follows it)
    pub stream_end: u64,
    pub version: (u8, u8, u8),
    pub type_sizes: Vec<i64>,
}

/// Streaming decoder of one rank's records: holds one chunk of the file (64 KiB, more only for a
/// record larger than that) and reopens the file to read the next, so that thousands of ranks
/// need neither memory nor file descriptors in proportion.
pub struct RankStream {
    pub f: RankFile,
    file_size: u64,
    buf: Vec<u8>,
    /// file offset of buf[0]
    base: u64,
    /// next record's position in buf
    pos: usize,
    limit: u64,
    decs: std::rc::Rc<Vec<Dec>>,
    ver: Version,
    cpu_off: i64,
    wall_off: i64,
    cpu_base: i64,
    wall_base: i64,
    cpu_last: Option<i64>,
    wall_last: Option<i64>,
    pub idx: u64,
    pub done: bool,
    pub args: Args,
    chunk: usize,
}

pub fn where_(path: &str, rank: u32, idx: u64, off: u64) -> String {
    format!("{path}: rank {rank}, record {idx} (byte offset {off})")
}

thread_local! {
    static DECODERS: std::rc::Rc<Vec<Dec>> = std::rc::Rc::new(decoders());
}

impl RankStream {
    /// `chunk`: bytes read at a time (the bound of this rank's buffer, but for a larger record).
    pub fn open(f: RankFile, chunk: usize) -> Result<RankStream, String> {
        let meta = std::fs::metadata(&f.path).map_err(|e| format!("{}: rank {}: cannot read ({e}) (before record 0)", f.path, f.rank))?;
        let file_size = meta.len();
        let ver = Version::new(f.version);
        let limit = f.stream_end + 2;
        let mut s = RankStream {
            file_size,
            buf: Vec::new(),
            base: f.body_off,
            pos: 0,
            limit,
            decs: DECODERS.with(|d| d.clone()),
            ver,
            cpu_off: 0,
            wall_off: 0,
            cpu_base: 0,
            wall_base: 0,
            cpu_last: None,
            wall_last: None,
            idx: 0,
            done: false,
            args: Args::default(),
            chunk,
            f,
        };
        s.fill(8)?;
        let pos = s.f.body_off;
        if pos + 8 > limit || s.buf.len() < 8 {
            return Err(format!("{}: record stream cut before its time offsets", where_(&s.f.path, s.f.rank, 0, pos)));
        }
        s.cpu_off = i32::from_be_bytes(s.buf[0..4].try_into().unwrap()) as i64;
        s.wall_off = i32::from_be_bytes(s.buf[4..8].try_into().unwrap()) as i64;
        s.pos = 8;
        Ok(s)
    }

    /// Keeps buf[pos..] and reads more, so that at least `want` bytes from pos are held when the
    /// file has them.
    fn fill(&mut self, want: usize) -> Result<(), String> {
        let keep = self.buf.len() - self.pos;
        self.buf.drain(..self.pos);
        self.base += self.pos as u64;
        self.pos = 0;
        let avail = self.file_size.saturating_sub(self.base) as usize;
        let target = want.max(self.chunk).max(keep).min(avail);
        if target <= keep {
            return Ok(());
        }
        let err = |e: std::io::Error| format!("{}: rank {}: cannot read ({e}) (byte offset {})", self.f.path, self.f.rank, self.base);
        let mut file = File::open(&self.f.path).map_err(err)?;
        file.seek(SeekFrom::Start(self.base + keep as u64)).map_err(err)?;
        self.buf.resize(target, 0);
        file.read_exact(&mut self.buf[keep..target]).map_err(err)?;
        Ok(())
    }

    /// Decodes the next record into `self.args`; `Ok(None)` at END_OF_STREAM.
    pub fn next(&mut self) -> Result<Option<Record>, String> {
        if self.done {
            return Ok(None);
        }
        loop {
            match self.try_next() {
                Ok(r) => return Ok(r),
                Err((DErr::Short(want), pos)) if self.base + want as u64 <= self.file_size => {
                    // the record continues past the chunk: read more and decode it again
                    self.fill(want - pos + 16)?;
                }
                Err((e, pos)) => return Err(self.error(e, pos)),
            }
        }
    }

    fn error(&self, e: DErr, pos: usize) -> String {
        if pos == usize::MAX {
            if let DErr::Bad(m) = e {
                return m;
            }
        }
        let off = self.base + pos as u64;
        let fid = if pos + 2 <= self.buf.len() { u16::from_be_bytes([self.buf[pos], self.buf[pos + 1]]) } else { 0 };
        let w = where_(&self.f.path, self.f.rank, self.idx, off);
        match e {
            DErr::Short(_) => format!("{w}: file truncated inside record {} ({}; file has {} bytes)", self.idx, call(fid), self.file_size),
            DErr::Bad(m) => format!("{w}: corrupt {} record ({m})", call(fid)),
        }
    }

    fn try_next(&mut self) -> Result<Option<Record>, (DErr, usize)> {
        let pos = self.pos;
        let off = self.base + pos as u64;
        let limit = self.limit;
        let fail = |m: String| -> (DErr, usize) { (DErr::Bad(m), usize::MAX) };
        let w = || where_(&self.f.path, self.f.rank, self.idx, off);
        if off + 2 > limit {
            return Err(fail(format!("{}: file truncated: record stream ends without its end-of-stream mark (file has {} bytes)", w(), self.file_size)));
        }
        if pos + 3 > self.buf.len() {
            if pos + 2 > self.buf.len() {
                return Err((DErr::Short(pos + 2), pos));
            }
        }
        let fid = u16::from_be_bytes([self.buf[pos], self.buf[pos + 1]]);
        if fid == END_OF_STREAM {
            if off != self.f.stream_end {
                return Err(fail(format!("{}: end-of-stream mark found at byte offset {off} but the header starts at {}", w(), self.f.stream_end + 2)));
            }
            self.done = true;
            return Ok(None);
        }
        if off + 3 > limit {
            return Err(fail(format!("{}: file truncated inside record {}", w(), self.idx)));
        }
        if pos + 3 > self.buf.len() {
            return Err((DErr::Short(pos + 3), pos));
        }
        let decs = self.decs.clone();
        let dec = if fid < END_OF_STREAM { &decs[fid as usize] } else { &Dec::None };
        if let Dec::None = dec {
            let what = if fid < ALL_FUNCTIONS { format!("{} has no DUMPI record layout", call(fid)) } else { format!("unknown DUMPI function id {fid}") };
            return Err(fail(format!("{}: {what}", w())));
        }
        let mask = self.buf[pos + 2];
        // the prefix must end inside the stream
        let mut psize = 0usize;
        if mask & THREAD_BIT != 0 {
            psize += 2;
        }
        if mask & CPU_BIT != 0 {
            psize += 12;
        }
        if mask & WALL_BIT != 0 {
            psize += 12;
        }
        let short_msg = || format!("{}: file truncated inside record {} ({}; file has {} bytes)", w(), self.idx, call(fid), self.file_size);
        if psize > 0 && off + 3 + psize as u64 > limit {
            return Err(fail(short_msg()));
        }
        let mut c = Cur { b: &self.buf, p: pos + 3 };
        let sh = |e: DErr| (e, pos);
        if mask & THREAD_BIT != 0 {
            c.u16().map_err(sh)?;
        }
        let mut t0 = None;
        let mut t1 = None;
        let (mut cpu_base, mut wall_base, mut cpu_last, mut wall_last) = (self.cpu_base, self.wall_base, self.cpu_last, self.wall_last);
        if mask & CPU_BIT != 0 {
            let s0 = c.u16().map_err(sh)? as i64;
            let ns0 = c.i32().map_err(sh)? as u32 as i64;
            let s1 = c.u16().map_err(sh)? as i64;
            let ns1 = c.i32().map_err(sh)? as u32 as i64;
            let mut full = self.cpu_off + s0 + cpu_base;
            if let Some(l) = cpu_last {
                if full < l - WRAP_SLACK {
                    cpu_base += 65536;
                    full += 65536;
                }
            }
            let mut full1 = self.cpu_off + s1 + cpu_base;
            if full1 < full - WRAP_SLACK {
                cpu_base += 65536;
                full1 += 65536;
            }
            cpu_last = Some(full1);
            t0 = Some(full * 1_000_000_000 + ns0);
            t1 = Some(full1 * 1_000_000_000 + ns1);
        }
        if mask & WALL_BIT != 0 {
            let s0 = c.u16().map_err(sh)? as i64;
            let ns0 = c.i32().map_err(sh)? as u32 as i64;
            let s1 = c.u16().map_err(sh)? as i64;
            let ns1 = c.i32().map_err(sh)? as u32 as i64;
            let mut full = self.wall_off + s0 + wall_base;
            if let Some(l) = wall_last {
                if full < l - WRAP_SLACK {
                    wall_base += 65536;
                    full += 65536;
                }
            }
            let mut full1 = self.wall_off + s1 + wall_base;
            if full1 < full - WRAP_SLACK {
                wall_base += 65536;
                full1 += 65536;
            }
            wall_last = Some(full1);
            t0 = Some(full * 1_000_000_000 + ns0);
            t1 = Some(full1 * 1_000_000_000 + ns1);
        }
        if mask & PERF_BIT != 0 {
            if self.base + c.p as u64 + 1 > limit {
                return Err(fail(short_msg()));
            }
            let n = c.u8().map_err(sh)? as usize;
            c.p += 16 * n;
        }
        self.args.clear();
        decode_args(dec, &mut c, mask, &self.ver, &mut self.args).map_err(sh)?;
        if self.base + c.p as u64 > limit {
            return Err(fail(format!("{}: {} record runs past the end of the record stream (byte offset {limit})", w(), call(fid))));
        }
        let p = c.p;
        self.cpu_base = cpu_base;
        self.wall_base = wall_base;
        self.cpu_last = cpu_last;
        self.wall_last = wall_last;
        let rec = Record { idx: self.idx, offset: off, fid, t0, t1 };
        self.pos = p;
        self.idx += 1;
        Ok(Some(rec))
    }
}

fn push_arr_i32(c: &mut Cur, a: &mut Args) -> R<()> {
    let n = c.count(4)?;
    let s = a.pool.len() as u32;
    for _ in 0..n {
        let v = c.i32()? as i64;
        a.pool.push(v);
    }
    a.v.push(Val::Arr(s, n as u32));
    Ok(())
}

fn push_arr_u16(c: &mut Cur, a: &mut Args) -> R<()> {
    let n = c.count(2)?;
    let s = a.pool.len() as u32;
    for _ in 0..n {
        let v = c.u16()? as i64;
        a.pool.push(v);
    }
    a.v.push(Val::Arr(s, n as u32));
    Ok(())
}

fn skip_arr(c: &mut Cur, elem: usize) -> R<()> {
    let n = c.count(elem)?;
    c.p += n * elem;
    Ok(())
}

fn read_chars(c: &mut Cur, a: &mut Args) -> R<()> {
    let n = c.count(1)?;
    let bytes = &c.b[c.p..c.p + n];
    let end = bytes.iter().position(|&x| x == 0).unwrap_or(n);
    let s = a.text.len() as u32;
    a.text.extend_from_slice(&bytes[..end]);
    a.strs.push((s, a.text.len() as u32));
    c.p += n;
    Ok(())
}

fn push_chars(c: &mut Cur, a: &mut Args) -> R<()> {
    let s = a.strs.len() as u32;
    read_chars(c, a)?;
    a.v.push(Val::Strs(s, 1, 1));
    Ok(())
}

fn skip_chars2(c: &mut Cur, a: &mut Args) -> R<()> {
    let n = c.count(4)?;
    for _ in 0..n {
        read_chars(c, a)?;
    }
    Ok(())
}

fn decode_args(dec: &Dec, c: &mut Cur, mask: u8, ver: &Version, a: &mut Args) -> R<()> {
    match dec {
        Dec::None => Ok(()),
        Dec::Toks(toks) => {
            for t in toks {
                match t {
                    Tok::I => {
                        let v = c.i32()? as i64;
                        a.v.push(Val::Int(v));
                    }
                    Tok::Q => {
                        let v = c.i64()?;
                        a.v.push(Val::Int(v));
                    }
                    Tok::B => {
                        let v = c.u8()? as i64;
                        a.v.push(Val::Int(v));
                    }
                    Tok::H => {
                        let v = c.u16()? as i64;
                        a.v.push(Val::Int(v));
                    }
                    Tok::A => push_arr_i32(c, a)?,
                    Tok::D => push_arr_u16(c, a)?,
                    Tok::Bv => {
                        let n = c.count(1)?;
                        let s = a.pool.len() as u32;
                        for _ in 0..n {
                            let v = c.u8()? as i64;
                            a.pool.push(v);
                        }
                        a.v.push(Val::Arr(s, n as u32));
                    }
                    Tok::C => push_chars(c, a)?,
                    Tok::A2 => {
                        let n = c.count(4)?;
                        let s = a.pool.len() as u32;
                        for _ in 0..n {
                            let m = c.count(4)?;
                            a.pool.push(m as i64);
                            for _ in 0..m {
                                let v = c.i32()? as i64;
                                a.pool.push(v);
                            }
                        }
                        a.v.push(Val::Arr2(s, n as u32));
                    }
                    Tok::S => {
                        if mask & STATUS_BITS == 0 {
                            a.v.push(Val::NoSts);
                            continue;
                        }
                        let n = c.count(ver.status_size)?;
                        let s = a.sts.len() as u32;
                        for _ in 0..n {
                            let st = c.p;
                            let nb = c.i32()?;
                            let src = c.i32()?;
                            let tag = if ver.status_tag {
                                c.p = st + 10;
                                c.i32()?
                            } else {
                                -1
                            };
                            c.p = st + ver.status_size;
                            a.sts.push([nb, src, tag]);
                        }
                        a.v.push(Val::Sts(s, n as u32));
                    }
                }
            }
            Ok(())
        }
        Dec::Special(sp) => decode_special(*sp, c, ver, a),
    }
}

fn int(a: &mut Args, v: i64) {
    a.v.push(Val::Int(v));
}

fn decode_special(sp: Special, c: &mut Cur, ver: &Version, a: &mut Args) -> R<()> {
    match sp {
        Special::Gather | Special::Scatter => {
            // Gather: commrank, sendcount, sendtype, root, comm [, recvcount, recvtype at the root]
            // Scatter: commrank, recvcount, recvtype, root, comm [, sendcount, sendtype at the root]
            let commrank = c.i32()? as i64;
            let cnt = c.i32()? as i64;
            let ty = c.u16()? as i64;
            let root = c.i32()? as i64;
            let comm = c.u16()? as i64;
            for v in [commrank, cnt, ty, root, comm] {
                int(a, v);
            }
            if commrank == root {
                let c2 = c.i32()? as i64;
                let t2 = c.u16()? as i64;
                int(a, c2);
                int(a, t2);
            } else {
                a.v.push(Val::None);
                a.v.push(Val::None);
            }
        }
        Special::Gatherv => {
            let commrank = c.i32()? as i64;
            let commsize = c.i32()? as i64;
            let scount = c.i32()? as i64;
            let stype = c.u16()? as i64;
            let root = c.i32()? as i64;
            let comm = c.u16()? as i64;
            for v in [commrank, commsize, scount, stype, root, comm] {
                int(a, v);
            }
            if commrank == root {
                push_arr_i32(c, a)?;
                skip_arr(c, 4)?;
            } else {
                a.v.push(Val::None);
            }
            let rtype = c.u16()? as i64;
            int(a, rtype);
        }
        Special::Scatterv => {
            let commrank = c.i32()? as i64;
            let commsize = c.i32()? as i64;
            let stype = c.u16()? as i64;
            let rcount = c.i32()? as i64;
            let rtype = c.u16()? as i64;
            let root = c.i32()? as i64;
            let comm = c.u16()? as i64;
            for v in [commrank, commsize, stype, rcount, rtype, root, comm] {
                int(a, v);
            }
            if commrank == root {
                push_arr_i32(c, a)?;
                skip_arr(c, 4)?;
            } else {
                a.v.push(Val::None);
            }
        }
        Special::CommSpawn => {
            let oldrank = c.i32()? as i64;
            let root = c.i32()? as i64;
            let oldcomm = c.u16()? as i64;
            let newcomm = c.u16()? as i64;
            if oldrank == root {
                let mut scratch = Args::default();
                read_chars(c, &mut scratch)?;
                skip_chars2(c, &mut scratch)?;
                c.i32()?;
                c.u16()?;
                skip_arr(c, 4)?;
            }
            for v in [oldrank, root, oldcomm, newcomm] {
                int(a, v);
            }
        }
        Special::CommSpawnMultiple => {
            let totprocs = c.i32()? as i64;
            let oldrank = c.i32()? as i64;
            let root = c.i32()? as i64;
            let oldcomm = c.u16()? as i64;
            let newcomm = c.u16()? as i64;
            if oldrank == root {
                let mut scratch = Args::default();
                c.i32()?;
                skip_chars2(c, &mut scratch)?;
                let n = c.count(4)?;
                for _ in 0..n {
                    skip_chars2(c, &mut scratch)?;
                }
                skip_arr(c, 4)?;
                skip_arr(c, 2)?;
                skip_arr(c, 4)?;
            }
            for v in [totprocs, oldrank, root, oldcomm, newcomm] {
                int(a, v);
            }
        }
        Special::TypeStruct => {
            let count = c.i32()? as i64;
            int(a, count);
            push_arr_i32(c, a)?;
            if ver.old_struct {
                c.i32()?;
                a.v.push(Val::None);
            } else {
                push_arr_i32(c, a)?;
            }
            push_arr_u16(c, a)?;
            let newtype = c.u16()? as i64;
            int(a, newtype);
        }
        Special::CartGet => {
            let ndim = c.i32()? as i64;
            let comm = c.u16()? as i64;
            let maxdims = c.i32()? as i64;
            for v in [ndim, comm, maxdims] {
                int(a, v);
            }
            push_arr_i32(c, a)?;
            push_arr_i32(c, a)?;
            if ver.old_cart_get {
                c.i32()?;
            } else {
                skip_arr(c, 4)?;
            }
        }
        Special::Init | Special::InitThread => {
            let argc = c.i32()?;
            if sp == Special::Init && ver.double_argc {
                c.i32()?;
            }
            if argc < 0 {
                return Err(DErr::Bad(format!("negative argc {argc}")));
            }
            int(a, argc as i64);
            let s = a.strs.len() as u32;
            for _ in 0..argc {
                read_chars(c, a)?;
            }
            a.v.push(Val::Strs(s, argc as u32, 2));
            if sp == Special::InitThread {
                let req = c.u8()? as i64;
                let prov = c.u8()? as i64;
                int(a, req);
                int(a, prov);
            }
        }
    }
    Ok(())
}
