//! What a run has to say, as events to an [`Observer`] rather than lines it prints: a library
//! user collects them, logs them or ignores them ([`()`](Observer#impl-Observer-for-())), and the
//! command line prints them ([`Console`]) exactly as it always has.
//!
//! Observers compose: a pair `(a, b)` tells both, in that order, as rlt's observers do.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Standard output or standard error: where the command line puts a [`Event::Text`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Out,
    /// Standard error.
    Err,
}

/// Something a run says while it goes or as it ends.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// What the run is doing (with [`crate::Run::messages`]): containers watched, the wait for
    /// the start, the metrics endpoint, the samples written.
    Note(String),
    /// Something is off beside the load without failing it (a shard that starts late).
    Warning(String),
    /// A file written (with [`crate::Run::messages`]): `what` it is (`result`, `report`; empty
    /// for a grid's document) and where.
    Written {
        /// What the file holds.
        what: String,
        /// Where it was written.
        path: PathBuf,
    },
    /// Text for people, whole lines as they are shown: the summary, a driver's notes, the
    /// progress line; `to` is where the command line puts it.
    Text {
        /// The text, its line ends included.
        text: String,
        /// Standard output or standard error.
        to: Stream,
    },
    /// The run is stopping on a signal (`now`: the second one, cutting it short).
    Stopping {
        /// Requests in flight are cut off rather than given the grace period.
        now: bool,
    },
}

/// Told what a run says ([`Event`]), in order, from the run's tasks.
pub trait Observer: Send + Sync {
    /// One event.
    fn event(&self, event: &Event);
}

/// Hears nothing: a run given no observer says nothing.
impl Observer for () {
    fn event(&self, _: &Event) {}
}

/// Tells both, the first first.
impl<A: Observer, B: Observer> Observer for (A, B) {
    fn event(&self, event: &Event) {
        self.0.event(event);
        self.1.event(event);
    }
}

impl<O: Observer + ?Sized> Observer for Arc<O> {
    fn event(&self, event: &Event) {
        (**self).event(event);
    }
}

/// An observer as a builder holds it: nothing by default, shown as such.
#[derive(Clone)]
pub(crate) struct Told(pub(crate) Arc<dyn Observer>);

impl Default for Told {
    fn default() -> Self {
        Told(Arc::new(()))
    }
}

impl std::fmt::Debug for Told {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Observer")
    }
}

/// Keeps every event, for a caller that reads them afterwards (tests, a report of its own).
#[derive(Debug, Default)]
pub struct Collect(Mutex<Vec<Event>>);

impl Collect {
    /// The events so far.
    pub fn events(&self) -> Vec<Event> {
        self.0.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl Observer for Collect {
    fn event(&self, event: &Event) {
        if let Ok(mut e) = self.0.lock() {
            e.push(event.clone());
        }
    }
}

/// Prints the events as the command line shows them: notes, warnings and files written on
/// standard error, text where it says. The one place a run's words reach the terminal, and only
/// when a caller asks for it. A closed stream (a pipe whose reader left) loses the text, as
/// the command line always has, rather than failing the run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Console;

impl Observer for Console {
    fn event(&self, event: &Event) {
        use std::io::Write;
        let line = match event {
            Event::Note(text) => format!("{text}\n"),
            Event::Warning(text) => format!("warning: {text}\n"),
            Event::Written { what, path } if what.is_empty() => {
                format!("written to {}\n", path.display())
            }
            Event::Written { what, path } => format!("{what} written to {}\n", path.display()),
            Event::Stopping { now: false } => "\nstopping: finishing requests in flight (Ctrl-C \
                 again to cut this short), then writing results\n"
                .into(),
            Event::Stopping { now: true } => {
                "\nstopping now: requests in flight are counted as aborted; writing results\n"
                    .into()
            }
            Event::Text {
                text,
                to: Stream::Out,
            } => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
                return;
            }
            Event::Text { text, .. } => text.clone(),
        };
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
}
