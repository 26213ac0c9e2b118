//! HPACK (RFC 7541), written for a load generator's two sides of it.
//!
//! Requests: [`Block`] encodes a step's headers once, against the static table only (indexed
//! fields, and literals *without indexing*), so the block neither reads nor changes the server's
//! dynamic table and stays valid on any connection, in any order with any other block; a field
//! a per-call template changes is a slot whose value alone is encoded per call.
//!
//! Responses: [`Decoder`] with the dynamic table and Huffman coding, handing each field to a
//! callback as borrowed bytes, so that a response whose headers nobody keeps allocates nothing
//! but the dynamic table's new entries.

mod decoder;
mod encoder;
mod huffman;
mod table;

pub use decoder::{Decoder, Field};
pub use encoder::{encode_field, Block, BlockBuilder};

/// Why a header block could not be decoded: each is a `COMPRESSION_ERROR`, an error of the
/// whole connection (RFC 7540 section 4.3), since the dynamic table may now differ from the
/// server's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HpackError {
    /// The block ended inside a field.
    Truncated,
    /// An integer beyond what any field or table can need.
    IntegerOverflow,
    /// An index that is 0 or past the end of the tables.
    BadIndex(usize),
    /// A Huffman string with EOS, or padding that is not 0-7 bits of ones.
    Huffman,
    /// A dynamic table size update above the limit we advertised, or after the first field.
    TableSizeUpdate(usize),
}

impl std::fmt::Display for HpackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HpackError::Truncated => write!(f, "HPACK: the header block ends inside a field"),
            HpackError::IntegerOverflow => write!(f, "HPACK: an integer too large"),
            HpackError::BadIndex(i) => write!(f, "HPACK: no table entry {i}"),
            HpackError::Huffman => write!(f, "HPACK: bad Huffman string"),
            HpackError::TableSizeUpdate(n) => {
                write!(
                    f,
                    "HPACK: dynamic table size update to {n} not allowed here"
                )
            }
        }
    }
}

impl std::error::Error for HpackError {}

/// Appends `value` as an HPACK integer with an `n`-bit prefix; `first` holds the bits above the
/// prefix (RFC 7541 section 5.1).
pub fn encode_int(out: &mut Vec<u8>, first: u8, n: u32, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

/// Reads an HPACK integer with an `n`-bit prefix at `*pos`, moving past it. Values are capped
/// at 2^28 (no table, string or size here comes near).
pub(crate) fn decode_int(src: &[u8], pos: &mut usize, n: u32) -> Result<usize, HpackError> {
    let max = (1usize << n) - 1;
    let first = *src.get(*pos).ok_or(HpackError::Truncated)?;
    *pos += 1;
    let mut value = (first as usize) & max;
    if value < max {
        return Ok(value);
    }
    let mut shift = 0;
    loop {
        let b = *src.get(*pos).ok_or(HpackError::Truncated)?;
        *pos += 1;
        value += ((b & 0x7f) as usize) << shift;
        if value > 1 << 28 {
            return Err(HpackError::IntegerOverflow);
        }
        if b & 0x80 == 0 {
            return Ok(value);
        }
        shift += 7;
    }
}

/// Appends a string literal, Huffman-coded when that is shorter.
pub(crate) fn encode_str(out: &mut Vec<u8>, s: &[u8]) {
    let h = huffman::encoded_len(s);
    if h < s.len() {
        encode_int(out, 0x80, 7, h);
        huffman::encode(s, out);
    } else {
        encode_int(out, 0, 7, s.len());
        out.extend_from_slice(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_code_as_rfc_7541_c1_says() {
        // C.1.1: 10 with a 5-bit prefix; C.1.2: 1337 with a 5-bit prefix; C.1.3: 42 at 8 bits.
        for (v, n, wire) in [
            (10, 5, &[0x0a][..]),
            (1337, 5, &[0x1f, 0x9a, 0x0a]),
            (42, 8, &[0x2a]),
        ] {
            let mut out = Vec::new();
            encode_int(&mut out, 0, n, v);
            assert_eq!(out, wire);
            let mut pos = 0;
            assert_eq!(decode_int(wire, &mut pos, n), Ok(v));
            assert_eq!(pos, wire.len());
        }
        let mut pos = 0;
        assert_eq!(
            decode_int(&[0x1f, 0x9a], &mut pos, 5),
            Err(HpackError::Truncated)
        );
        let mut pos = 0;
        let huge = [0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(
            decode_int(&huge, &mut pos, 5),
            Err(HpackError::IntegerOverflow)
        );
    }
}
