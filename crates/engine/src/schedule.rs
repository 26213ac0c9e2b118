//! When open-loop arrivals are due.
//!
//! The arrival rate `r(t)` is constant or piecewise linear (stages). Its integral `N(t)` counts
//! the arrivals due by `t`. An evenly spaced schedule puts arrival `k` where `N(t) = k`; a Poisson
//! schedule puts arrivals at unit-mean exponential steps in `N`, a gamma schedule at unit-mean
//! gamma steps (the time-rescaling theorem), so all three follow a ramp exactly. A shard `i` of
//! `n` takes every `n`-th position starting at `i` (even) or steps of mean `n` (Poisson: the
//! shards' independent Poisson processes of rate `r/n` add up to one of rate `r`), so the shards
//! together make the whole schedule without talking to each other.
//!
//! Gamma steps cannot be split that way: independent gamma processes do not add up to a gamma
//! process (many of them add up to nearly Poisson, and the bursts are lost). So every shard draws
//! the whole schedule's steps from the same seed and takes its turn, every `n`-th arrival, and
//! the shards together make exactly one gamma process. The seed is the plan's (`--seed`), or
//! without one fixed by the shape, so the processes of a sharded run agree without a word, and
//! the same shape gives the same bursts in every run, as vLLM's benchmark does with its default
//! seed (its `--seed` draws others, as ours does). The schedule is drawn in windows of
//! `WINDOW` units of `N`, each from its own seed and starting as a stationary process would (its
//! first step the rest of a gap that began before it), so a generator that fell behind can skip
//! to the window it is in without drawing every step it passed, and still meet the other shards
//! there: within a window the gaps are exactly gamma, and only the one gap across each boundary
//! is drawn apart. Each shard draws every step, `r` draws a second: see `benches/scheduler.rs`.

use rand::rngs::SmallRng;
use rand::SeedableRng;
use throng_core::{stages, Arrivals, Rate};

mod gamma;
use gamma::{unit, GammaSteps, WINDOW};

#[derive(Debug, Clone, Copy)]
struct Segment {
    t0: f64,
    n0: f64,
    r0: f64,
    r1: f64,
    d: f64,
}

impl Segment {
    fn total(&self) -> f64 {
        (self.r0 + self.r1) * 0.5 * self.d
    }

    /// The time within the segment at which `dn` more arrivals are due.
    fn time_for(&self, dn: f64) -> f64 {
        if dn <= 0.0 {
            return 0.0;
        }
        let a = (self.r1 - self.r0) / (2.0 * self.d);
        let disc = (self.r0 * self.r0 + 4.0 * a * dn).max(0.0);
        // 2dn / (r0 + sqrt(...)) is the stable root of a*t^2 + r0*t - dn = 0, valid for a = 0.
        let denom = self.r0 + disc.sqrt();
        if denom <= 0.0 {
            self.d
        } else {
            (2.0 * dn / denom).min(self.d)
        }
    }
}

/// An iterator over intended arrival times, in seconds since the start of the run.
#[derive(Debug)]
pub struct Schedule {
    segments: Vec<Segment>,
    /// Rate after the last segment (the last target), lasting until `end`.
    tail_rate: f64,
    tail_t0: f64,
    tail_n0: f64,
    end: f64,
    /// This shard's next position in `N`.
    pos: f64,
    stride: f64,
    steps: Steps,
    seg: usize,
}

/// How a schedule steps from one of its positions to the next.
#[derive(Debug)]
enum Steps {
    Even,
    Poisson(SmallRng),
    Gamma(Box<GammaSteps>),
}

