//! `--shard I/N`, `--shards N` with the scheduler's index, and `--start-at`: one plan run as N
//! processes that together run it exactly, from one instant.

use std::time::SystemTime;

use throng_core::Shard;

use super::args::RunArgs;
use super::CliError;

fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

/// The shard this process runs: `--shard I/N`, or `--shards N` with the index from the
/// environment (`env` reads a variable): `JOB_COMPLETION_INDEX` counts from 0 (Kubernetes),
/// `THRONG_SHARD_SLOT` from 1 (Docker Swarm's `{{.Task.Slot}}`).
pub fn shard(a: &RunArgs, env: &dyn Fn(&str) -> Option<String>) -> Result<Shard, CliError> {
    if let Some(s) = &a.shard {
        let bad = |why: &str| usage(format!("--shard {s:?}: {why}"));
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| bad("write I/N, e.g. --shard 0/3 (I counts from 0)"))?;
        let n: u32 = n
            .trim()
            .parse()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| bad("N must be a whole number of at least 1"))?;
        let i: u32 = i
            .trim()
            .parse()
            .map_err(|_| bad("I must be a whole number"))?;
        if i >= n {
            return Err(bad(&format!(
                "I counts from 0, so the shards of {n} are 0/{n} to {}/{n} (a scheduler that \
                 counts from 1: --shards {n} with THRONG_SHARD_SLOT)",
                n - 1
            )));
        }
        return Ok(Shard { index: i, count: n });
    }
    let Some(n) = a.shards else {
        return Ok(Shard::WHOLE);
    };
    if n == 0 {
        return Err(usage("--shards must be at least 1"));
    }
    let (var, index) = match (env("JOB_COMPLETION_INDEX"), env("THRONG_SHARD_SLOT")) {
        (Some(v), _) => (
            "JOB_COMPLETION_INDEX",
            v.trim().parse::<u32>().ok().filter(|i| *i < n).ok_or(v),
        ),
        (None, Some(v)) => (
            "THRONG_SHARD_SLOT",
            v.trim()
                .parse::<u32>()
                .ok()
                .filter(|s| (1..=n).contains(s))
                .map(|s| s - 1)
                .ok_or(v),
        ),
        (None, None) => {
            return Err(usage(format!(
                "--shards {n}: no shard index in the environment: set JOB_COMPLETION_INDEX (from \
                 0, as Kubernetes Indexed Jobs do) or THRONG_SHARD_SLOT (from 1, as Docker \
                 Swarm's {{{{.Task.Slot}}}}), or give --shard I/{n}"
            )))
        }
    };
    match index {
        Ok(index) => Ok(Shard { index, count: n }),
        Err(v) => Err(usage(format!(
            "--shards {n}: {var}={v:?} is not a shard of {n} ({})",
            if var == "THRONG_SHARD_SLOT" {
                format!("slots count from 1 to {n}")
            } else {
                format!("indexes count from 0 to {}", n - 1)
            }
        ))),
    }
}

/// `--start-at`: an RFC 3339 instant, or `+D` from now.
pub fn start_at(a: &RunArgs) -> Result<Option<SystemTime>, CliError> {
    let Some(s) = &a.start_at else {
        return Ok(None);
    };
    if let Some(d) = s.strip_prefix('+') {
        let d = throng_core::stages::parse_duration(d).map_err(|e| {
            usage(format!(
                "--start-at {s:?}: not a duration after + ({e}); e.g. +30s"
            ))
        })?;
        return Ok(Some(SystemTime::now() + d));
    }
    humantime::parse_rfc3339_weak(s.trim_end_matches('Z'))
        .map(Some)
        .map_err(|e| {
            usage(format!(
                "--start-at {s:?}: not an instant ({e}); write RFC 3339 in UTC, e.g. \
                 2026-11-23T20:30:00Z, or +30s"
            ))
        })
}
