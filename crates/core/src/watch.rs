//! Servers watched beside a run: their own counters read through the load, and once more after
//! it (a server publishes what the load did a little later). A protocol's flags make one
//! (SQL's `--db-stats`: the databases' counters) and the run starts it right before the load,
//! whatever protocol the run itself speaks.
//!
//! The readings are [`DatabaseEvent`]s, a server's named counters; a server of another kind
//! (a message broker's) reads its counters into the same shape.

use tokio::sync::{mpsc, oneshot};

use crate::DatabaseEvent;

/// Servers being watched through the load: readings of their own counters, and the last ones
/// after it. The `sql` crate's `Monitor::watch_load` makes one:
/// `Watched::new(move || monitor.watch_load(settle).into())`.
pub struct Readings {
    /// The readings, as they come; the channel closes after the last one.
    pub events: mpsc::Receiver<DatabaseEvent>,
    /// Told when the load has ended: the watcher then takes its last readings and closes
    /// `events`.
    pub load_ended: oneshot::Sender<()>,
    /// Once the channel has closed: what went wrong while watching, to tell the user.
    pub warnings: tokio::task::JoinHandle<Vec<String>>,
}

impl std::fmt::Debug for Readings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readings").finish_non_exhaustive()
    }
}

/// The readings, the end of the load to tell, and the warnings, as a watcher returns them.
type Watching = (
    mpsc::Receiver<DatabaseEvent>,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<Vec<String>>,
);

impl From<Watching> for Readings {
    fn from((events, load_ended, warnings): Watching) -> Self {
        Readings {
            events,
            load_ended,
            warnings,
        }
    }
}

/// What starts watching, right before the load.
type Start = Box<dyn FnOnce() -> Readings + Send>;

/// Servers made ready to watch beside a run (read through their idle window), waiting for the
/// run that starts them: the first [`Watched::take`] gets them.
pub struct Watched(std::sync::Mutex<Option<Start>>);

impl Watched {
    /// Servers that `start` starts watching, right before the load.
    pub fn new(start: impl FnOnce() -> Readings + Send + 'static) -> Self {
        Watched(std::sync::Mutex::new(Some(Box::new(start))))
    }

    /// What starts them, once; `None` after the first call.
    pub fn take(&self) -> Option<impl FnOnce() -> Readings + Send + 'static> {
        self.0.lock().ok()?.take()
    }
}

impl std::fmt::Debug for Watched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watched").finish_non_exhaustive()
    }
}
