//! The dashboard's widgets: small structs borrowing the data they draw, each rendering into a
//! `Buffer` with no state of its own.

pub mod charts;
pub mod containers;
pub mod errors;
pub mod footer;
pub mod header;
pub mod labels;
pub mod latency;
pub mod traffic;

pub use charts::{Metric, SeriesChart};
pub use containers::{ContainersPanel, ContainersView};
pub use errors::{ErrorsPanel, StatusPanel};
pub use footer::Footer;
pub use header::{Header, TabBar};
pub use labels::LabelTable;
pub use latency::LatencyPanel;
pub use traffic::TrafficPanel;
