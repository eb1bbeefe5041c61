//! Who is where: the communicators of the trace (comm rank -> world rank) and each rank's place on
//! the machine.
use g2g_engine::FxHashMap as HashMap;
use g2g_net::machine::Machine;
use g2g_net::paths::Endpoint;
use g2g_trace::CommDef;

/// A communicator, resolved: its members' world ranks and its size.
pub(crate) struct Comm {
    pub def: CommDef,
    pub size: u32,
}

pub(crate) struct World {
    pub nranks: u32,
    pub comms: HashMap<u32, Comm>,
    /// communicator 0 is MPI_COMM_WORLD with the identity rank map (the fast path of `world_of`)
    world_is_identity: bool,
}

impl World {
    /// The trace's communicators over `nranks` ranks; communicator 0 is MPI_COMM_WORLD unless the
    /// trace defines it.  Err: (a rank outside the trace, the message).
    pub fn new(nranks: u32, defs: &[CommDef]) -> Result<World, (u32, String)> {
        let mut comms: HashMap<u32, Comm> = HashMap::default();
        for c in defs {
            let size = c.size(nranks);
            if let Some(mem) = &c.members {
                if let Some(bad) = mem.iter().find(|&&w| w >= nranks) {
                    return Err((*bad, format!("communicator {} names rank {bad} outside the trace", c.id)));
                }
            }
            comms.insert(c.id, Comm { def: c.clone(), size });
        }
        if !comms.contains_key(&0) {
            comms
                .insert(0, Comm { def: CommDef { id: 0, name: "MPI_COMM_WORLD".into(), members: None }, size: nranks });
        }
        let world_is_identity = comms.get(&0).map(|c| c.def.members.is_none() && c.size == nranks).unwrap_or(false);
        Ok(World { nranks, comms, world_is_identity })
    }

    /// The world rank of `peer` in communicator `comm` (Err: what is wrong, for the caller to
    /// name the rank and event).
    #[inline]
    pub fn world_of(&self, comm: u32, peer: i32) -> Result<u32, String> {
        if comm == 0 && peer >= 0 && (peer as u32) < self.nranks && self.world_is_identity {
            return Ok(peer as u32);
        }
        let c = self.comm(comm)?;
        if peer < 0 || peer as u32 >= c.size {
            return Err(format!("peer {peer} is outside communicator {comm} (size {})", c.size));
        }
        Ok(c.def.world(peer as u32).unwrap())
    }

    pub fn comm(&self, comm: u32) -> Result<&Comm, String> {
        self.comms.get(&comm).ok_or_else(|| format!("communicator {comm} is not defined in the trace"))
    }
}

/// Where world rank `world` runs.
#[inline]
pub(crate) fn endpoint(m: &Machine, world: u32) -> Endpoint {
    Endpoint { node: m.place.node_of[world as usize], gpu: m.place.gpu_of[world as usize] }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn world_ranks_through_communicators() {
        let sub = CommDef { id: 3, name: "odd".into(), members: Some(vec![1, 3]) };
        let w = World::new(4, &[sub]).unwrap();
        assert_eq!(w.world_of(0, 2), Ok(2));
        assert_eq!(w.world_of(3, 1), Ok(3));
        assert!(w.world_of(3, 2).unwrap_err().contains("outside communicator 3"));
        assert!(w.world_of(7, 0).unwrap_err().contains("communicator 7 is not defined"));
        assert!(w.world_of(0, 4).is_err());
        let bad = CommDef { id: 1, name: "x".into(), members: Some(vec![0, 9]) };
        assert_eq!(World::new(4, &[bad]).err().map(|e| e.0), Some(9));
    }
}
