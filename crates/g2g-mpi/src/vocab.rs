//! The replay's names that other layers list (the Python side through `_core.vocabulary()`,
//! command-line choices): the modes.  `Mode::parse`/`Mode::name` stay next to `Mode`; this is the
//! one list of them.
use crate::options::Mode;

impl Mode {
    /// Every mode, in the order the documentation and command lines list them.
    pub const ALL: [Mode; 3] = [Mode::AsTraced, Mode::HostCopy, Mode::GpuDirect];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_round_trips_through_its_name() {
        for m in Mode::ALL {
            assert_eq!(Mode::parse(m.name()), Some(m));
        }
        assert_eq!(Mode::parse("GPUDirect"), None);
    }
}
