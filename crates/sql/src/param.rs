//! `--param` expressions: what each statement's placeholders are bound to, evaluated per
//! execution. Deliberately small: literals and a few generators, no variables.
//!
//! ```text
//! 42   -7   2.5   'text'   "text"   null   true   false
//! rand_int(1, 100000)   a whole number drawn uniformly, both ends included
//! rand_str(120)         that many random letters and digits
//! seq()                 1, 2, 3, ... across the whole run (unique keys for inserts; shard I of
//!                       N takes I+1, I+1+N, ...: unique across shards too)
//! user()                the virtual user's number, from 0
//! ```

use std::sync::atomic::{AtomicI64, Ordering};

use rand::Rng;

/// A value bound to a placeholder.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// A whole number (bound as a 64-bit integer).
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// Text.
    Text(String),
    /// A boolean.
    Bool(bool),
}

/// A parsed `--param` expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A fixed value.
    Literal(Value),
    /// `rand_int(lo, hi)`.
    RandInt(i64, i64),
    /// `rand_str(n)`.
    RandStr(usize),
    /// `seq()`.
    Seq,
    /// `user()`.
    User,
}

/// The run's `seq()`: shared by every user of the process, and interleaved with the other
/// shards' (shard `I` of `N` gives `I+1, I+1+N, I+1+2N, ...`), so keys made of it are unique
/// across a sharded run, and together the shards use `1..` without gaps.
#[derive(Debug)]
pub struct Seq {
    taken: AtomicI64,
    first: i64,
    stride: i64,
}

impl Seq {
    /// The sequence of shard `index` of `count` (0 of 1 for a whole run).
    pub fn new(index: u32, count: u32) -> Seq {
        Seq {
            taken: AtomicI64::new(0),
            first: i64::from(index) + 1,
            stride: i64::from(count.max(1)),
        }
    }

    /// The next value.
    pub fn next(&self) -> i64 {
        self.taken.fetch_add(1, Ordering::Relaxed) * self.stride + self.first
    }
}

/// What an expression needs when it is evaluated.
pub struct Context<'a, R: Rng> {
    /// The session's random numbers.
    pub rng: &'a mut R,
    /// The run's sequence (shared by every user).
    pub seq: &'a Seq,
    /// The user's number.
    pub user: u64,
}

impl Expr {
    /// Parses an expression; the message says what is wrong and what is accepted.
    pub fn parse(text: &str) -> Result<Expr, String> {
        let t = text.trim();
        let bad = |why: &str| {
            format!(
                "{text:?}: {why}; a parameter is a number, 'text', null, true, false, \
                 rand_int(A, B), rand_str(N), seq() or user()"
            )
        };
        if t.is_empty() {
            return Err(bad("empty"));
        }
        if let Some(quoted) = t
            .strip_prefix('\'')
            .and_then(|r| r.strip_suffix('\''))
            .or_else(|| t.strip_prefix('"').and_then(|r| r.strip_suffix('"')))
        {
            return Ok(Expr::Literal(Value::Text(quoted.to_string())));
        }
        match t.to_ascii_lowercase().as_str() {
            "null" => return Ok(Expr::Literal(Value::Null)),
            "true" => return Ok(Expr::Literal(Value::Bool(true))),
            "false" => return Ok(Expr::Literal(Value::Bool(false))),
            _ => {}
        }
        if let Ok(n) = t.parse::<i64>() {
            return Ok(Expr::Literal(Value::Int(n)));
        }
        if let Ok(x) = t.parse::<f64>() {
            if x.is_finite() {
                return Ok(Expr::Literal(Value::Float(x)));
            }
        }
        let Some((name, args)) = t.strip_suffix(')').and_then(|r| r.split_once('(')) else {
            return Err(bad("not understood"));
        };
        let args: Vec<&str> = match args.trim() {
            "" => Vec::new(),
            a => a.split(',').map(str::trim).collect(),
        };
        let int = |s: &str| {
            s.parse::<i64>()
                .map_err(|_| bad(&format!("`{s}` is not a whole number")))
        };
        match (name.trim(), args.as_slice()) {
            ("rand_int", [lo, hi]) => {
                let (lo, hi) = (int(lo)?, int(hi)?);
                if lo > hi {
                    return Err(bad("rand_int's low end is above its high end"));
                }
                Ok(Expr::RandInt(lo, hi))
            }
            ("rand_str", [n]) => match n.parse::<usize>() {
                Ok(n) if n <= 1 << 20 => Ok(Expr::RandStr(n)),
                _ => Err(bad("rand_str takes a length from 0 to 1048576")),
            },
            ("seq", []) => Ok(Expr::Seq),
            ("user", []) => Ok(Expr::User),
            ("rand_int", _) => Err(bad("rand_int takes two whole numbers")),
            ("rand_str", _) => Err(bad("rand_str takes one length")),
            ("seq" | "user", _) => Err(bad("takes no arguments")),
            (other, _) => Err(bad(&format!("unknown function `{other}`"))),
        }
    }

