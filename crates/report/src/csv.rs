//! Reports as CSV (RFC 4180): the per-label table with unrounded figures, the one-second
//! series, and the databases' counters (`--db-stats`), for a spreadsheet or a plotting script.

use ::csv::{Terminator, WriterBuilder};

use crate::RunResult;

/// A CSV document written by the csv crate's writer, so every CSV throng writes (these reports,
/// a grid's level table, the JTL samples) quotes alike: a field holding a comma, a quote or a
/// line break is quoted, its quotes doubled (RFC 4180); any other field is written as it is.
pub(crate) struct Csv(::csv::Writer<Vec<u8>>);

impl Csv {
    /// A document whose records end with `end`: CRLF for the reports (RFC 4180), `\n` for JTL
    /// (as JMeter writes it). `capacity` is the writer's buffer: a line's worth for one line.
    pub(crate) fn new(end: Terminator, capacity: usize) -> Csv {
        Csv(WriterBuilder::new()
            .terminator(end)
            // The databases' table may give databases different flows: rows are not all alike.
            .flexible(true)
            .buffer_capacity(capacity.max(64))
            .from_writer(Vec::new()))
    }

    /// A report's document: CRLF line ends.
    pub(crate) fn report() -> Csv {
        Csv::new(Terminator::CRLF, 8 * 1024)
    }

    /// One record of `fields`.
    pub(crate) fn row<T: AsRef<str>>(&mut self, fields: impl IntoIterator<Item = T>) {
        // Writing into memory cannot fail (and rows may differ in length), so there is no
        // error to pass on.
        for f in fields {
            let _ = self.0.write_field(f.as_ref());
        }
        let _ = self.0.write_record(std::iter::empty::<&[u8]>());
    }

    /// The document's text.
    pub(crate) fn finish(self) -> String {
        // Flushing into memory cannot fail, and every field was a `str`: the bytes are UTF-8.
        match self.0.into_inner() {
            Ok(bytes) => String::from_utf8(bytes)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            Err(_) => String::new(),
        }
    }
}

/// The per-label table: one line per label and TOTAL; latencies in ms, rates per second.
pub fn render_csv_table(r: &RunResult) -> String {
    let mut out = Csv::report();
    out.row([
        "label",
        "group",
        "samples",
        "errors",
        "error_rate",
        "throughput",
        "mean_ms",
        "p50_ms",
        "p90_ms",
        "p95_ms",
        "p99_ms",
        "p999_ms",
        "min_ms",
        "max_ms",
        "received_kb_per_s",
        "sent_kb_per_s",
    ]);
    let mut rows: Vec<&crate::LabelResult> = r.labels.iter().collect();
    rows.push(&r.total);
    for (i, l) in rows.iter().enumerate() {
        let total = i == rows.len() - 1;
        let s = &l.latency;
        let lat = |v: f64| {
            if s.count == 0 {
                String::new()
            } else {
                v.to_string()
            }
        };
        out.row([
            if total {
                "TOTAL".into()
            } else {
                l.label.clone()
            },
            l.group.to_string(),
            l.samples.to_string(),
            l.errors.to_string(),
            l.error_rate.to_string(),
            l.throughput.to_string(),
            lat(s.mean),
            lat(s.p50),
            lat(s.p90),
            lat(s.p95),
            lat(s.p99),
            lat(s.p999),
            lat(s.min),
            lat(s.max),
            l.received_kb_per_s.to_string(),
            l.sent_kb_per_s.to_string(),
        ]);
    }
    out.finish()
}

/// The one-second series: one line per second of the run (all labels together).
pub fn render_csv_series(r: &RunResult) -> String {
    let mut out = Csv::report();
    out.row([
        "t",
        "requests",
        "errors",
        "bytes_sent",
        "bytes_received",
        "mean_ms",
        "p50_ms",
        "p90_ms",
        "p95_ms",
        "p99_ms",
        "p999_ms",
        "max_ms",
        "active",
        "target_rate",
    ]);
    for p in &r.series {
        out.row([
            p.t.to_string(),
            p.requests.to_string(),
            p.errors.to_string(),
            p.bytes_sent.to_string(),
            p.bytes_received.to_string(),
            p.mean.to_string(),
            p.p50.to_string(),
            p.p90.to_string(),
            p.p95.to_string(),
            p.p99.to_string(),
            p.p999.to_string(),
            p.max.to_string(),
            p.active.to_string(),
            p.target_rate.to_string(),
        ]);
    }
    out.finish()
}