impl Schedule {
    /// The schedule of shard `shard` of `shards` for a rate and spacing, ending at `end` seconds
    /// (`None`: at the end of the stages, or never for a constant rate), drawn from the plan's
    /// `seed`. A Poisson schedule draws from it mixed with the shard's number (without a seed,
    /// from a fresh one); a gamma one from it as every shard does (without a seed, from one
    /// fixed by the shape: module doc).
    pub fn new(
        rate: &Rate,
        arrivals: Arrivals,
        end: Option<f64>,
        shard: usize,
        shards: usize,
        seed: Option<u64>,
    ) -> Self {
        let shards = shards.max(1) as f64;
        let (start, stage_list) = match rate {
            Rate::Constant(r) => (*r, Vec::new()),
            Rate::Stages { start, stages } => (*start, stages.clone()),
        };
        let mut segments = Vec::new();
        let (mut t, mut n, mut r) = (0.0, 0.0, start);
        for s in &stage_list {
            let d = s.duration.as_secs_f64();
            if d <= 0.0 {
                r = s.target;
                continue;
            }
            let seg = Segment {
                t0: t,
                n0: n,
                r0: r,
                r1: s.target,
                d,
            };
            n += seg.total();
            t += d;
            r = s.target;
            segments.push(seg);
        }
        let natural_end = if stage_list.is_empty() {
            f64::INFINITY
        } else {
            stages::total(&stage_list).as_secs_f64()
        };
        let (steps, pos) = match arrivals {
            Arrivals::Even => (Steps::Even, shard as f64),
            Arrivals::Poisson => {
                let seed = seed.unwrap_or_else(rand::random);
                let mut rng = SmallRng::seed_from_u64(seed ^ (shard as u64).wrapping_mul(GOLDEN));
                let first = exp(&mut rng) * shards;
                (Steps::Poisson(rng), first)
            }
            Arrivals::Gamma { shape } => {
                let mut g = GammaSteps::new(shape, seed, shard as u64, shards as u64);
                let first = g.next_own();
                (Steps::Gamma(Box::new(g)), first)
            }
        };
        Schedule {
            segments,
            tail_rate: r,
            tail_t0: t,
            tail_n0: n,
            end: end.unwrap_or(natural_end),
            pos,
            stride: shards,
            steps,
            seg: 0,
        }
    }

    /// The time at which `N(t)` reaches `pos`, or `None` if it never does before the end.
    fn time_of(&mut self, pos: f64) -> Option<f64> {
        while let Some(seg) = self.segments.get(self.seg) {
            if pos < seg.n0 + seg.total() {
                return Some(seg.t0 + seg.time_for(pos - seg.n0));
            }
            self.seg += 1;
        }
        if self.tail_rate > 0.0 {
            Some(self.tail_t0 + (pos - self.tail_n0) / self.tail_rate)
        } else {
            None
        }
    }
}

impl Schedule {
    /// `N(t)`: how many arrivals of the whole schedule (all shards) are due by `t` seconds.
    fn count_at(&self, t: f64) -> f64 {
        for seg in &self.segments {
            if t < seg.t0 + seg.d {
                let x = (t - seg.t0).max(0.0);
                return seg.n0 + seg.r0 * x + (seg.r1 - seg.r0) / (2.0 * seg.d) * x * x;
            }
        }
        self.tail_n0 + self.tail_rate * (t - self.tail_t0).max(0.0)
    }

    /// Skips this shard's arrivals due before `t` seconds (at most `max` of them, and none past
    /// the end), and returns how many it skipped: the arrivals a generator that fell behind
    /// drops without producing each one. Evenly spaced, the count is exact; Poisson, it is the
    /// expected count over the skipped span (the process is memoryless, so the next arrival
    /// follows a fresh exponential gap from there); gamma, it is the expected count up to the
    /// window `t` falls in and exact within it (so the shards still agree from there on).
    pub fn skip_until(&mut self, t: f64, max: u64) -> u64 {
        let due = self.count_at(t.min(self.end));
        if due.is_nan() || due <= self.pos || max == 0 {
            return 0;
        }
        let span = (due - self.pos) / self.stride;
        match &mut self.steps {
            Steps::Even => {
                let k = (span.ceil() as u64).min(max);
                self.pos += k as f64 * self.stride;
                k
            }
            Steps::Poisson(rng) => {
                let k = (span.round().max(1.0) as u64).min(max);
                self.pos = if k < max {
                    due + exp(rng) * self.stride
                } else {
                    self.pos + k as f64 * self.stride
                };
                k
            }
            Steps::Gamma(g) => {
                let mut k = 0;
                let window = (due / WINDOW) as u64;
                if window > g.window {
                    // This arrival, and this shard's share of those up to `due`'s window.
                    let share = ((window as f64 * WINDOW - g.next) / self.stride).round();
                    k = (1 + share as u64).min(max);
                    g.enter(window);
                    self.pos = g.next_own();
                }
                while self.pos < due && k < max {
                    k += 1;
                    self.pos = g.next_own();
                }
                k
            }
        }
    }
}

/// Mixes a shard or window number into a seed.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

