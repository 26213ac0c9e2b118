//! Ctrl-C and SIGTERM: the first stops the run (requests in flight get the grace period), the
//! second cuts it short; servers (`throng serve`) stop on either ([`wait_for_signal`]).

/// Stops the run on Ctrl-C or SIGTERM; the next one (or the first, if the run was already
/// stopping, as after `q` in the dashboard) cuts the grace period short.
pub(crate) async fn stop_on_signal(
    stop: tokio_util::sync::CancellationToken,
    abort: tokio_util::sync::CancellationToken,
    observer: std::sync::Arc<dyn crate::observer::Observer>,
) {
    use crate::observer::Event;
    let mut signals = Signals::new();
    signals.next().await;
    if !stop.is_cancelled() {
        observer.event(&Event::Stopping { now: false });
        stop.cancel();
        signals.next().await;
    }
    observer.event(&Event::Stopping { now: true });
    abort.cancel();
}

/// Ctrl-C and SIGTERM, as a stream of arrivals (listening from its creation, so that a signal
/// between two waits is not lost).
struct Signals {
    #[cfg(unix)]
    streams: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let streams = match (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) {
                (Ok(i), Ok(t)) => Some((i, t)),
                _ => None,
            };
            Signals { streams }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    async fn next(&mut self) {
        #[cfg(unix)]
        if let Some((int, term)) = &mut self.streams {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Waits for Ctrl-C or SIGTERM.
pub async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
