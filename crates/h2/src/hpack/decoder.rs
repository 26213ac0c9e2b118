//! The response side: header blocks to fields, with the dynamic table.

use std::collections::VecDeque;

use super::table::STATIC;
use super::{decode_int, huffman, HpackError};

/// An entry's overhead in the table's size (RFC 7541 section 4.1).
const ENTRY_OVERHEAD: usize = 32;

/// One dynamic table entry: name and value in one allocation.
struct Entry {
    bytes: Box<[u8]>,
    name_len: usize,
}

impl Entry {
    fn name(&self) -> &[u8] {
        &self.bytes[..self.name_len]
    }
    fn value(&self) -> &[u8] {
        &self.bytes[self.name_len..]
    }
    fn size(&self) -> usize {
        self.bytes.len() + ENTRY_OVERHEAD
    }
}

/// A field's name and value.
pub type Field<'a> = (&'a [u8], &'a [u8]);

/// An HPACK decoder: one per connection, fed every header block of the connection in order.
pub struct Decoder {
    /// Newest first.
    table: VecDeque<Entry>,
    size: usize,
    /// The table's maximum size now (the server's encoder sets it by size updates).
    max: usize,
    /// The most it may be: our `SETTINGS_HEADER_TABLE_SIZE`.
    limit: usize,
    /// Huffman-decoded name and value of the field being decoded, reused.
    name_buf: Vec<u8>,
    value_buf: Vec<u8>,
}

/// Where a string of a field is: in the block (plain) or in a scratch buffer (Huffman).
#[derive(Clone, Copy)]
enum Str {
    Block(usize, usize),
    Scratch,
}

impl Decoder {
    /// A decoder for a connection on which we advertised `SETTINGS_HEADER_TABLE_SIZE = limit`
    /// (4096 if we sent none): the table starts at that size.
    pub fn new(limit: usize) -> Self {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max: limit,
            limit,
            name_buf: Vec::new(),
            value_buf: Vec::new(),
        }
    }

    /// A new `SETTINGS_HEADER_TABLE_SIZE` of ours, acknowledged: the most a size update may
    /// ask. A lower limit shrinks the table at once.
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
        if self.max > limit {
            self.max = limit;
            self.evict(0);
        }
    }

    /// The table's entries, newest first, and its size (for tests and diagnostics).
    pub fn table(&self) -> (Vec<Field<'_>>, usize) {
        let entries = self.table.iter().map(|e| (e.name(), e.value())).collect();
        (entries, self.size)
    }

    /// Decodes one whole header block (HEADERS and its CONTINUATIONs joined), calling `field`
    /// with each field's name and value in order. On an error the connection is done: the
    /// table may no longer match the server's.
    pub fn decode(
        &mut self,
        block: &[u8],
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        let mut pos = 0;
        let mut first = true;
        while pos < block.len() {
            let b = block[pos];
            if b & 0x80 != 0 {
                // Indexed field.
                let i = decode_int(block, &mut pos, 7)?;
                let (n, v) = self.get(i)?;
                field(n, v);
            } else if b & 0x40 != 0 {
                // Literal with incremental indexing.
                let (name, value) = self.literal(block, &mut pos, 6)?;
                let entry = self.entry(block, name, value)?;
                let (n, v) = (
                    &entry.bytes[..entry.name_len],
                    &entry.bytes[entry.name_len..],
                );
                field(n, v);
                self.insert(entry);
            } else if b & 0x20 != 0 {
                // Dynamic table size update: only before the first field.
                let n = decode_int(block, &mut pos, 5)?;
                if !first || n > self.limit {
                    return Err(HpackError::TableSizeUpdate(n));
                }
                self.max = n;
                self.evict(0);
                continue;
            } else {
                // Literal without indexing (0000) or never indexed (0001).
                let (name, value) = self.literal(block, &mut pos, 4)?;
                let (n, v) = self.resolve(block, name, value)?;
                field(n, v);
            }
            first = false;
        }
        Ok(())
    }

    /// A literal field's name (`Ok(index)` when indexed) and value, after a representation
    /// whose index has an `n`-bit prefix.
    #[allow(clippy::type_complexity)]
    fn literal(
        &mut self,
        block: &[u8],
        pos: &mut usize,
        n: u32,
    ) -> Result<(Result<usize, Str>, Str), HpackError> {
        let i = decode_int(block, pos, n)?;
        let name = if i == 0 {
            let mut buf = std::mem::take(&mut self.name_buf);
            let s = read_str(block, pos, &mut buf);
            self.name_buf = buf;
            Err(s?)
        } else {
            self.get(i)?;
            Ok(i)
        };
        let mut buf = std::mem::take(&mut self.value_buf);
        let value = read_str(block, pos, &mut buf);
        self.value_buf = buf;
        Ok((name, value?))
    }

    /// A literal's name and value as bytes: from the tables, the block, or the scratch buffers.
    fn resolve<'a>(
        &'a self,
        block: &'a [u8],
        name: Result<usize, Str>,
        value: Str,
    ) -> Result<Field<'a>, HpackError> {
        let n: &[u8] = match name {
            Ok(i) => self.get(i)?.0,
            Err(Str::Block(a, b)) => &block[a..b],
            Err(Str::Scratch) => &self.name_buf,
        };
        let v: &[u8] = match value {
            Str::Block(a, b) => &block[a..b],
            Str::Scratch => &self.value_buf,
        };
        Ok((n, v))
    }

    /// A new entry from a literal's name and value (copied before any eviction, since the name
    /// may be an entry that the insertion evicts).
    fn entry(
        &self,
        block: &[u8],
        name: Result<usize, Str>,
        value: Str,
    ) -> Result<Entry, HpackError> {
        let (n, v) = self.resolve(block, name, value)?;
        let mut bytes = Vec::with_capacity(n.len() + v.len());
        bytes.extend_from_slice(n);
        bytes.extend_from_slice(v);
        Ok(Entry {
            bytes: bytes.into_boxed_slice(),
            name_len: n.len(),
        })
    }

    /// The name and value at 1-based index `i` of the static and dynamic tables.
    fn get(&self, i: usize) -> Result<(&[u8], &[u8]), HpackError> {
        if i == 0 {
            return Err(HpackError::BadIndex(0));
        }
        if i <= STATIC.len() {
            let (n, v) = STATIC[i - 1];
            return Ok((n.as_bytes(), v.as_bytes()));
        }
        match self.table.get(i - STATIC.len() - 1) {
            Some(e) => Ok((e.name(), e.value())),
            None => Err(HpackError::BadIndex(i)),
        }
    }

    /// Adds an entry, evicting the oldest to make room; one larger than the table empties it.
    fn insert(&mut self, entry: Entry) {
        let size = entry.size();
        if size > self.max {
            self.table.clear();
            self.size = 0;
            return;
        }
        self.evict(size);
        self.size += size;
        self.table.push_front(entry);
    }

    /// Evicts the oldest entries until `room` more bytes fit under the maximum.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max {
            match self.table.pop_back() {
                Some(e) => self.size -= e.size(),
                None => break,
            }
        }
    }
}

