//! sysbench's random distributions of row ids (`--rand-type`), computed as sysbench 1.0.20
//! computes them (`src/sb_rand.c`) with its default options (`--rand-spec-iter=12`,
//! `--rand-spec-pct=1`, `--rand-spec-res=75`, `--rand-pareto-h=0.2`), so a throng workload
//! touches the same rows as often as sysbench's does. Only the uniform doubles come from a
//! different generator (ours, not xoroshiro128+); what is made of them is the same arithmetic,
//! in the same order, truncated to an integer where sysbench truncates.

use rand::Rng;

/// A distribution of ids in `[a, b]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RandType {
    /// Every id equally likely.
    Uniform,
    /// sysbench 1.0's default: 75% of the ids from the middle 1% of the range (uniformly), the
    /// rest from the whole range, bell-shaped (the mean of 12 uniform draws).
    #[default]
    Special,
    /// Bell-shaped over the whole range: the mean of 12 uniform draws.
    Gaussian,
    /// 80% of the ids from the first 20% of the range (`--rand-pareto-h=0.2`).
    Pareto,
}

/// `--rand-spec-iter`: uniform draws a gaussian value is the mean of.
const ITER: u32 = 12;
/// `--rand-spec-pct`: the share of the range, in percent, the special values fall in.
const SPEC_PCT: f64 = 1.0;
/// `--rand-spec-res`: the share of the values, in percent, that are special.
const SPEC_RES: f64 = 75.0;
/// `--rand-pareto-h`.
const PARETO_H: f64 = 0.2;

