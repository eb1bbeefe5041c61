//! Barrier and the rooted collectives: Bcast, Reduce, Gather(v), Scatter(v).

use super::{effective_segment, Ctx};
use crate::util::{
    bino_children_asc, bino_children_desc, bino_parent, bino_subtree, real, recv_round, send_round, sendrecv_round,
    step, virt, Blocks,
};
use crate::{Algo, CollArgs, CollError, CollKind, Round};

// ---------------------------------------------------------------------------------------------
// Barrier
// ---------------------------------------------------------------------------------------------

/// Dissemination (MPICH; Open MPI's "bruck" barrier): round k sends 0 bytes to (r + 2^k) mod p and
/// receives from (r - 2^k) mod p; ceil(log2 p) rounds.  Linear (Open MPI basic): everyone sends to
/// rank 0, which then releases everyone.
pub(crate) fn barrier(algo: Algo, c: &Ctx) -> Vec<Round> {
    let (p, r) = (c.p, c.r);
    match algo {
        Algo::Linear => {
            if r == 0 {
                let others = 1..p;
                vec![
                    Round { recvs: others.clone().map(|i| step(i as u32, 0)).collect(), ..Round::default() },
                    Round { sends: others.map(|i| step(i as u32, 0)).collect(), ..Round::default() },
                ]
            } else {
                vec![send_round(0, 0), recv_round(0, 0, 0)]
            }
        }
        _ => {
            let mut rounds = Vec::with_capacity(crate::util::ceil_log2(p) as usize);
            let mut d = 1u64;
            while d < p {
                rounds.push(sendrecv_round(((r + d) % p) as u32, 0, ((r + p - d) % p) as u32, 0, 0));
                d <<= 1;
            }
            rounds
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Generic trees for the pipelined algorithms
// ---------------------------------------------------------------------------------------------

/// A node of a tree in real ranks.
struct Node {
    parent: Option<u32>,
    children: Vec<u32>,
}

/// The chain root -> v1 -> v2 -> ... (Open MPI "pipeline": a chain of fan-out 1).
fn chain_node(c: &Ctx) -> Node {
    let v = virt(c.r, c.root, c.p);
    Node {
        parent: (v > 0).then(|| real(v - 1, c.root, c.p)),
        children: if v + 1 < c.p { vec![real(v + 1, c.root, c.p)] } else { Vec::new() },
    }
}

/// The binomial tree; children in `asc` (smallest subtree first) or descending order.
fn binomial_node(c: &Ctx, asc: bool) -> Node {
    let v = virt(c.r, c.root, c.p);
    let children = if asc {
        bino_children_asc(v, c.p).map(|x| real(x, c.root, c.p)).collect()
    } else {
        bino_children_desc(v, c.p).map(|x| real(x, c.root, c.p)).collect()
    };
    Node { parent: bino_parent(v).map(|x| real(x, c.root, c.p)), children }
}

fn seg_size(n: u64, seg: u64, s: u64) -> u64 {
    seg.min(n - s * seg)
}

/// Segmented broadcast down a tree (Open MPI's generic tree bcast): segment s is received in round s
/// and forwarded to all children (concurrently) in round s + 1, overlapping with the receive of
/// segment s + 1.
fn pipelined_bcast(node: &Node, n: u64, segment: u64) -> Vec<Round> {
    let seg = effective_segment(n, segment);
    let nseg = n.div_ceil(seg);
    let sends = |s: u64| node.children.iter().map(|&ch| step(ch, seg_size(n, seg, s))).collect();
    let mut rounds = Vec::with_capacity(nseg as usize + 1);
    match node.parent {
        None => {
            for s in 0..nseg {
                rounds.push(Round { sends: sends(s), ..Round::default() });
            }
        }
        Some(par) => {
            for s in 0..nseg {
                let mut round = recv_round(par, seg_size(n, seg, s), 0);
                if s > 0 {
                    round.sends = sends(s - 1);
                }
                rounds.push(round);
            }
            if !node.children.is_empty() {
                rounds.push(Round { sends: sends(nseg - 1), ..Round::default() });
            }
        }
    }
    rounds
}

/// Segmented reduction up a tree (Open MPI's generic tree reduce): in round s a node receives segment
/// s from all its children and sends the already-combined segment s - 1 to its parent; then it
/// combines segment s (one combine per child).
fn pipelined_reduce(node: &Node, n: u64, segment: u64) -> Vec<Round> {
    let seg = effective_segment(n, segment);
    let nseg = n.div_ceil(seg);
    let mut rounds = Vec::with_capacity(nseg as usize + 1);
    if node.children.is_empty() {
        if let Some(par) = node.parent {
            for s in 0..nseg {
                rounds.push(send_round(par, seg_size(n, seg, s)));
            }
        }
        return rounds;
    }
    let k = node.children.len() as u64;
    for s in 0..nseg {
        let sz = seg_size(n, seg, s);
        let mut round = Round {
            recvs: node.children.iter().map(|&ch| step(ch, sz)).collect(),
            reduce_bytes: sz.saturating_mul(k),
            ..Round::default()
        };
        if let (Some(par), true) = (node.parent, s > 0) {
            round.sends.push(step(par, seg_size(n, seg, s - 1)));
        }
        rounds.push(round);
    }
    if let Some(par) = node.parent {
        rounds.push(send_round(par, seg_size(n, seg, nseg - 1)));
    }
    rounds
}

// ---------------------------------------------------------------------------------------------
// Bcast
// ---------------------------------------------------------------------------------------------

/// Bcast of `n` bytes.
/// * linear: the root posts sends to everyone in one round.
/// * binomial (MPICH): receive from the parent, then send to each child in its own round, largest
///   subtree first; ceil(log2 p) rounds at the root.
/// * pipeline / pipelined_binomial: segmented chain / binomial tree ([`pipelined_bcast`]).
/// * scatter_allgather (MPICH long messages): the buffer is cut into p chunks of ceil(n/p) bytes
///   (virtual rank v owns chunk v); binomial scatter of the chunks (empty messages skipped, as MPICH
///   does), then a ring allgather of p - 1 steps.
/// * scatter_rd_allgather (MPICH medium messages, power-of-two p): same scatter, then recursive
///   doubling allgather (log2 p steps).
pub(crate) fn bcast(algo: Algo, c: &Ctx, n: u64) -> Vec<Round> {
    if n == 0 {
        return Vec::new();
    }
    let (p, root) = (c.p, c.root);
    let v = virt(c.r, root, p);
    match algo {
        Algo::Linear => {
            if v == 0 {
                vec![Round { sends: (1..p).map(|x| step(real(x, root, p), n)).collect(), ..Round::default() }]
            } else {
                vec![recv_round(root as u32, n, 0)]
            }
        }
        Algo::PipelinedChain { segment } => pipelined_bcast(&chain_node(c), n, segment),
        Algo::PipelinedBinomial { segment } => pipelined_bcast(&binomial_node(c, false), n, segment),
        Algo::ScatterAllgather | Algo::ScatterRdAllgather => {
            let chunks = Blocks::Chunked { total: n, chunk: n.div_ceil(p) };
            let mut rounds = Vec::new();
            if let Some(par) = bino_parent(v) {
                let sz = chunks.sum(v, v + bino_subtree(v, p));
                if sz > 0 {
                    rounds.push(recv_round(real(par, root, p), sz, 0));
                }
            }
            for ch in bino_children_desc(v, p) {
                let sz = chunks.sum(ch, ch + bino_subtree(ch, p));
                if sz > 0 {
                    rounds.push(send_round(real(ch, root, p), sz));
                }
            }
            if algo == Algo::ScatterAllgather {
                let (right, left) = (real((v + 1) % p, root, p), real((v + p - 1) % p, root, p));
                for k in 0..p - 1 {
                    let send_chunk = (v + p - k) % p;
                    let recv_chunk = (v + 2 * p - k - 1) % p;
                    rounds.push(sendrecv_round(right, chunks.get(send_chunk), left, chunks.get(recv_chunk), 0));
                }
            } else {
                let mut d = 1u64;
                while d < p {
                    let partner = v ^ d;
                    let mine = v & !(d - 1);
                    let theirs = partner & !(d - 1);
                    let to = real(partner, root, p);
                    rounds.push(sendrecv_round(to, chunks.sum(mine, mine + d), to, chunks.sum(theirs, theirs + d), 0));
                    d <<= 1;
                }
            }
            rounds
        }
        // Binomial (and the default).
        _ => {
            let mut rounds = Vec::new();
            if let Some(par) = bino_parent(v) {
                rounds.push(recv_round(real(par, root, p), n, 0));
            }
            for ch in bino_children_desc(v, p) {
                rounds.push(send_round(real(ch, root, p), n));
            }
            rounds
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reduce
// ---------------------------------------------------------------------------------------------

/// Reduce of an `n`-byte vector.  The receiving side combines what it received (`reduce_bytes`).
/// * linear (Open MPI basic): the root receives from everyone in one round, then combines
///   (p - 1) * n bytes.
/// * binomial (MPICH/Open MPI): receive from each child in its own round, smallest subtree first,
///   combining n bytes after each; then send to the parent.
/// * pipeline / pipelined_binomial: segmented chain / binomial tree ([`pipelined_reduce`]).
pub(crate) fn reduce(algo: Algo, c: &Ctx, n: u64) -> Vec<Round> {
    if n == 0 {
        return Vec::new();
    }
    let (p, root) = (c.p, c.root);
    let v = virt(c.r, root, p);
    match algo {
        Algo::Linear => {
            if v == 0 {
                vec![Round {
                    recvs: (1..p).map(|x| step(real(x, root, p), n)).collect(),
                    reduce_bytes: (p - 1).saturating_mul(n),
                    ..Round::default()
                }]
            } else {
                vec![send_round(root as u32, n)]
            }
        }
        Algo::PipelinedChain { segment } => pipelined_reduce(&chain_node(c), n, segment),
        Algo::PipelinedBinomial { segment } => pipelined_reduce(&binomial_node(c, true), n, segment),
        _ => binomial_reduce(c, n),
    }
}

/// Binomial reduce (also the first half of reduce_bcast / reduce_scatterv).
pub(crate) fn binomial_reduce(c: &Ctx, n: u64) -> Vec<Round> {
    let (p, root) = (c.p, c.root);
    let v = virt(c.r, root, p);
    let mut rounds = Vec::new();
    for ch in bino_children_asc(v, p) {
        rounds.push(recv_round(real(ch, root, p), n, n));
    }
    if let Some(par) = bino_parent(v) {
        rounds.push(send_round(real(par, root, p), n));
    }
    rounds
}

/// Binomial bcast (also the second half of reduce_bcast).
pub(crate) fn binomial_bcast(c: &Ctx, n: u64) -> Vec<Round> {
    bcast(Algo::Binomial, c, n)
}

// ---------------------------------------------------------------------------------------------
// Gather(v) / Scatter(v)
// ---------------------------------------------------------------------------------------------

/// Per-rank block sizes of a Gather(v)/Scatter(v) and this rank's own block.
struct RootedBlocks<'a> {
    blocks: Blocks<'a>,
    /// false when only the own block is known (v-collective at a non-root without counts)
    complete: bool,
    own: u64,
}

fn rooted_blocks<'a>(args: &CollArgs<'a>, c: &Ctx) -> RootedBlocks<'a> {
    let p = c.p;
    let is_root = c.r == c.root;
    match args.kind {
        CollKind::Gather | CollKind::Scatter => {
            // Gather: bytes = contribution, recv_bytes (root) = total.
            // Scatter: recv_bytes = part, bytes (root) = total.
            let (mine, total) = if args.kind == CollKind::Gather {
                (args.bytes, args.recv_bytes)
            } else {
                (args.recv_bytes, args.bytes)
            };
            let b = if mine > 0 { mine } else { total / p };
            RootedBlocks { blocks: Blocks::Uniform { size: b }, complete: true, own: b }
        }
        _ => {
            // Gatherv: recv_counts (root), own = bytes.  Scatterv: counts (root), own = recv_bytes.
            let (counts, mine, total) = if args.kind == CollKind::Gatherv {
                (args.recv_counts, args.bytes, args.recv_bytes)
            } else {
                (args.counts, args.recv_bytes, args.bytes)
            };
            match counts {
                // Counts win over the own size so that every rank agrees with the root.
                Some(cs) => RootedBlocks { blocks: Blocks::Counts(cs), complete: true, own: cs[c.r as usize] },
                None if is_root => {
                    let blocks = Blocks::Even { total, n: p };
                    RootedBlocks { blocks, complete: true, own: blocks.get(c.r) }
                }
                None => RootedBlocks { blocks: Blocks::Uniform { size: mine }, complete: false, own: mine },
            }
        }
    }
}

fn needs_counts_error(args: &CollArgs) -> CollError {
    let field = if args.kind == CollKind::Gatherv { "recv_counts" } else { "counts" };
    CollError(format!(
        "binomial {} needs {field} at every rank (rank {} has none; traces carry them only at the \
         root); use linear",
        args.kind.name(),
        args.rank
    ))
}

/// Gather / Gatherv.
/// * linear: the root receives from everyone in one round.
/// * linear_sequential (Open MPI basic linear): one blocking receive per round, in rank order.
/// * binomial (MPICH; Open MPI for small blocks): receive each child's whole subtree (smallest
///   subtree first, one round each), then send the own subtree's data to the parent.
pub(crate) fn gather(algo: Algo, c: &Ctx, args: &CollArgs) -> Result<Vec<Round>, CollError> {
    let (p, root) = (c.p, c.root);
    let rb = rooted_blocks(args, c);
    if args.kind == CollKind::Gather && rb.own == 0 {
        return Ok(Vec::new());
    }
    let v = virt(c.r, root, p);
    match algo {
        Algo::Binomial => {
            if !rb.complete {
                return Err(needs_counts_error(args));
            }
            let mut rounds = Vec::new();
            for ch in bino_children_asc(v, p) {
                let sz = rb.blocks.sum_virt(ch, ch + bino_subtree(ch, p), root, p);
                rounds.push(recv_round(real(ch, root, p), sz, 0));
            }
            if let Some(par) = bino_parent(v) {
                let sz = rb.blocks.sum_virt(v, v + bino_subtree(v, p), root, p);
                rounds.push(send_round(real(par, root, p), sz));
            }
            Ok(rounds)
        }
        Algo::LinearSequential => {
            if v == 0 {
                // Open MPI basic linear: blocking receives in rank order
                Ok((0..p as u32)
                    .filter(|&r| r != root as u32)
                    .map(|r| Round { recvs: smallvec::smallvec![step(r, rb.blocks.get(r as u64))], ..Round::default() })
                    .collect())
            } else {
                Ok(vec![send_round(root as u32, rb.own)])
            }
        }
        _ => {
            if v == 0 {
                Ok(vec![Round {
                    recvs: (1..p)
                        .map(|x| {
                            let r = real(x, root, p);
                            step(r, rb.blocks.get(r as u64))
                        })
                        .collect(),
                    ..Round::default()
                }])
            } else {
                Ok(vec![send_round(root as u32, rb.own)])
            }
        }
    }
}

/// Scatter / Scatterv: the mirror image of [`gather`].
/// * linear: the root sends to everyone in one round.
/// * linear_sequential (Open MPI basic linear): one blocking send per round, in rank order.
/// * binomial (MPICH; Open MPI for small blocks on more than 10 ranks): receive the own subtree's
///   data from the parent, then send each child its subtree's data, largest subtree first.
pub(crate) fn scatter(algo: Algo, c: &Ctx, args: &CollArgs) -> Result<Vec<Round>, CollError> {
    let (p, root) = (c.p, c.root);
    let rb = rooted_blocks(args, c);
    if args.kind == CollKind::Scatter && rb.own == 0 {
        return Ok(Vec::new());
    }
    let v = virt(c.r, root, p);
    match algo {
        Algo::Binomial => {
            if !rb.complete {
                return Err(needs_counts_error(args));
            }
            let mut rounds = Vec::new();
            if let Some(par) = bino_parent(v) {
                let sz = rb.blocks.sum_virt(v, v + bino_subtree(v, p), root, p);
                rounds.push(recv_round(real(par, root, p), sz, 0));
            }
            for ch in bino_children_desc(v, p) {
                let sz = rb.blocks.sum_virt(ch, ch + bino_subtree(ch, p), root, p);
                rounds.push(send_round(real(ch, root, p), sz));
            }
            Ok(rounds)
        }
        Algo::LinearSequential => {
            if v == 0 {
                // Open MPI basic linear: blocking sends in rank order
                Ok((0..p as u32)
                    .filter(|&r| r != root as u32)
                    .map(|r| Round { sends: smallvec::smallvec![step(r, rb.blocks.get(r as u64))], ..Round::default() })
                    .collect())
            } else {
                Ok(vec![recv_round(root as u32, rb.own, 0)])
            }
        }
        _ => {
            if v == 0 {
                Ok(vec![Round {
                    sends: (1..p)
                        .map(|x| {
                            let r = real(x, root, p);
                            step(r, rb.blocks.get(r as u64))
                        })
                        .collect(),
                    ..Round::default()
                }])
            } else {
                Ok(vec![recv_round(root as u32, rb.own, 0)])
            }
        }
    }
}
