//! HPACK's Huffman code (RFC 7541 Appendix B).
//!
//! The code is canonical (codes of one length are consecutive, shorter codes sort first), which
//! the decoder relies on: a symbol of up to 8 bits comes from a 256-entry table on the next
//! byte, a longer one from the first length whose last code is not below the next 32 bits. A
//! unit test checks that property of the table.

use super::HpackError;

/// `(code, bits)` of each symbol (RFC 7541 Appendix B), EOS (256) last.
const CODES: [(u32, u8); 257] = [
    (0x1ff8, 13),
    (0x7fffd8, 23),
    (0xfffffe2, 28),
    (0xfffffe3, 28),
    (0xfffffe4, 28),
    (0xfffffe5, 28),
    (0xfffffe6, 28),
    (0xfffffe7, 28),
    (0xfffffe8, 28),
    (0xffffea, 24),
    (0x3ffffffc, 30),
    (0xfffffe9, 28),
    (0xfffffea, 28),
    (0x3ffffffd, 30),
    (0xfffffeb, 28),
    (0xfffffec, 28),
    (0xfffffed, 28),
    (0xfffffee, 28),
    (0xfffffef, 28),
    (0xffffff0, 28),
    (0xffffff1, 28),
    (0xffffff2, 28),
    (0x3ffffffe, 30),
    (0xffffff3, 28),
    (0xffffff4, 28),
    (0xffffff5, 28),
    (0xffffff6, 28),
    (0xffffff7, 28),
    (0xffffff8, 28),
    (0xffffff9, 28),
    (0xffffffa, 28),
    (0xffffffb, 28),
    (0x14, 6),
    (0x3f8, 10),
    (0x3f9, 10),
    (0xffa, 12),
    (0x1ff9, 13),
    (0x15, 6),
    (0xf8, 8),
    (0x7fa, 11),
    (0x3fa, 10),
    (0x3fb, 10),
    (0xf9, 8),
    (0x7fb, 11),
    (0xfa, 8),
    (0x16, 6),
    (0x17, 6),
    (0x18, 6),
    (0x0, 5),
    (0x1, 5),
    (0x2, 5),
    (0x19, 6),
    (0x1a, 6),
    (0x1b, 6),
    (0x1c, 6),
    (0x1d, 6),
    (0x1e, 6),
    (0x1f, 6),
    (0x5c, 7),
    (0xfb, 8),
    (0x7ffc, 15),
    (0x20, 6),
    (0xffb, 12),
    (0x3fc, 10),
    (0x1ffa, 13),
    (0x21, 6),
    (0x5d, 7),
    (0x5e, 7),
    (0x5f, 7),
    (0x60, 7),
    (0x61, 7),
    (0x62, 7),
    (0x63, 7),
    (0x64, 7),
    (0x65, 7),
    (0x66, 7),
    (0x67, 7),
    (0x68, 7),
    (0x69, 7),
    (0x6a, 7),
    (0x6b, 7),
    (0x6c, 7),
    (0x6d, 7),
    (0x6e, 7),
    (0x6f, 7),
    (0x70, 7),
    (0x71, 7),
    (0x72, 7),
    (0xfc, 8),
    (0x73, 7),
    (0xfd, 8),
    (0x1ffb, 13),
    (0x7fff0, 19),
    (0x1ffc, 13),
    (0x3ffc, 14),
    (0x22, 6),
    (0x7ffd, 15),
    (0x3, 5),
    (0x23, 6),
    (0x4, 5),
    (0x24, 6),
    (0x5, 5),
    (0x25, 6),
    (0x26, 6),
    (0x27, 6),
    (0x6, 5),
    (0x74, 7),
    (0x75, 7),
    (0x28, 6),
    (0x29, 6),
    (0x2a, 6),
    (0x7, 5),
    (0x2b, 6),
    (0x76, 7),
    (0x2c, 6),
    (0x8, 5),
    (0x9, 5),
    (0x2d, 6),
    (0x77, 7),
    (0x78, 7),
    (0x79, 7),
    (0x7a, 7),
    (0x7b, 7),
    (0x7ffe, 15),
    (0x7fc, 11),
    (0x3ffd, 14),
    (0x1ffd, 13),
    (0xffffffc, 28),
    (0xfffe6, 20),
    (0x3fffd2, 22),
    (0xfffe7, 20),
    (0xfffe8, 20),
    (0x3fffd3, 22),
    (0x3fffd4, 22),
    (0x3fffd5, 22),
    (0x7fffd9, 23),
    (0x3fffd6, 22),
    (0x7fffda, 23),
    (0x7fffdb, 23),
    (0x7fffdc, 23),
    (0x7fffdd, 23),
    (0x7fffde, 23),
    (0xffffeb, 24),
    (0x7fffdf, 23),
    (0xffffec, 24),
    (0xffffed, 24),
    (0x3fffd7, 22),
    (0x7fffe0, 23),
    (0xffffee, 24),
    (0x7fffe1, 23),
    (0x7fffe2, 23),
    (0x7fffe3, 23),
    (0x7fffe4, 23),
    (0x1fffdc, 21),
    (0x3fffd8, 22),
    (0x7fffe5, 23),
    (0x3fffd9, 22),
    (0x7fffe6, 23),
    (0x7fffe7, 23),
    (0xffffef, 24),
    (0x3fffda, 22),
    (0x1fffdd, 21),
    (0xfffe9, 20),
    (0x3fffdb, 22),
    (0x3fffdc, 22),
    (0x7fffe8, 23),
    (0x7fffe9, 23),
    (0x1fffde, 21),
    (0x7fffea, 23),
    (0x3fffdd, 22),
    (0x3fffde, 22),
    (0xfffff0, 24),
    (0x1fffdf, 21),
    (0x3fffdf, 22),
    (0x7fffeb, 23),
    (0x7fffec, 23),
    (0x1fffe0, 21),
    (0x1fffe1, 21),
    (0x3fffe0, 22),
    (0x1fffe2, 21),
    (0x7fffed, 23),
    (0x3fffe1, 22),
    (0x7fffee, 23),
    (0x7fffef, 23),
    (0xfffea, 20),
    (0x3fffe2, 22),
    (0x3fffe3, 22),
    (0x3fffe4, 22),
    (0x7ffff0, 23),
    (0x3fffe5, 22),
    (0x3fffe6, 22),
    (0x7ffff1, 23),
    (0x3ffffe0, 26),
    (0x3ffffe1, 26),
    (0xfffeb, 20),
    (0x7fff1, 19),
    (0x3fffe7, 22),
    (0x7ffff2, 23),
    (0x3fffe8, 22),
    (0x1ffffec, 25),
    (0x3ffffe2, 26),
    (0x3ffffe3, 26),
    (0x3ffffe4, 26),
    (0x7ffffde, 27),
    (0x7ffffdf, 27),
    (0x3ffffe5, 26),
    (0xfffff1, 24),
    (0x1ffffed, 25),
    (0x7fff2, 19),
    (0x1fffe3, 21),
    (0x3ffffe6, 26),
    (0x7ffffe0, 27),
    (0x7ffffe1, 27),
    (0x3ffffe7, 26),
    (0x7ffffe2, 27),
    (0xfffff2, 24),
    (0x1fffe4, 21),
    (0x1fffe5, 21),
    (0x3ffffe8, 26),
    (0x3ffffe9, 26),
    (0xffffffd, 28),
    (0x7ffffe3, 27),
    (0x7ffffe4, 27),
    (0x7ffffe5, 27),
    (0xfffec, 20),
    (0xfffff3, 24),
    (0xfffed, 20),
    (0x1fffe6, 21),
    (0x3fffe9, 22),
    (0x1fffe7, 21),
    (0x1fffe8, 21),
    (0x7ffff3, 23),
    (0x3fffea, 22),
    (0x3fffeb, 22),
    (0x1ffffee, 25),
    (0x1ffffef, 25),
    (0xfffff4, 24),
    (0xfffff5, 24),
    (0x3ffffea, 26),
    (0x7ffff4, 23),
    (0x3ffffeb, 26),
    (0x7ffffe6, 27),
    (0x3ffffec, 26),
    (0x3ffffed, 26),
    (0x7ffffe7, 27),
    (0x7ffffe8, 27),
    (0x7ffffe9, 27),
    (0x7ffffea, 27),
    (0x7ffffeb, 27),
    (0xffffffe, 28),
    (0x7ffffec, 27),
    (0x7ffffed, 27),
    (0x7ffffee, 27),
    (0x7ffffef, 27),
    (0x7fffff0, 27),
    (0x3ffffee, 26),
    (0x3fffffff, 30),
];

