//! The fast hasher of the conversion tables (request and communicator handles, matching keys):
//! the simulator's own `g2g_engine::FxHasher` (rustc's multiply-rotate hash).  Keys come from the
//! trace file, not from an adversary across a network, so SipHash's protection buys nothing here.

use std::hash::BuildHasherDefault;

pub use g2g_engine::FxHasher;

pub type FxBuild = BuildHasherDefault<FxHasher>;
pub type FxHashMap<K, V> = std::collections::HashMap<K, V, FxBuild>;
pub type FxHashSet<K> = std::collections::HashSet<K, FxBuild>;
