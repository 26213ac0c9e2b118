//! The request side: a step's headers encoded once against the static table only.
//!
//! Why a block stays valid on any connection: it holds indexed fields with static indexes
//! (1-61: the static table never changes) and literals *without indexing* (they add nothing to
//! the server's dynamic table), so decoding it neither reads nor writes the dynamic table, and
//! it decodes to the same fields whatever blocks came before it on whichever connection. What
//! a connection may owe its server is a dynamic table size update at the start of the next
//! block after the server lowers `SETTINGS_HEADER_TABLE_SIZE` (RFC 7541 section 4.2); that is
//! the connection's prefix (`conn`), never part of a block.

use super::table::find;
use super::{encode_int, encode_str};

/// Appends one field: indexed when the static table has name and value, else a literal
/// without indexing (its name indexed when the static table has it). `sensitive` makes it
/// never indexed (intermediaries must not index it either: credentials).
pub fn encode_field(out: &mut Vec<u8>, name: &[u8], value: &[u8], sensitive: bool) {
    let first = if sensitive { 0x10 } else { 0x00 };
    match find(name, value) {
        Some((i, true)) if !sensitive => encode_int(out, 0x80, 7, i),
        Some((i, _)) => {
            encode_int(out, first, 4, i);
            encode_str(out, value);
        }
        None => {
            out.push(first);
            encode_str(out, name);
            encode_str(out, value);
        }
    }
}

/// The representation of a field up to its value: a literal without indexing, with the
/// static index of its name or the name itself.
fn field_prefix(out: &mut Vec<u8>, name: &[u8]) {
    match find(name, b"\0") {
        Some((i, _)) => encode_int(out, 0, 4, i),
        None => {
            out.push(0);
            encode_str(out, name);
        }
    }
}

/// A request's header block, encoded once: fixed bytes with slots where a per-call value goes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Block {
    fixed: Vec<u8>,
    /// Per slot: where in `fixed` it goes, and its field's representation up to the value.
    slots: Vec<(usize, Vec<u8>)>,
}

impl Block {
    /// A builder of a block, field by field in the order they are to be sent (pseudo-header
    /// fields first, as HTTP/2 requires).
    pub fn builder() -> BlockBuilder {
        BlockBuilder::default()
    }

    /// The block when it has no slots: the same bytes for every call.
    pub fn fixed(&self) -> Option<&[u8]> {
        self.slots.is_empty().then_some(&self.fixed[..])
    }

    /// How many per-call values [`Block::write`] takes.
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Appends the block with `values` in its slots (in the order the slots were added): the
    /// fixed bytes copied, only the values encoded.
    ///
    /// # Panics
    /// When `values` does not have one value per slot (a caller's bug).
    pub fn write(&self, out: &mut Vec<u8>, values: &[&[u8]]) {
        assert_eq!(values.len(), self.slots.len(), "one value per slot");
        let mut at = 0;
        for ((pos, prefix), value) in self.slots.iter().zip(values) {
            out.extend_from_slice(&self.fixed[at..*pos]);
            out.extend_from_slice(prefix);
            encode_str(out, value);
            at = *pos;
        }
        out.extend_from_slice(&self.fixed[at..]);
    }
}

/// Builds a [`Block`]. Names are lowercased (HTTP/2 requires lowercase names).
#[derive(Debug, Default)]
pub struct BlockBuilder {
    block: Block,
}

impl BlockBuilder {
    /// A field with a fixed value.
    pub fn field(&mut self, name: &str, value: &[u8]) -> &mut Self {
        let name = name.to_ascii_lowercase();
        encode_field(&mut self.block.fixed, name.as_bytes(), value, false);
        self
    }

    /// A field with a fixed value that intermediaries must never index (credentials).
    pub fn sensitive(&mut self, name: &str, value: &[u8]) -> &mut Self {
        let name = name.to_ascii_lowercase();
        encode_field(&mut self.block.fixed, name.as_bytes(), value, true);
        self
    }

    /// A field whose value each call gives ([`Block::write`]'s next value).
    pub fn slot(&mut self, name: &str) -> &mut Self {
        let mut prefix = Vec::new();
        field_prefix(&mut prefix, name.to_ascii_lowercase().as_bytes());
        self.block.slots.push((self.block.fixed.len(), prefix));
        self
    }

    /// The block.
    pub fn build(&mut self) -> Block {
        std::mem::take(&mut self.block)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Decoder;
    use super::*;

    fn decode(block: &[u8]) -> Vec<(String, String)> {
        let mut d = Decoder::new(4096);
        let mut out = Vec::new();
        d.decode(block, |n, v| {
            out.push((
                String::from_utf8_lossy(n).into(),
                String::from_utf8_lossy(v).into(),
            ))
        })
        .unwrap();
        // Nothing entered the dynamic table: the block is valid on any connection.
        assert_eq!(d.table().1, 0);
        out
    }

    #[test]
    fn fields_use_the_static_table_and_never_the_dynamic_one() {
        let mut out = Vec::new();
        encode_field(&mut out, b":method", b"GET", false);
        assert_eq!(out, [0x82]);
        out.clear();
        // RFC 7541 C.2.2's representation, with :path's value plain (Huffman is no shorter).
        encode_field(&mut out, b":path", b"/sample/path", false);
        assert_eq!(out[0], 0x04);
        out.clear();
        encode_field(&mut out, b"password", b"secret", true);
        assert_eq!(out[0], 0x10);
        assert_eq!(decode(&out), [("password".into(), "secret".into())]);
    }

    #[test]
    fn a_block_with_slots_decodes_to_its_fields_in_order_with_each_calls_values() {
        let block = Block::builder()
            .field(":method", b"POST")
            .field(":scheme", b"https")
            .slot(":path")
            .field(":authority", b"example.test:8443")
            .field("Content-Type", b"application/grpc")
            .field("te", b"trailers")
            .slot("x-request-id")
            .build();
        assert_eq!(block.slots(), 2);
        assert!(block.fixed().is_none());
        for (path, id) in [
            ("/a/b", "1"),
            ("/pkg.Svc/Method?q=ü", "a-much-longer-identifier-42"),
        ] {
            let mut out = Vec::new();
            block.write(&mut out, &[path.as_bytes(), id.as_bytes()]);
            let want = [
                (":method", "POST"),
                (":scheme", "https"),
                (":path", path),
                (":authority", "example.test:8443"),
                ("content-type", "application/grpc"),
                ("te", "trailers"),
                ("x-request-id", id),
            ];
            let want: Vec<(String, String)> = want
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect();
            assert_eq!(decode(&out), want);
        }
        let fixed = Block::builder()
            .field(":method", b"GET")
            .field(":path", b"/")
            .build();
        assert_eq!(fixed.fixed(), Some(&[0x82, 0x84][..]));
    }
}