/// The longest code, in bits.
const MAX_LEN: usize = 30;

/// Symbols in code order (by length, then by symbol).
const SORTED: [u16; 257] = {
    let mut out = [0u16; 257];
    let mut n = 0;
    let mut len = 1;
    while len <= MAX_LEN {
        let mut sym = 0;
        while sym < 257 {
            if CODES[sym].1 as usize == len {
                out[n] = sym as u16;
                n += 1;
            }
            sym += 1;
        }
        len += 1;
    }
    out
};

/// Per length: the first code of that length, where its symbols start in [`SORTED`], and the
/// bound (exclusive, left-aligned in 32 bits, as a `u64` so that the last does not overflow)
/// below which a 32-bit window starts with a code of that length or shorter.
const BY_LEN: [(u32, u16, u64); MAX_LEN + 1] = {
    let mut out = [(0u32, 0u16, 0u64); MAX_LEN + 1];
    let mut n = 0;
    let mut len = 1;
    while len <= MAX_LEN {
        let mut first = u32::MAX;
        let mut count = 0u32;
        let mut sym = 0;
        while sym < 257 {
            if CODES[sym].1 as usize == len {
                if CODES[sym].0 < first {
                    first = CODES[sym].0;
                }
                count += 1;
            }
            sym += 1;
        }
        if count == 0 {
            out[len] = (0, n as u16, 0);
        } else {
            let bound = ((first + count) as u64) << (32 - len);
            out[len] = (first, n as u16, bound);
        }
        n += count as usize;
        len += 1;
    }
    // A length without codes takes its predecessor's bound, so the search never stops there.
    let mut len = 1;
    while len <= MAX_LEN {
        if out[len].2 == 0 && len > 1 {
            out[len].2 = out[len - 1].2;
        }
        len += 1;
    }
    out
};