/// The databases read with `--db-stats`: a line per database and counter (its transactions,
/// committed transactions, statements and statements by kind first), rates per second idle and
/// under load, the load's total, per request and per completed pass of each flow (a column
/// `per_flow:FLOW` each).
pub fn render_csv_databases(r: &RunResult) -> String {
    let mut out = Csv::report();
    let mut head: Vec<String> = [
        "database",
        "counter",
        "idle_per_s",
        "load_per_s",
        "load_total",
        "per_request",
    ]
    .map(String::from)
    .to_vec();
    if let Some(d) = r.databases.first() {
        head.extend(d.flows.iter().map(|f| format!("per_flow:{}", f.flow)));
    }
    out.row(&head);
    for d in &r.databases {
        for row in d.rows(|v| v.to_string()) {
            let mut fields = vec![d.name.clone()];
            fields.extend(
                row.into_iter()
                    .map(|f| if f == "-" { String::new() } else { f }),
            );
            out.row(&fields);
        }
    }
    out.finish()
}

#[cfg(test)]
mod tests {
    use std::fmt;

    use throng_core::{ErrorClass, Sample, StatusClass, StatusSpace};

    use super::Csv;

    fn read_back(text: &str) -> Vec<Vec<String>> {
        let mut r = ::csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(text.as_bytes());
        r.records()
            .map(|rec| rec.expect("a record").iter().map(String::from).collect())
            .collect()
    }

    #[test]
    fn ordinary_fields_are_written_as_they_are() {
        let mut c = Csv::report();
        c.row(["label", "group", "p99_ms", "", "per_flow:buy"]);
        c.row(["GET /a b", "1", "12.5", "", "0.25"]);
        assert_eq!(
            c.finish(),
            "label,group,p99_ms,,per_flow:buy\r\nGET /a b,1,12.5,,0.25\r\n"
        );
    }

    #[test]
    fn awkward_fields_are_quoted_and_read_back_as_written() {
        let rows = [
            ["a,b", "say \"hi\"", "two\nlines", "cr\rlf\r\n", ""],
            ["\"", ",", "é ü 漢", " padded ", "x"],
        ];
        let mut c = Csv::report();
        for r in &rows {
            c.row(r);
        }
        let text = c.finish();
        assert!(
            text.starts_with("\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\"cr\rlf\r\n\",\r\n"),
            "{text:?}"
        );
        assert_eq!(read_back(&text), rows.map(|r| r.map(String::from).to_vec()));
    }

    static SPACE: StatusSpace = StatusSpace {
        name: "test",
        write: |c, f: &mut fmt::Formatter<'_>| write!(f, "{c}"),
        class: |_| StatusClass::Success,
    };

    fn sample(error: Option<ErrorClass>, message: Option<&str>) -> Sample {
        Sample {
            step: 0,
            worker: 0,
            user: 6,
            active: 3,
            due_us: 2_400,
            latency_us: 1_700,
            service_us: 1_200,
            status: SPACE.status(200),
            error,
            message: message.map(String::from),
            bytes_sent: 40,
            bytes_received: 512,
            first_byte_us: None,
            connect_us: 0,
        }
    }

    #[test]
    fn a_jtl_line_is_jmeters_with_awkward_values_quoted() {
        let labels = ["GET /a".to_string()];
        let line = crate::jtl_line(&sample(None, None), 1_000, &labels, &["http://h/a"], 3);
        assert_eq!(
            line,
            "1002,2,GET /a,200,OK,throng 1-7,text,true,,512,40,3,3,http://h/a,1,0,0\n"
        );
        let labels = ["buy, \"fast\"".to_string()];
        let message = "expected 200, got \"500\"\nbody: x";
        let s = sample(Some(ErrorClass::Check), Some(message));
        let line = crate::jtl_line(&s, 1_000, &labels, &["http://h/a?x=1,2"], 3);
        let rows = read_back(&format!("{}\n{line}", crate::JTL_HEADER));
        assert_eq!(rows.len(), 2, "{line:?}");
        assert_eq!(rows[1][2], "buy, \"fast\"");
        assert_eq!(rows[1][4], "check");
        assert_eq!(rows[1][7], "false");
        assert_eq!(rows[1][8], message);
        assert_eq!(rows[1][13], "http://h/a?x=1,2");
        assert_eq!(rows[1].len(), rows[0].len());
    }

    #[test]
    fn a_jtl_lines_latency_and_connect_are_the_phases_when_timed() {
        let labels = ["GET /a".to_string()];
        let mut s = sample(None, None);
        // First byte 1.6 ms after it was due (service time 1.2 ms: JMeter's Latency counts
        // from the start, as elapsed does), 0.6 ms of it opening the connection.
        s.first_byte_us = Some(1_600);
        s.connect_us = 600;
        let line = crate::jtl_line(&s, 1_000, &labels, &["http://h/a"], 3);
        assert_eq!(
            line,
            "1002,2,GET /a,200,OK,throng 1-7,text,true,,512,40,3,3,http://h/a,2,0,1\n"
        );
        s.first_byte_us = Some(700);
        s.connect_us = 2_600;
        let line = crate::jtl_line(&s, 1_000, &labels, &["http://h/a"], 3);
        assert!(line.ends_with(",http://h/a,1,0,3\n"), "{line}");
    }
}