    /// The value for one execution.
    pub fn eval<R: Rng>(&self, cx: &mut Context<'_, R>) -> Value {
        match self {
            Expr::Literal(v) => v.clone(),
            Expr::RandInt(lo, hi) => Value::Int(cx.rng.random_range(*lo..=*hi)),
            Expr::RandStr(n) => Value::Text(rand_str(cx.rng, *n)),
            Expr::Seq => Value::Int(cx.seq.next()),
            Expr::User => Value::Int(i64::try_from(cx.user).unwrap_or(i64::MAX)),
        }
    }
}

/// `n` random letters and digits.
pub fn rand_str<R: Rng>(rng: &mut R, n: usize) -> String {
    const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    (0..n)
        .map(|_| char::from(ALNUM[rng.random_range(0..ALNUM.len())]))
        .collect()
}

/// sysbench's `sysbench.rand.string`: each `#` of the template becomes a random digit.
pub fn digits<R: Rng>(rng: &mut R, template: &str) -> String {
    template
        .chars()
        .map(|c| match c {
            '#' => char::from(b'0' + rng.random_range(0..10u8)),
            other => other,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn parses_the_small_language_and_names_what_is_wrong() {
        assert_eq!(Expr::parse("42"), Ok(Expr::Literal(Value::Int(42))));
        assert_eq!(
            Expr::parse(" 'a b' "),
            Ok(Expr::Literal(Value::Text("a b".into())))
        );
        assert_eq!(Expr::parse("NULL"), Ok(Expr::Literal(Value::Null)));
        assert_eq!(Expr::parse("2.5"), Ok(Expr::Literal(Value::Float(2.5))));
        assert_eq!(
            Expr::parse("rand_int(1, 100000)"),
            Ok(Expr::RandInt(1, 100_000))
        );
        assert_eq!(Expr::parse("seq()"), Ok(Expr::Seq));
        for (bad, says) in [
            ("rand_int(5, 1)", "low end"),
            ("rand_int(1)", "two whole numbers"),
            ("rand_int(a, 2)", "`a` is not a whole number"),
            ("now()", "unknown function `now`"),
            ("abc", "not understood"),
            ("", "empty"),
        ] {
            let e = Expr::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn evaluates_within_bounds() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let seq = Seq::new(0, 1);
        let mut cx = Context {
            rng: &mut rng,
            seq: &seq,
            user: 3,
        };
        for _ in 0..1000 {
            match Expr::RandInt(1, 3).eval(&mut cx) {
                Value::Int(n) => assert!((1..=3).contains(&n)),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(Expr::Seq.eval(&mut cx), Value::Int(1));
        assert_eq!(Expr::Seq.eval(&mut cx), Value::Int(2));
        assert_eq!(Expr::User.eval(&mut cx), Value::Int(3));
        let s = digits(cx.rng, "###-##");
        assert!(s.len() == 6 && s.as_bytes()[3] == b'-', "{s}");
    }

    #[test]
    fn shards_sequences_interleave_without_overlap_or_gaps() {
        let shards: Vec<Seq> = (0..3).map(|i| Seq::new(i, 3)).collect();
        let mut all: Vec<i64> = shards
            .iter()
            .flat_map(|s| (0..4).map(|_| s.next()).collect::<Vec<_>>())
            .collect();
        assert_eq!(&all[..4], &[1, 4, 7, 10], "shard 0 of 3");
        all.sort_unstable();
        assert_eq!(all, (1..=12).collect::<Vec<_>>());
    }
}