/// For each value of the next 8 bits: the symbol and its length when a code of up to 8 bits
/// starts there, else length 0.
const FAST: [(u8, u8); 256] = {
    let mut out = [(0u8, 0u8); 256];
    let mut sym = 0;
    while sym < 256 {
        let (code, len) = CODES[sym];
        if len <= 8 {
            let shift = 8 - len;
            let base = (code << shift) as usize;
            let mut k = 0;
            while k < (1 << shift) {
                out[base + k] = (sym as u8, len);
                k += 1;
            }
        }
        sym += 1;
    }
    out
};

/// The symbol (256: EOS) at the start of `window` (the next 32 bits, left-aligned) and its
/// length in bits.
#[inline]
fn symbol(window: u32) -> (u16, u32) {
    let (sym, len) = FAST[(window >> 24) as usize];
    if len != 0 {
        return (sym as u16, len as u32);
    }
    let mut len = 9;
    while len < MAX_LEN && (window as u64) >= BY_LEN[len].2 {
        len += 1;
    }
    let (first, at, _) = BY_LEN[len];
    let i = at as u32 + ((window >> (32 - len)) - first);
    (SORTED[i as usize], len as u32)
}

/// Appends the Huffman decoding of `src` to `dst`. Padding must be at most 7 bits, all ones
/// (the start of EOS); EOS itself is an error (RFC 7541 section 5.2).
pub(crate) fn decode(src: &[u8], dst: &mut Vec<u8>) -> Result<(), HpackError> {
    dst.reserve(src.len() * 8 / 5);
    let mut acc: u64 = 0;
    let mut bits: u32 = 0;
    let mut i = 0;
    loop {
        while bits <= 56 && i < src.len() {
            acc = (acc << 8) | src[i] as u64;
            bits += 8;
            i += 1;
        }
        if bits == 0 {
            break;
        }
        let window = ((acc << (64 - bits)) >> 32) as u32;
        let (sym, len) = symbol(window);
        if len > bits {
            break;
        }
        if sym == 256 {
            return Err(HpackError::Huffman);
        }
        dst.push(sym as u8);
        bits -= len;
    }
    let ones = (1u64 << bits) - 1;
    if bits > 7 || acc & ones != ones {
        return Err(HpackError::Huffman);
    }
    Ok(())
}

