//! Goodput objectives (`--goodput 'ttft<200ms,tpot<50ms'`), as core reads and judges them for
//! every stream of tokens (`throng_core::stream`), applied to one answer's [`Figures`].

pub use throng_core::stream::{Figure, Goodput, GoodputError, Objective};

use crate::Figures;

impl Figures {
    /// Whether this answer meets every objective of `goodput` (see [`Goodput::passes`]).
    pub fn meets(&self, goodput: &Goodput) -> bool {
        goodput.passes(self.ttft, self.tpot, self.e2e)
    }
}
