//! HdrHistogram helpers: one shape for every latency histogram, and the exact, mergeable text
//! encoding used in results (V2 + DEFLATE + base64, the `HISTF...` strings that Java and Go
//! HdrHistogram tools read too).

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
pub use hdrhistogram::Histogram;

/// Values are microseconds: 1 µs resolution, 3 significant figures.
pub const SIGFIGS: u8 = 3;
/// The largest value tracked exactly: one hour in microseconds. Larger values are clamped.
pub const MAX_US: u64 = 3_600_000_000;

/// A new, empty latency histogram in microseconds, whose counts grow only as far as the largest
/// value recorded (HdrHistogram's auto-resize).
///
/// Sized for [`MAX_US`] from the start, a histogram took 377 KB, and a run holds dozens (three
/// a row and six for its phases, per worker, per interval handed over, in the aggregator's
/// totals and in each snapshot): 18 of the 22 MB of heap at 1,000 connections (heaptrack).
/// Grown to the values seen, one of latencies under 100 ms takes 64 KB and an empty one 16 KB;
/// recording costs the same (the one bounds check it always made), and adding and copying
/// them each second touch less memory.
pub fn new() -> Histogram<u64> {
    // Proven invariant: these bounds are valid (1 <= low, high >= 2 * low, sigfigs <= 5).
    #[allow(clippy::unwrap_used)]
    Histogram::new(SIGFIGS).unwrap()
}

/// Records one value, clamping it into the tracked range so that recording never fails.
#[inline]
pub fn record(h: &mut Histogram<u64>, micros: u64) {
    record_n(h, micros, 1);
}

/// Records `n` of a value, clamped into the tracked range: a histogram of [`new`] grows to
/// hold it (HdrHistogram's `saturating_record` would clamp it to the size so far instead); one
/// made otherwise, with fixed bounds, clamps it to them.
#[inline]
fn record_n(h: &mut Histogram<u64>, micros: u64, n: u64) {
    let v = micros.clamp(1, MAX_US);
    if h.record_n(v, n).is_err() {
        h.saturating_record_n(v, n);
    }
}

/// The x of a percentile on the spectrum's axis: `log10(1 / (1 - q))`, so 90% is 1, 99% is 2,
/// 99.9% is 3 (HdrHistogram's own plotting convention).
pub fn spectrum_x(q: f64) -> f64 {
    (1.0 / (1.0 - q).max(1e-7)).log10()
}

/// The percentile of an x on the spectrum's axis, as people write it (`99.9%`).
pub fn spectrum_label(x: f64) -> String {
    let q = 100.0 * (1.0 - 10f64.powf(-x));
    let s = format!("{q:.5}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// The percentile spectrum of a latency histogram: `(x, ms)` points, x on the axis of
/// [`spectrum_x`], fifty a decade up to 99.999% or as far as the samples reach (the HTML
/// report and the dashboard draw the same curve). Empty for an empty histogram.
pub fn spectrum(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut x = 0.0;
    let top = spectrum_x(1.0 - 1.0 / h.len() as f64).min(5.0);
    while x <= top + 1e-9 {
        let q = 1.0 - 10f64.powf(-x);
        out.push((x, h.value_at_quantile(q) as f64 / 1000.0));
        x += 0.02;
    }
    out
}

/// Why an encoded histogram could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The text was not base64.
    #[error("not base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// The bytes were not a V2 histogram.
    #[error("not an HdrHistogram: {0:?}")]
    Hdr(hdrhistogram::serialization::DeserializeError),
}

/// Why a histogram could not be encoded (a count past what the V2 format holds).
#[derive(Debug, thiserror::Error)]
#[error("the histogram cannot be serialized: {0:?}")]
pub struct EncodeError(hdrhistogram::serialization::V2DeflateSerializeError);

/// Encodes a histogram as base64 of its V2+DEFLATE serialization.
///
/// The same counts always give the same text: a histogram is encoded as [`decode`] rebuilds it
/// (the header holds the highest trackable value, which HdrHistogram sets one way when a
/// record grows a histogram and another when an add does), so a result read back and written
/// again is unchanged.
pub fn encode(h: &Histogram<u64>) -> Result<String, EncodeError> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(&rebuilt(h), &mut bytes)
        .map_err(EncodeError)?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// The histogram with the same counts, grown by recording them (see [`encode`]).
fn rebuilt(from: &Histogram<u64>) -> Histogram<u64> {
    let mut h = new();
    for v in from.iter_recorded() {
        record_n(&mut h, v.value_iterated_to(), v.count_at_value());
    }
    h
}

/// Decodes a histogram produced by [`encode`] (or by any HdrHistogram V2 implementation).
pub fn decode(text: &str) -> Result<Histogram<u64>, DecodeError> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(text)?;
    let decoded: Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(DecodeError::Hdr)?;
    // Rebuilt in our shape: it grows, and its values are clamped as ours are.
    Ok(rebuilt(&decoded))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_merge_is_exact() {
        let mut a = new();
        let mut b = new();
        let mut all = new();
        for i in 1..20_000u64 {
            let v = (i * 7919) % 2_000_000 + 1;
            if i % 3 == 0 {
                record(&mut a, v);
            } else {
                record(&mut b, v);
            }
            record(&mut all, v);
        }
        let text = encode(&a).unwrap();
        assert!(text.starts_with("HISTF"), "{text}");
        let mut merged = decode(&text).unwrap();
        merged.add(decode(&encode(&b).unwrap()).unwrap()).unwrap();
        assert_eq!(merged.len(), all.len());
        for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(merged.value_at_quantile(q), all.value_at_quantile(q));
        }
        assert_eq!(merged.max(), all.max());
        assert_eq!(merged.min(), all.min());
    }

    #[test]
    fn grows_to_the_values_recorded_and_adds_across_sizes() {
        let mut small = new();
        let empty = small.distinct_values();
        record(&mut small, 900);
        assert_eq!(small.distinct_values(), empty, "900 µs fits the first size");
        let mut large = new();
        record(&mut large, 90_000);
        record(&mut large, 3_000_000);
        assert!(large.distinct_values() > 4 * empty, "grew to hold 3 s");
        assert!(large.max() >= 3_000_000);
        // Either way round, adding grows the smaller one: nothing is dropped.
        let mut a = small.clone();
        a.add(&large).unwrap();
        let mut b = large.clone();
        b.add(&small).unwrap();
        for h in [&a, &b] {
            assert_eq!(h.len(), 3);
            assert_eq!(h.min(), 900);
            assert_eq!(h.max(), large.max());
        }
        // A decoded histogram grows as well (it is rebuilt in our shape).
        let mut d = decode(&encode(&small).unwrap()).unwrap();
        d.add(&large).unwrap();
        assert_eq!(d.len(), 3);
        // Grown by adding or by recording, the same counts encode the same, read back or not.
        let text = encode(&b).unwrap();
        assert_eq!(encode(&a).unwrap(), text);
        assert_eq!(encode(&decode(&text).unwrap()).unwrap(), text);
    }

    #[test]
    fn clamps_instead_of_failing() {
        let mut h = new();
        record(&mut h, 0);
        record(&mut h, u64::MAX);
        assert_eq!(h.len(), 2);
        assert_eq!(h.min(), 1);
        assert!(h.max() >= MAX_US);
    }
}