/// The length of `src` Huffman-coded, in bytes.
pub(crate) fn encoded_len(src: &[u8]) -> usize {
    let bits: usize = src.iter().map(|&b| CODES[b as usize].1 as usize).sum();
    bits.div_ceil(8)
}

/// Appends the Huffman coding of `src` to `dst`, padded with ones.
pub(crate) fn encode(src: &[u8], dst: &mut Vec<u8>) {
    let mut acc: u64 = 0;
    let mut bits: u32 = 0;
    for &b in src {
        let (code, len) = CODES[b as usize];
        acc = (acc << len) | code as u64;
        bits += len as u32;
        while bits >= 8 {
            bits -= 8;
            dst.push((acc >> bits) as u8);
        }
    }
    if bits > 0 {
        let pad = 8 - bits;
        dst.push(((acc << pad) | ((1 << pad) - 1)) as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_is_canonical_so_the_decoders_search_holds() {
        let mut order: Vec<usize> = (0..257).collect();
        order.sort_by_key(|&s| (CODES[s].0 as u64) << (32 - CODES[s].1));
        for w in order.windows(2) {
            assert!(CODES[w[0]].1 <= CODES[w[1]].1, "{w:?}");
        }
        assert_eq!(order.iter().map(|&s| s as u16).collect::<Vec<_>>(), SORTED);
    }

    #[test]
    fn every_symbol_round_trips_alone_and_together() {
        for b in 0..=255u8 {
            let mut enc = Vec::new();
            encode(&[b], &mut enc);
            assert_eq!(enc.len(), encoded_len(&[b]));
            let mut dec = Vec::new();
            decode(&enc, &mut dec).unwrap();
            assert_eq!(dec, [b]);
        }
        let all: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
        let mut enc = Vec::new();
        encode(&all, &mut enc);
        let mut dec = Vec::new();
        decode(&enc, &mut dec).unwrap();
        assert_eq!(dec, all);
    }

    #[test]
    fn the_rfc_examples_code_as_written() {
        // RFC 7541 C.4.1: "www.example.com".
        let mut enc = Vec::new();
        encode(b"www.example.com", &mut enc);
        assert_eq!(
            enc,
            [0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff]
        );
        // C.4.2: "no-cache".
        enc.clear();
        encode(b"no-cache", &mut enc);
        assert_eq!(enc, [0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf]);
    }

    #[test]
    fn bad_padding_and_eos_are_errors() {
        let mut d = Vec::new();
        // 8 bits of ones: padding longer than 7 bits.
        assert_eq!(decode(&[0xff], &mut d), Err(HpackError::Huffman));
        // 'a' is 00011 (5 bits); padding of zeros.
        assert_eq!(decode(&[0b0001_1000], &mut d), Err(HpackError::Huffman));
        d.clear();
        decode(&[0b0001_1111], &mut d).unwrap();
        assert_eq!(d, b"a");
        // EOS encoded in full (30 ones) and padded.
        assert_eq!(
            decode(&[0xff, 0xff, 0xff, 0xff], &mut d),
            Err(HpackError::Huffman)
        );
    }
}
