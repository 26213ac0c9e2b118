//! The headless progress line: about once a second on standard error.

use std::sync::Arc;

use throng_core::{Percentiles, RunState, Snapshot};

use crate::observer::{Event, Observer, Stream};

/// Tells `observer` a progress line for each snapshot until the run is done.
pub(crate) async fn progress(
    mut rx: tokio::sync::watch::Receiver<Arc<Snapshot>>,
    observer: Arc<dyn Observer>,
) {
    while rx.changed().await.is_ok() {
        let s = rx.borrow_and_update().clone();
        if s.state == RunState::Done || s.series.is_empty() {
            continue;
        }
        observer.event(&Event::Text {
            text: format!("{}\n", progress_line(&s)),
            to: Stream::Err,
        });
    }
}

/// One progress line: elapsed, last-second rate and percentiles, errors so far.
pub fn progress_line(s: &Snapshot) -> String {
    let last = Percentiles::of(&s.last.latency);
    let point = s.series.last().copied().unwrap_or_default();
    // A second with no answered request has no percentiles (not 0.00 ms).
    let ms = |us: u64| match s.last.latency.is_empty() {
        true => "-".to_string(),
        false => format!("{:.2}", us as f64 / 1000.0),
    };
    let mut line = format!(
        "[{:>6.1}s] {:>8} req/s  p50 {:>7} ms  p99 {:>7} ms  errors {} ({:.2}%)  active {}",
        s.elapsed.as_secs_f64(),
        point.requests,
        ms(last.p50),
        ms(last.p99),
        s.total.errors,
        s.total.error_rate() * 100.0,
        s.active
    );
    if let Some(l) = &s.lag {
        line.push_str(&format!("  late {}  dropped {}", l.late, l.dropped));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_core::{ClosedLoop, LoadModel, RunPlan, Users};

    #[test]
    fn a_second_without_answers_has_no_percentiles() {
        let model = LoadModel::Closed(ClosedLoop {
            users: Users::Fixed(1),
            requests: Some(1),
            iterations: None,
            duration: None,
            think_time: None,
        });
        let plan = Arc::new(RunPlan::new("t", model));
        let mut s = Snapshot::empty(plan, &["GET /".to_string()], 0);
        let line = progress_line(&s);
        assert!(line.contains("p50       - ms  p99       - ms"), "{line}");
        throng_core::histogram::record(&mut s.last.latency, 2_500);
        let line = progress_line(&s);
        assert!(line.contains("p50    2.50 ms"), "{line}");
    }
}