fn exp(rng: &mut SmallRng) -> f64 {
    -unit(rng).ln()
}

impl Iterator for Schedule {
    type Item = f64;

    fn next(&mut self) -> Option<f64> {
        let t = self.time_of(self.pos)?;
        if t >= self.end {
            return None;
        }
        self.pos = match &mut self.steps {
            Steps::Even => self.pos + self.stride,
            Steps::Poisson(rng) => self.pos + exp(rng) * self.stride,
            Steps::Gamma(g) => g.next_own(),
        };
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use throng_core::Stage;

    fn stage(secs: u64, target: f64) -> Stage {
        Stage {
            duration: Duration::from_secs(secs),
            target,
        }
    }

    #[test]
    fn even_constant_is_exact() {
        let times: Vec<f64> = Schedule::new(
            &Rate::Constant(1000.0),
            Arrivals::Even,
            Some(2.0),
            0,
            1,
            Some(1),
        )
        .collect();
        assert_eq!(times.len(), 2000);
        for (k, t) in times.iter().enumerate() {
            assert!((t - k as f64 / 1000.0).abs() < 1e-9);
        }
    }

    #[test]
    fn shards_interleave_to_the_whole() {
        let mut all: Vec<f64> = (0..3)
            .flat_map(|i| {
                Schedule::new(
                    &Rate::Constant(300.0),
                    Arrivals::Even,
                    Some(1.0),
                    i,
                    3,
                    Some(1),
                )
                .collect::<Vec<_>>()
            })
            .collect();
        all.sort_by(f64::total_cmp);
        let whole: Vec<f64> = Schedule::new(
            &Rate::Constant(300.0),
            Arrivals::Even,
            Some(1.0),
            0,
            1,
            Some(1),
        )
        .collect();
        assert_eq!(all.len(), whole.len());
        for (a, b) in all.iter().zip(&whole) {
            assert!((a - b).abs() < 1e-9);
        }
    }

    #[test]
    fn ramp_counts_follow_the_integral() {
        // 0 -> 100/s over 10 s (500 arrivals), hold 100/s for 10 s (1000), down to 0 over 10 s (500).
        let rate = Rate::Stages {
            start: 0.0,
            stages: vec![stage(10, 100.0), stage(10, 100.0), stage(10, 0.0)],
        };
        let times: Vec<f64> = Schedule::new(&rate, Arrivals::Even, None, 0, 1, Some(1)).collect();
        assert!((1999..=2000).contains(&times.len()), "{}", times.len());
        let first_ramp = times.iter().filter(|t| **t < 10.0).count();
        assert!((499..=501).contains(&first_ramp), "{first_ramp}");
        // In the first ramp, N(t) = 5 t^2, so by t = 5 s there are 125 arrivals.
        let by5 = times.iter().filter(|t| **t < 5.0).count();
        assert!((124..=126).contains(&by5), "{by5}");
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn poisson_has_the_right_mean_and_spread() {
        let times: Vec<f64> = Schedule::new(
            &Rate::Constant(1000.0),
            Arrivals::Poisson,
            Some(20.0),
            0,
            1,
            Some(7),
        )
        .collect();
        let n = times.len() as f64;
        assert!((n - 20_000.0).abs() < 600.0, "{n}"); // about 4 standard deviations
        let gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        // Exponential gaps: the standard deviation equals the mean (even spacing would give 0).
        assert!((mean - 0.001).abs() < 0.00005, "{mean}");
        assert!(
            (var.sqrt() / mean - 1.0).abs() < 0.05,
            "{}",
            var.sqrt() / mean
        );
    }

    /// The mean and the coefficient of variation of the gaps between `times`.
    fn mean_and_cv(times: &[f64]) -> (f64, f64) {
        let gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn gamma_gaps_have_mean_one_over_the_rate_and_cv_one_over_root_shape() {
        for (shape, cv_want) in [(0.25, 2.0), (0.5, 2f64.sqrt()), (1.0, 1.0), (4.0, 0.5)] {
            let times: Vec<f64> = Schedule::new(
                &Rate::Constant(10_000.0),
                Arrivals::Gamma { shape },
                Some(10.0),
                0,
                1,
                Some(7),
            )
            .collect();
            // Stationary from its start, so the count has no bias: 100,000 expected, with a
            // standard deviation about sqrt(100,000) times the CV.
            let n = times.len() as f64;
            assert!(
                (n - 100_000.0).abs() < 5.0 * cv_want * 316.0,
                "shape {shape}: {n}"
            );
            let (mean, cv) = mean_and_cv(&times);
            assert!(
                (mean * 10_000.0 - 1.0).abs() < 0.03,
                "shape {shape}: mean {mean}"
            );
            assert!((cv / cv_want - 1.0).abs() < 0.05, "shape {shape}: cv {cv}");
        }
    }

    #[test]
    fn gamma_shards_take_turns_in_one_whole_schedule() {
        // Across several windows, and after a skip, the shards' arrivals are the whole
        // schedule's: independent gamma processes would add up to something nearer Poisson.
        // So with the shape's own seed, and with the plan's.
        for seed in [None, Some(7)] {
            gamma_shards_make_the_whole(seed);
        }
    }

    fn gamma_shards_make_the_whole(seed: Option<u64>) {
        let rate = Rate::Constant(1000.0);
        let arrivals = Arrivals::Gamma { shape: 0.3 };
        let whole = |skip: f64| {
            let mut s = Schedule::new(&rate, arrivals, Some(60.0), 0, 1, seed);
            let skipped = s.skip_until(skip, u64::MAX);
            (s.collect::<Vec<f64>>(), skipped)
        };
        for shards in [2usize, 3] {
            for skip in [0.0, 41.5] {
                let (want, skipped_whole) = whole(skip);
                let mut skipped = 0;
                let mut all: Vec<f64> = (0..shards)
                    .flat_map(|i| {
                        let mut s = Schedule::new(&rate, arrivals, Some(60.0), i, shards, seed);
                        skipped += s.skip_until(skip, u64::MAX);
                        s.collect::<Vec<_>>()
                    })
                    .collect();
                all.sort_by(f64::total_cmp);
                assert_eq!(all, want, "{shards} shards, skip to {skip}");
                // Skipped: 41,500 expected, counted as expected up to the window of 41.5 s.
                let tolerance = (skipped_whole as f64 * 0.02) as u64 + shards as u64;
                assert!(
                    skipped.abs_diff(skipped_whole) <= tolerance,
                    "{skipped} {skipped_whole}"
                );
            }
        }
        let (_, skipped) = whole(41.5);
        assert!((40_000..=43_000).contains(&skipped), "{skipped}");
    }

    /// The first `n` instants of a schedule at 1,000 a second.
    fn first(arrivals: Arrivals, shard: usize, shards: usize, seed: Option<u64>) -> Vec<f64> {
        let rate = Rate::Constant(1000.0);
        Schedule::new(&rate, arrivals, Some(30.0), shard, shards, seed)
            .take(5_000)
            .collect()
    }

    #[test]
    fn a_seed_draws_its_own_arrivals_and_the_same_seed_the_same() {
        for arrivals in [Arrivals::Poisson, Arrivals::Gamma { shape: 0.3 }] {
            let a = first(arrivals, 0, 1, Some(1));
            assert_eq!(a, first(arrivals, 0, 1, Some(1)), "{arrivals:?}");
            for other in [Some(2), Some(u64::MAX), None] {
                let b = first(arrivals, 0, 1, other);
                // Past the first window (4,096) too: every window draws from the seed.
                let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
                assert_eq!(same, 0, "{arrivals:?}, seeds 1 and {other:?}");
            }
        }
        // Without a seed, gamma arrivals are the shape's, the same in every run (as they were
        // before seeds), and Poisson ones differ from run to run.
        let gamma = Arrivals::Gamma { shape: 0.3 };
        assert_eq!(first(gamma, 0, 1, None), first(gamma, 0, 1, None));
        let poisson = Arrivals::Poisson;
        assert_ne!(first(poisson, 0, 1, None), first(poisson, 0, 1, None));
        // A seeded Poisson schedule's shards draw apart, each the same in every run.
        let (s0, s1) = (first(poisson, 0, 2, Some(9)), first(poisson, 1, 2, Some(9)));
        assert_ne!(s0, s1);
        assert_eq!(s1, first(poisson, 1, 2, Some(9)));
    }

    #[test]
    fn gamma_turns_reach_every_shard_even_past_a_windows_count() {
        // 40,000 workers over about 100 windows: a turn that began again at 0 in every window would
        // never come to a shard past a window's count (and its schedule would spin forever).
        let rate = Rate::Constant(400_000.0);
        for shard in [0, 20_000, 39_999] {
            let n = Schedule::new(
                &rate,
                Arrivals::Gamma { shape: 0.5 },
                Some(1.0),
                shard,
                40_000,
                Some(1),
            )
            .count();
            assert!((3..=20).contains(&n), "shard {shard}: {n}");
        }
    }

    #[test]
    fn gamma_follows_a_ramp() {
        // 0 -> 1000/s over 20 s: N(t) = 25 t^2, 10,000 arrivals, a quarter of them by 10 s.
        let rate = Rate::Stages {
            start: 0.0,
            stages: vec![stage(20, 1000.0)],
        };
        let times: Vec<f64> =
            Schedule::new(&rate, Arrivals::Gamma { shape: 0.5 }, None, 0, 1, Some(1)).collect();
        let n = times.len() as f64;
        assert!((n - 10_000.0).abs() < 500.0, "{n}");
        let by10 = times.iter().filter(|t| **t < 10.0).count() as f64;
        assert!((by10 / n - 0.25).abs() < 0.02, "{}", by10 / n);
        // Gaps scale with 1/r(t): over 15-20 s (750-1000/s) they are about 1/875 s.
        let tail: Vec<f64> = times.iter().copied().filter(|t| *t >= 15.0).collect();
        let (mean, cv) = mean_and_cv(&tail);
        assert!((mean * 875.0 - 1.0).abs() < 0.1, "{mean}");
        assert!((cv / 2f64.sqrt() - 1.0).abs() < 0.1, "{cv}");
    }

    #[test]
    fn skipping_counts_exactly_what_it_passes_over() {
        // Whole schedule: 1000/s for 2 s. Take 10, skip everything due before 1 s, take the rest.
        for shards in [1usize, 3] {
            let mut total = 0u64;
            for shard in 0..shards {
                let mut s = Schedule::new(
                    &Rate::Constant(1000.0),
                    Arrivals::Even,
                    Some(2.0),
                    shard,
                    shards,
                    Some(1),
                );
                let first: Vec<f64> = s.by_ref().take(10).collect();
                let skipped = s.skip_until(1.0, u64::MAX);
                let next = s.next().unwrap();
                assert!(
                    next >= 1.0 && next < 1.0 + shards as f64 / 1000.0 + 1e-9,
                    "{next}"
                );
                total += first.len() as u64 + skipped + 1 + s.count() as u64;
            }
            assert_eq!(total, 2000, "shards {shards}");
        }
        // A ramp: 0 -> 1000/s over 2 s has N(1) = 250 arrivals due by 1 s.
        let rate = Rate::Stages {
            start: 0.0,
            stages: vec![stage(2, 1000.0)],
        };
        let mut s = Schedule::new(&rate, Arrivals::Even, None, 0, 1, Some(1));
        assert_eq!(s.skip_until(1.0, u64::MAX), 250);
        assert_eq!(s.skip_until(1.0, u64::MAX), 0);
        // At most `max`, and nothing past the end.
        let mut s = Schedule::new(
            &Rate::Constant(1e12),
            Arrivals::Even,
            Some(1.0),
            0,
            1,
            Some(1),
        );
        assert_eq!(s.skip_until(0.5, 7), 7);
        assert_eq!(s.skip_until(5.0, u64::MAX), 1_000_000_000_000 - 7);
        assert_eq!(s.next(), None);
        // Poisson: about the expected count, and the schedule goes on after the span.
        let mut s = Schedule::new(
            &Rate::Constant(1000.0),
            Arrivals::Poisson,
            Some(2.0),
            0,
            1,
            Some(3),
        );
        let k = s.skip_until(1.0, u64::MAX);
        assert!((990..=1010).contains(&k), "{k}");
        assert!(s.next().is_some_and(|t| t >= 1.0));
    }

    #[test]
    fn zero_tail_ends_the_schedule() {
        let rate = Rate::Stages {
            start: 10.0,
            stages: vec![stage(2, 10.0), stage(1, 0.0)],
        };
        let times: Vec<f64> =
            Schedule::new(&rate, Arrivals::Even, Some(100.0), 0, 1, Some(1)).collect();
        assert!(times.iter().all(|t| *t < 3.0));
        assert!((24..=25).contains(&times.len()), "{}", times.len());
    }
}