/// Reads a string literal at `*pos`: its place in the block, or decoded into `buf` (Huffman).
fn read_str(block: &[u8], pos: &mut usize, buf: &mut Vec<u8>) -> Result<Str, HpackError> {
    let huff = block.get(*pos).ok_or(HpackError::Truncated)? & 0x80 != 0;
    let len = decode_int(block, pos, 7)?;
    let start = *pos;
    let end = start.checked_add(len).ok_or(HpackError::Truncated)?;
    if end > block.len() {
        return Err(HpackError::Truncated);
    }
    *pos = end;
    if huff {
        buf.clear();
        huffman::decode(&block[start..end], buf)?;
        Ok(Str::Scratch)
    } else {
        Ok(Str::Block(start, end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn fields(d: &mut Decoder, wire: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        d.decode(&hex(wire), |n, v| {
            out.push((
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            ))
        })
        .unwrap();
        out
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    fn table(d: &Decoder) -> (Vec<(String, String)>, usize) {
        let (t, size) = d.table();
        let t = t
            .into_iter()
            .map(|(n, v)| {
                (
                    String::from_utf8_lossy(n).into(),
                    String::from_utf8_lossy(v).into(),
                )
            })
            .collect();
        (t, size)
    }

    #[test]
    fn rfc_7541_c2_field_representations() {
        // C.2.1: literal with indexing, new name.
        let mut d = Decoder::new(4096);
        let got = fields(
            &mut d,
            "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
        );
        assert_eq!(got, pairs(&[("custom-key", "custom-header")]));
        assert_eq!(table(&d), (pairs(&[("custom-key", "custom-header")]), 55));
        // C.2.2: literal without indexing, indexed name.
        let mut d = Decoder::new(4096);
        let got = fields(&mut d, "040c 2f73 616d 706c 652f 7061 7468");
        assert_eq!(got, pairs(&[(":path", "/sample/path")]));
        assert_eq!(table(&d).1, 0);
        // C.2.3: never indexed, new name.
        let got = fields(&mut d, "1008 7061 7373 776f 7264 0673 6563 7265 74");
        assert_eq!(got, pairs(&[("password", "secret")]));
        assert_eq!(table(&d).1, 0);
        // C.2.4: indexed.
        assert_eq!(fields(&mut d, "82"), pairs(&[(":method", "GET")]));
    }

    /// C.3 (plain) and C.4 (Huffman): three requests on one connection.
    #[test]
    fn rfc_7541_c3_and_c4_request_sequences() {
        let blocks = [
            [
                "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                "8286 84be 5808 6e6f 2d63 6163 6865",
                "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
            ],
            [
                "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
                "8286 84be 5886 a8eb 1064 9cbf",
                "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
            ],
        ];
        for wire in blocks {
            let mut d = Decoder::new(4096);
            let base = [
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
            ];
            assert_eq!(fields(&mut d, wire[0]), pairs(&base));
            assert_eq!(table(&d), (pairs(&[(":authority", "www.example.com")]), 57));
            let mut second = base.to_vec();
            second.push(("cache-control", "no-cache"));
            assert_eq!(fields(&mut d, wire[1]), pairs(&second));
            assert_eq!(table(&d).1, 110);
            let third = [
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/index.html"),
                (":authority", "www.example.com"),
                ("custom-key", "custom-value"),
            ];
            assert_eq!(fields(&mut d, wire[2]), pairs(&third));
            let t = [
                ("custom-key", "custom-value"),
                ("cache-control", "no-cache"),
                (":authority", "www.example.com"),
            ];
            assert_eq!(table(&d), (pairs(&t), 164));
        }
    }

    /// C.5 (plain) and C.6 (Huffman): three responses with a 256-byte table, evicting.
    #[test]
    fn rfc_7541_c5_and_c6_response_sequences_evict() {
        let blocks = [
            [
                "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 \
                 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 \
                 6c65 2e63 6f6d",
                "4803 3330 37c1 c0bf",
                "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d \
                 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 \
                 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e \
                 3d31",
            ],
            [
                "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 \
                 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
                "4883 640e ffc1 c0bf",
                "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab \
                 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f \
                 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
            ],
        ];
        let date1 = "Mon, 21 Oct 2013 20:13:21 GMT";
        let date2 = "Mon, 21 Oct 2013 20:13:22 GMT";
        let loc = "https://www.example.com";
        let cookie = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
        for wire in blocks {
            let mut d = Decoder::new(256);
            let first = [
                (":status", "302"),
                ("cache-control", "private"),
                ("date", date1),
                ("location", loc),
            ];
            assert_eq!(fields(&mut d, wire[0]), pairs(&first));
            let t = [
                ("location", loc),
                ("date", date1),
                ("cache-control", "private"),
                (":status", "302"),
            ];
            assert_eq!(table(&d), (pairs(&t), 222));
            let second = [
                (":status", "307"),
                ("cache-control", "private"),
                ("date", date1),
                ("location", loc),
            ];
            assert_eq!(fields(&mut d, wire[1]), pairs(&second));
            let t = [
                (":status", "307"),
                ("location", loc),
                ("date", date1),
                ("cache-control", "private"),
            ];
            assert_eq!(table(&d), (pairs(&t), 222));
            let third = [
                (":status", "200"),
                ("cache-control", "private"),
                ("date", date2),
                ("location", loc),
                ("content-encoding", "gzip"),
                ("set-cookie", cookie),
            ];
            assert_eq!(fields(&mut d, wire[2]), pairs(&third));
            let t = [
                ("set-cookie", cookie),
                ("content-encoding", "gzip"),
                ("date", date2),
            ];
            assert_eq!(table(&d), (pairs(&t), 215));
        }
    }

    #[test]
    fn size_updates_are_bounded_by_our_setting_and_only_come_first() {
        let mut d = Decoder::new(4096);
        fields(
            &mut d,
            "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
        );
        // An update to 0 empties the table, then to 4096 is allowed again.
        assert_eq!(
            fields(&mut d, "20 3fe1 1f 82"),
            pairs(&[(":method", "GET")])
        );
        assert_eq!(table(&d).1, 0);
        // Above our limit.
        let e = d.decode(&hex("3fe2 1f"), |_, _| {});
        assert_eq!(e, Err(HpackError::TableSizeUpdate(4097)));
        // After a field.
        let e = d.decode(&hex("82 20"), |_, _| {});
        assert_eq!(e, Err(HpackError::TableSizeUpdate(0)));
        // A lower limit of ours shrinks the table at once.
        let mut d = Decoder::new(4096);
        fields(
            &mut d,
            "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
        );
        d.set_limit(40);
        assert_eq!(table(&d).1, 0);
    }

    #[test]
    fn bad_blocks_are_errors_not_panics() {
        let mut d = Decoder::new(4096);
        assert_eq!(d.decode(&[0x80], |_, _| {}), Err(HpackError::BadIndex(0)));
        assert_eq!(d.decode(&[0xbe], |_, _| {}), Err(HpackError::BadIndex(62)));
        assert_eq!(
            d.decode(&[0x04, 0x05, b'a'], |_, _| {}),
            Err(HpackError::Truncated)
        );
        assert_eq!(d.decode(&[0x40], |_, _| {}), Err(HpackError::Truncated));
        assert_eq!(
            d.decode(&[0x00, 0x81, 0xff, 0x00], |_, _| {}),
            Err(HpackError::Huffman)
        );
    }

    /// Every short byte string decodes to fields or an error, never a panic (a cheap fuzz).
    #[test]
    fn arbitrary_short_blocks_never_panic() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            let mut d = Decoder::new(256);
            let len = (x % 24) as usize;
            let mut block = Vec::with_capacity(len);
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                block.push(x as u8);
            }
            let _ = d.decode(&block, |_, _| {});
            assert!(d.table().1 <= 256);
        }
    }
}
