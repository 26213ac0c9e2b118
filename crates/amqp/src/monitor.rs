//! The broker's own figures beside a run (`--amqp-monitor URL`): RabbitMQ's management API
//! (the `rabbitmq_management` plugin), `/api/overview`, read once by [`Overview`], a
//! [`Server`] that core's [`throng_core::watch`] reads through an idle window, the load and
//! once after it.
//!
//! The figures ([`figures`]): the broker's `message_stats` (messages published, delivered and
//! fetched, acknowledged, redelivered, confirmed, returned and dropped as unroutable),
//! counters, so their rates idle and under load and their totals are right; and gauges read
//! at each reading: `queue_totals`' messages (ready and unacknowledged, the queues' depth) and
//! the connections and channels open. The broker refreshes these figures every
//! `collect_statistics_interval` (5 s by default), and they lag the messages by about that
//! much (measured on Debian's 3.10.8: 10 messages appeared in `publish` 4.9 s after they were
//! published), so a run reads the broker once more 5.5 s after its load (`SETTLE` of the
//! flags), and its per-second readings show the load's shape late and in steps. Without the
//! plugin there is no API to read: `rabbitmqctl list_queues` gives depths but no message
//! rates, and is not read here.

use std::time::Duration;

use throng_core::watch::{ReadError, Server};
use throng_core::{DatabaseInfo, ErrorClass, Figure};
use throng_net::get::Endpoint;

/// The figures read, in this order: each its name in the result (its path in
/// `/api/overview` after the section, [`SECTIONS`]), label and unit.
pub fn figures() -> Vec<Figure> {
    vec![
        Figure::counter("publish", "messages published", "messages"),
        Figure::counter("deliver_get", "messages delivered or fetched", "messages"),
        Figure::counter("ack", "messages acknowledged", "messages"),
        Figure::counter("redeliver", "messages redelivered", "messages"),
        Figure::counter("confirm", "messages confirmed", "messages"),
        Figure::counter(
            "return_unroutable",
            "messages returned as unroutable",
            "messages",
        ),
        Figure::counter(
            "drop_unroutable",
            "messages dropped as unroutable",
            "messages",
        ),
        Figure::gauge("messages", "messages queued", "messages"),
        Figure::gauge("messages_ready", "messages ready", "messages"),
        Figure::gauge(
            "messages_unacknowledged",
            "messages unacknowledged",
            "messages",
        ),
        Figure::gauge("connections", "connections open", "connections"),
        Figure::gauge("channels", "channels open", "channels"),
    ]
}

/// The section of `/api/overview` each of [`figures`] is in, by their places.
pub const SECTIONS: [&str; 12] = [
    "message_stats",
    "message_stats",
    "message_stats",
    "message_stats",
    "message_stats",
    "message_stats",
    "message_stats",
    "queue_totals",
    "queue_totals",
    "queue_totals",
    "object_totals",
    "object_totals",
];

/// A RabbitMQ management API.
#[derive(Debug, Clone)]
pub struct Overview {
    endpoint: Endpoint,
    timeout: Duration,
    names: Vec<String>,
}

impl Overview {
    /// The API at `url` (`http://[USER:PASS@]HOST[:PORT]`, guest:guest and 15672 by default;
    /// `/api/overview` unless the URL names a path), each reading within `timeout`.
    pub fn new(url: &str, timeout: Duration) -> Result<Overview, String> {
        let endpoint = Endpoint::parse(url, 15672, "/api/overview").map_err(|e| {
            format!(
                "{e}: the management API is http://[USER:PASS@]HOST:PORT (the \
                 rabbitmq_management plugin's, e.g. http://guest:guest@127.0.0.1:15672)"
            )
        })?;
        Ok(Overview {
            endpoint: endpoint.or_login("guest:guest"),
            timeout,
            names: figures().into_iter().map(|f| f.name).collect(),
        })
    }

    /// What the result calls it.
    pub fn name(&self) -> String {
        format!("rabbitmq {}", self.endpoint.shown())
    }
}

impl Server for Overview {
    fn info(&self) -> DatabaseInfo {
        DatabaseInfo {
            name: self.name(),
            kind: "Broker".into(),
            figures: figures(),
            ..DatabaseInfo::default()
        }
    }

    /// One reading (a figure the broker does not show yet, as `message_stats` before any
    /// message, is 0).
    async fn read(&mut self) -> Result<Vec<u64>, ReadError> {
        let v = self.endpoint.get_json(self.timeout).await?;
        let shown = self.endpoint.shown();
        if v.get("queue_totals").is_none() {
            return Err(ReadError::new(
                ErrorClass::Protocol,
                format!("{shown} has no queue_totals: is it RabbitMQ's management API?"),
            ));
        }
        Ok(self
            .names
            .iter()
            .zip(SECTIONS)
            .map(|(name, section)| {
                v.get(section)
                    .and_then(|s| s.get(name))
                    .and_then(|x| x.as_u64())
                    .unwrap_or(0)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_figure_has_its_section() {
        assert_eq!(figures().len(), SECTIONS.len());
        let o = Overview::new("http://h", Duration::from_secs(1)).unwrap();
        assert_eq!(o.name(), "rabbitmq http://h:15672/api/overview");
        assert!(Overview::new("https://h", Duration::from_secs(1)).is_err());
        assert!(Overview::new("http://:1", Duration::from_secs(1)).is_err());
    }
}
