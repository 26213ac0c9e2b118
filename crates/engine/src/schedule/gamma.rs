//! Gamma steps for a schedule: the sampler, and the whole schedule's steps drawn in windows
//! that every shard draws alike (the parent module's doc says why).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::GOLDEN;

/// The units of `N` (arrivals of the whole schedule, on average) a gamma schedule draws from one
/// seed: a generator that fell behind draws at most this many steps to catch up (0.3 ms at 70 ns a
/// step; 16,384 held a debug build at -q 1e7 to 12,500 arrivals started a second, 4,096 to
/// 15,600, where Poisson's start is 18,600), and one gap in this many is drawn across a boundary
/// rather than as one step (of the same mean: the two parts, each a stationary process's rest of
/// a gap, add up to a length-biased gap on average).
pub(super) const WINDOW: f64 = 4_096.0;

/// The whole schedule's unit-mean gamma steps, of which a shard takes every `stride`-th.
#[derive(Debug)]
pub(super) struct GammaSteps {
    gamma: Gamma,
    seed: u64,
    rng: SmallRng,
    /// The window of `N` that `next` is in.
    pub(super) window: u64,
    /// The whole schedule's next position.
    pub(super) next: f64,
    /// Its number (counted from its window's start, `window · WINDOW`), whose remainder by
    /// `stride` says whose turn it is.
    turn: u64,
    shard: u64,
    stride: u64,
}

impl GammaSteps {
    /// The steps of shape `shape` drawn from `seed` (the plan's; without one, the shape's own
    /// seed alone), of which shard `shard` of `stride` takes its turns.
    pub(super) fn new(shape: f64, seed: Option<u64>, shard: u64, stride: u64) -> Self {
        let seed = 0x7468_726F_6E67 ^ shape.to_bits() ^ seed.map_or(0, mix);
        let mut g = GammaSteps {
            gamma: Gamma::new(shape),
            seed,
            rng: SmallRng::seed_from_u64(seed),
            window: 0,
            next: 0.0,
            turn: 0,
            shard,
            stride: stride.max(1),
        };
        g.enter(0);
        g
    }

    /// Starts drawing window `window` (or the first after it that has an arrival), from its own
    /// seed. Its first arrival comes where a stationary process's would: after a uniform part
    /// of a length-biased gap, that is of the gap a moment chosen at random falls in.
    pub(super) fn enter(&mut self, window: u64) {
        let mut w = window;
        loop {
            self.rng = SmallRng::seed_from_u64(self.seed ^ w.wrapping_mul(GOLDEN));
            let rest = unit(&mut self.rng) * self.gamma.length_biased(&mut self.rng);
            self.next = w as f64 * WINDOW + rest;
            if self.next < (w + 1) as f64 * WINDOW {
                break;
            }
            w += 1;
        }
        self.window = w;
        // Turns go on across windows as if each held exactly its expected count, so no shard
        // is always first in a window, and one past a window's count still gets its turns.
        self.turn = w.wrapping_mul(WINDOW as u64);
    }

    /// This shard's next position: the whole schedule's, drawn until it is this shard's turn.
    pub(super) fn next_own(&mut self) -> f64 {
        loop {
            let (at, turn) = (self.next, self.turn);
            self.next += self.gamma.step(&mut self.rng);
            self.turn += 1;
            if self.next >= (self.window + 1) as f64 * WINDOW {
                self.enter(self.window + 1);
            }
            if turn % self.stride == self.shard {
                return at;
            }
        }
    }
}

/// A seed spread over all 64 bits (SplitMix64's finalizer, a bijection), so that seeds near
/// one another, or near the windows' numbers, draw unrelated schedules.
fn mix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(GOLDEN);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Gamma variates by Marsaglia and Tsang's method ("A simple method for generating gamma
/// variables", 2000), valid for shapes of 1 and more; a shape `k` below 1 draws at `k + 1` and
/// multiplies by `U^(1/k)`, their boost for small shapes.
#[derive(Debug, Clone, Copy)]
struct Gamma {
    shape: f64,
    /// `a - 1/3` for the shape drawn at, `a` (`shape`, or `shape + 1` below 1).
    d: f64,
    /// `1 / sqrt(9 d)`.
    c: f64,
}

impl Gamma {
    fn new(shape: f64) -> Self {
        let a = if shape < 1.0 { shape + 1.0 } else { shape };
        let d = a - 1.0 / 3.0;
        Gamma {
            shape,
            d,
            c: 1.0 / (9.0 * d).sqrt(),
        }
    }

    /// A variate of shape `a` and scale 1.
    fn draw_at_least_one(&self, rng: &mut SmallRng) -> f64 {
        loop {
            let x = normal(rng);
            let v = 1.0 + self.c * x;
            if v <= 0.0 {
                continue;
            }
            let v = v * v * v;
            let u = unit(rng);
            // The squeeze accepts most draws without a logarithm.
            if u < 1.0 - 0.0331 * x * x * x * x
                || u.ln() < 0.5 * x * x + self.d * (1.0 - v + v.ln())
            {
                return self.d * v;
            }
        }
    }

    /// A gap with mean 1: a variate of the shape, over the shape.
    fn step(&self, rng: &mut SmallRng) -> f64 {
        let g = self.draw_at_least_one(rng);
        let g = match self.shape < 1.0 {
            true => g * unit(rng).powf(1.0 / self.shape),
            false => g,
        };
        g / self.shape
    }

    /// The gap that a moment chosen at random falls in: length-biased, so of shape `shape + 1`.
    fn length_biased(&self, rng: &mut SmallRng) -> f64 {
        Gamma::new(self.shape + 1.0).draw_at_least_one(rng) / self.shape
    }
}

/// A uniform variate in (0, 1], whose logarithm is finite.
pub(super) fn unit(rng: &mut SmallRng) -> f64 {
    1.0 - rng.random::<f64>()
}

/// A standard normal variate (Box and Muller).
fn normal(rng: &mut SmallRng) -> f64 {
    let (u, v) = (unit(rng), rng.random::<f64>());
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}
