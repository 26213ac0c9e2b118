//! Live metrics for Prometheus (`metrics` feature): a run's snapshots go to the exporter it was
//! given (`Run::metrics`, with this feature: nothing is installed process-wide, so a run without one
//! exports nothing), labelled with the run's place in its grid (side, level, round) and its
//! shard.
//!
//! The command line gives one exporter to every run, so a grid's runs share one endpoint; each
//! of a grid's runs is told its place ([`crate::Run::place`]), which labels its series and
//! leaves the endpoint's last scrape to the grid, once, rather than after each of its runs.

#[cfg(feature = "metrics")]
pub(crate) use exporter::{labels, linger};

#[cfg(feature = "metrics")]
mod exporter {
    use throng_core::RunPlan;
    use throng_metrics::{Exporter, Labels};
    use throng_report::Coordinates;

    /// Waits for the endpoint's last scrape (saying so with `messages`); Ctrl-C or SIGTERM
    /// ends the wait when the run handles `signals` (its handlers have taken their default).
    pub(crate) async fn linger(
        e: &Exporter,
        messages: bool,
        signals: bool,
        observer: &dyn crate::observer::Observer,
    ) {
        let Some(addr) = e.listening() else {
            return;
        };
        if messages {
            observer.event(&crate::observer::Event::Note(format!(
                "metrics: waiting for a last scrape of http://{addr}/metrics (Ctrl-C ends the wait)"
            )));
        }
        match signals {
            true => tokio::select! {
                _ = e.linger() => {}
                _ = crate::wait_for_signal() => {}
            },
            false => e.linger().await,
        }
    }

    /// The labels of a run's series: its side, level and round in a grid, and its shard.
    pub(crate) fn labels(plan: &RunPlan, place: Option<&Coordinates>) -> Labels {
        let mut l: Labels = Vec::new();
        if let Some(at) = place {
            if let Some(s) = &at.side {
                l.push(("side".into(), s.clone()));
            }
            if let Some(level) = at.level {
                l.push(("level".into(), level.to_string()));
            }
            l.push(("round".into(), at.round.to_string()));
        }
        if !plan.shard.is_whole() {
            l.push((
                "shard".into(),
                format!("{}/{}", plan.shard.index, plan.shard.count),
            ));
        }
        l
    }
}
