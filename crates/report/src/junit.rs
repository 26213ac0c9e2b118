//! Reports as JUnit XML, which CI systems show as tests: one test case per threshold, and one
//! for the scenario's checks.

use std::fmt::Write as _;

use crate::RunResult;

/// Text made safe inside XML attributes and elements.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 allows no other control characters.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The run as one JUnit test suite: a case per threshold (failed when it failed, with what was
/// observed), and a `checks` case that fails when any scenario check failed.
pub fn render_junit(r: &RunResult) -> String {
    let checks = r.errors.iter().find(|e| e.class == "check");
    let cases = r.thresholds.len() + 1;
    let failures =
        r.thresholds.iter().filter(|t| !t.passed).count() + usize::from(checks.is_some());
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"throng\" tests=\"{cases}\" failures=\"{failures}\" errors=\"0\" time=\"{:.3}\">",
        r.duration
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{cases}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"{:.3}\" timestamp=\"{}\">",
        xml(&format!("{} -> {}", r.description, r.plan.target)),
        r.duration,
        xml(r.started_at.trim_end_matches('Z')),
    );
    for t in &r.thresholds {
        let _ = write!(
            out,
            "    <testcase classname=\"throng.thresholds\" name=\"{}\" time=\"0\"",
            xml(&t.threshold)
        );
        if t.passed {
            out.push_str("/>\n");
        } else {
            let observed = t.observed.map_or("nothing".into(), |o| format!("{o}"));
            let why = t.reason.clone().unwrap_or_default();
            let _ = writeln!(
                out,
                ">\n      <failure message=\"{}\" type=\"threshold\">observed {}{}</failure>\n    </testcase>",
                xml(&format!("{} failed: observed {observed}", t.threshold)),
                xml(&observed),
                xml(&if why.is_empty() { String::new() } else { format!(" ({why})") }),
            );
        }
    }
    out.push_str(
        // The result does not say whether the run had checks: the case says only what it knows.
        "    <testcase classname=\"throng.checks\" name=\"no check failed\" time=\"0\"",
    );
    match checks {
        None => out.push_str("/>\n"),
        Some(e) => {
            let _ = writeln!(
                out,
                ">\n      <failure message=\"{}\" type=\"check\">{}</failure>\n    </testcase>",
                xml(&format!("{} checks failed", e.count)),
                xml(&e.sample),
            );
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}