impl RandType {
    /// Every distribution and its name, as `--rand-type` takes them.
    pub const ALL: [(RandType, &'static str); 4] = [
        (RandType::Uniform, "uniform"),
        (RandType::Special, "special"),
        (RandType::Gaussian, "gaussian"),
        (RandType::Pareto, "pareto"),
    ];

    /// The distribution of a name (`special`).
    pub fn named(name: &str) -> Option<RandType> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(d, _)| *d)
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(d, _)| *d == self)
            .map_or("special", |(_, n)| n)
    }

    /// An id in `[a, b]` (`a <= b`).
    pub fn draw<R: Rng>(self, rng: &mut R, a: u32, b: u32) -> u32 {
        self.draw_from(|| rng.random::<f64>(), a, b)
    }

    /// An id in `[a, b]` made of uniform doubles in `[0, 1)` from `uniform`, as sysbench's
    /// `sb_rand_uniform`, `sb_rand_special`, `sb_rand_gaussian` and `sb_rand_pareto` make it.
    pub fn draw_from(self, mut uniform: impl FnMut() -> f64, a: u32, b: u32) -> u32 {
        let iter_mult = 1.0 / f64::from(ITER);
        // The conversions truncate toward zero, as C's conversion of a double to uint32_t does;
        // `as` also saturates where C would be undefined (never, for values in range).
        match self {
            RandType::Uniform => (f64::from(a) + uniform() * (f64::from(b - a) + 1.0)) as u32,
            RandType::Gaussian => {
                let t = f64::from(b - a) + 1.0;
                let sum: f64 = (0..ITER).map(|_| uniform() * t).sum();
                a + (sum * iter_mult) as u32
            }
            RandType::Special => {
                let t = f64::from(b - a);
                let range_size = t * (100.0 / (100.0 - SPEC_RES));
                let rnd = uniform();
                if rnd * range_size < t {
                    let sum: f64 = (0..ITER).map(|_| uniform()).sum();
                    return (f64::from(a) + sum * t * iter_mult) as u32;
                }
                // The same draw, now in [0.25, 1), placed in the middle SPEC_PCT of the range.
                let d = t * (SPEC_PCT / 100.0);
                let res = rnd * (d + 1.0) + (t / 2.0 - t * (SPEC_PCT / 200.0));
                a + res as u32
            }
            RandType::Pareto => {
                let power = PARETO_H.ln() / (1.0 - PARETO_H).ln();
                a + ((f64::from(b - a) + 1.0) * uniform().powf(power)) as u32
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Draws `n` ids in [1, 10000]; the share of them in `[lo, hi]`.
    fn share(d: RandType, n: u32, lo: u32, hi: u32) -> f64 {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let inside = (0..n)
            .map(|_| d.draw(&mut rng, 1, 10_000))
            .inspect(|id| assert!((1..=10_000).contains(id), "{id}"))
            .filter(|id| (lo..=hi).contains(id))
            .count();
        inside as f64 / f64::from(n)
    }

    #[test]
    fn special_puts_three_quarters_in_the_middle_percent() {
        // t = 9999: the special values are 1 + [4949.5 + 0.25 * 100.99, 4949.5 + 100.99), so
        // 4975..=5051; a quarter are bell-shaped over the range and rarely fall there.
        let middle = share(RandType::Special, 400_000, 4975, 5051);
        assert!((0.75..0.77).contains(&middle), "{middle}");
        // The bell: a mean of 12 draws is within 0.4 of the middle nearly always (12 sigma
        // is 0.3 of the range here, so below 1000 or above 9000 next to never).
        let tails = share(RandType::Special, 400_000, 1, 1000)
            + share(RandType::Special, 400_000, 9001, 10_000);
        assert!(tails < 0.0001, "{tails}");
        // Uniform spreads evenly: a tenth in each tenth, 1% in the middle 1%.
        let tenth = share(RandType::Uniform, 400_000, 1, 1000);
        assert!((0.097..0.103).contains(&tenth), "{tenth}");
        let middle = share(RandType::Uniform, 400_000, 4975, 5051);
        assert!((0.006..0.010).contains(&middle), "{middle}");
        // Gaussian: the mean of 12 draws, standard deviation range / 12: about 68% within
        // 833 of the middle.
        let sigma = share(RandType::Gaussian, 400_000, 5000 - 833, 5000 + 833);
        assert!((0.66..0.70).contains(&sigma), "{sigma}");
        // Pareto with h = 0.2: 80% in the first 20%.
        let head = share(RandType::Pareto, 400_000, 1, 2000);
        assert!((0.79..0.81).contains(&head), "{head}");
    }

    /// The arithmetic is sysbench's, given the same uniform doubles.
    #[test]
    fn the_same_uniform_draws_give_sysbenchs_ids() {
        // The values in turn, the last one again and again.
        fn fixed(v: &[f64]) -> impl FnMut() -> f64 + '_ {
            let mut it = v.iter().copied().chain(std::iter::repeat(v[v.len() - 1]));
            move || it.next().unwrap_or(0.0)
        }
        // Special, a special value: 0.9 * 4 * 9999 >= 9999; 0.9 * 100.99 + 4949.505 = 5040.396.
        assert_eq!(RandType::Special.draw_from(fixed(&[0.9]), 1, 10_000), 5041);
        // Special, a bell-shaped one: 0.1 * 39996 < 9999, then twelve draws of 0.5 average 0.5:
        // 1 + 0.5 * 9999 = 5000.5.
        assert_eq!(
            RandType::Special.draw_from(fixed(&[0.1, 0.5]), 1, 10_000),
            5000
        );
        // Uniform: 1 + 0.25 * 10000.
        assert_eq!(RandType::Uniform.draw_from(fixed(&[0.25]), 1, 10_000), 2501);
        // Gaussian: 12 draws of 0.3 of 10000, averaged: 3000.
        assert_eq!(RandType::Gaussian.draw_from(fixed(&[0.3]), 1, 10_000), 3001);
        // Pareto: 1 + 10000 * 0.9 ^ (ln 0.2 / ln 0.8) = 4677.7.
        assert_eq!(RandType::Pareto.draw_from(fixed(&[0.9]), 1, 10_000), 4678);
        // Ends: the top of [0, 1) stays inside the range.
        let top = 1.0 - f64::EPSILON;
        for d in RandType::ALL.map(|(d, _)| d) {
            assert!(d.draw_from(fixed(&[top]), 1, 10_000) <= 10_000, "{d:?}");
            assert!(d.draw_from(fixed(&[0.0]), 1, 10_000) >= 1, "{d:?}");
        }
        assert_eq!(RandType::named("special"), Some(RandType::Special));
        assert_eq!(RandType::default().name(), "special");
    }
}
