//! The algorithms (helper fills in).
use crate::{Algo, CollArgs, CollError, Round};

pub fn schedule(algo: Algo, args: &CollArgs) -> Result<Vec<Round>, CollError> {
    let _ = (algo, args);
    unimplemented!("helper: algorithms")
}
