//! Numbers as the dashboard prints them: milliseconds with as many decimals as they deserve,
//! counts with thousands separators, byte sizes in binary units, and text measured in terminal
//! columns.

use std::time::Duration;

use unicode_width::UnicodeWidthStr as _;

/// The terminal columns `s` takes: `查询余额` is four characters but eight columns, an emoji two.
/// Measured as ratatui measures when it draws, so a column sized with this holds the text whole.
pub fn width(s: &str) -> usize {
    s.width()
}

/// Microseconds as milliseconds: three significant figures, like the end-of-run table.
pub fn ms(us: u64) -> String {
    throng_core::row::ms(us as f64 / 1000.0)
}

/// A count with thousands separators: `1234567` is `1,234,567`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate per second: whole numbers with separators, one decimal below 100.
pub fn rate(r: f64) -> String {
    if !r.is_finite() || r < 0.0 {
        return "-".into();
    }
    if r >= 100.0 {
        count(r.round() as u64)
    } else {
        format!("{r:.1}")
    }
}

/// A percentage of a fraction, two decimals.
pub fn percent(fraction: f64) -> String {
    format!("{:.2}%", fraction * 100.0)
}

/// Bytes in binary units (`512 B`, `1.5 KiB`, `230 MiB`).
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else if v >= 100.0 {
        format!("{v:.0} {}", UNITS[unit])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// A duration to a tenth of a second below a minute, else minutes and seconds.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 60.0 {
        format!("{s:.1}s")
    } else {
        let whole = d.as_secs();
        let (h, m, sec) = (whole / 3600, whole / 60 % 60, whole % 60);
        if h > 0 {
            format!("{h}h{m:02}m{sec:02}s")
        } else {
            format!("{m}m{sec:02}s")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(ms(1234), "1.23");
        assert_eq!(ms(12_345), "12.3");
        assert_eq!(ms(123_456), "123");
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(rate(12.34), "12.3");
        assert_eq!(rate(12_345.6), "12,346");
        assert_eq!(rate(f64::NAN), "-");
        assert_eq!(percent(0.0123), "1.23%");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(300 * 1024 * 1024), "300 MiB");
        assert_eq!(duration(Duration::from_millis(4_260)), "4.3s");
        assert_eq!(duration(Duration::from_secs(125)), "2m05s");
        assert_eq!(duration(Duration::from_secs(3725)), "1h02m05s");
        assert_eq!(width("GET /"), 5);
        assert_eq!(width("查询余额"), 8);
        assert_eq!(width("🚀 go"), 5);
        assert_eq!(width("café"), 4);
    }
}
