//! JMeter's CSV results format (JTL), one line per request, so JMeter's own tools read a
//! throng run (`jmeter -g samples.jtl -o report/` draws JMeter's HTML dashboard).
//!
//! The header is JMeter 5.6's default. `Latency` is JMeter's time to first byte: from the
//! request's start (its `timeStamp`, when it was due, as `elapsed` counts) to the answer's first
//! byte, connecting included; `Connect` is the time to open its connection, TLS handshake
//! included, 0 on a reused one, as JMeter has them (a request that got no byte back has a
//! `Latency` of 0, as in JMeter). Both come from the protocol's phases (see
//! `throng_core::phase`); for a protocol that times no first byte, `Latency` holds the service
//! time (sent to last byte) and `Connect` is 0.

use throng_core::Sample;

use crate::csv::Csv;

/// JMeter 5.6's default header.
pub const JTL_HEADER: &str = "timeStamp,elapsed,label,responseCode,responseMessage,threadName,\
dataType,success,failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect";

/// One request as a JTL line (with its line break): `start_ms` is the run's start, epoch
/// milliseconds; `labels` the run's step labels; `urls` each step's target (the run's target
/// for a step without one); `active` the users alive then (JMeter's active threads). The thread
/// is the virtual user (`throng 1-7` is user 7), as JMeter names its threads.
pub fn jtl_line(
    s: &Sample,
    start_ms: u64,
    labels: &[String],
    urls: &[&str],
    active: u64,
) -> String {
    let label = labels.get(s.step as usize).map_or("", String::as_str);
    let url = urls
        .get(s.step as usize)
        .or(urls.last())
        .copied()
        .unwrap_or("");
    // As its protocol writes it (`200`, `grpc 14 UNAVAILABLE`); none is an empty code.
    let code = match s.status.is_none() {
        true => String::new(),
        false => s.status.to_string(),
    };
    let message = match s.error {
        None => "OK".to_string(),
        Some(class) => class.name().to_string(),
    };
    let failure = match (s.error, &s.message) {
        (None, _) => String::new(),
        (Some(_), Some(m)) => m.clone(),
        (Some(class), None) => class.name().to_string(),
    };
    let active = active.to_string();
    // Quoted as every CSV throng writes (`Csv`), line ends as JMeter's own.
    let mut line = Csv::new(::csv::Terminator::Any(b'\n'), 256);
    let fields: [&str; 17] = [
        &(start_ms + s.due_us / 1000).to_string(),
        &((s.latency_us + 500) / 1000).to_string(),
        label,
        &code,
        &message,
        &format!("throng 1-{}", s.user + 1),
        "text",
        if s.error.is_none() { "true" } else { "false" },
        &failure,
        &s.bytes_received.to_string(),
        &s.bytes_sent.to_string(),
        &active,
        &active,
        url,
        &((s.first_byte_us.unwrap_or(s.service_us) + 500) / 1000).to_string(),
        "0",
        &((s.connect_us + 500) / 1000).to_string(),
    ];
    line.row(fields);
    line.finish()
}
