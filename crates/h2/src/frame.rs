//! HTTP/2 frames (RFC 9113 section 4 and 6): types, flags, error codes, settings, and writing
//! a frame header. Reading is the connection's (`conn.rs`), which parses in place.

/// The 9-byte frame header's length.
pub const HEADER_LEN: usize = 9;
/// The client connection preface (RFC 9113 section 3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// The default and smallest SETTINGS_MAX_FRAME_SIZE.
pub const DEFAULT_MAX_FRAME: u32 = 16_384;
/// The largest frame size a peer may allow.
pub const MAX_MAX_FRAME: u32 = (1 << 24) - 1;
/// The initial flow-control window of a stream and of the connection.
pub const DEFAULT_WINDOW: u32 = 65_535;
/// The largest window.
pub const MAX_WINDOW: i64 = (1 << 31) - 1;

/// Frame types.
pub mod kind {
    /// DATA.
    pub const DATA: u8 = 0x0;
    /// HEADERS.
    pub const HEADERS: u8 = 0x1;
    /// PRIORITY (deprecated; read and ignored).
    pub const PRIORITY: u8 = 0x2;
    /// RST_STREAM.
    pub const RST_STREAM: u8 = 0x3;
    /// SETTINGS.
    pub const SETTINGS: u8 = 0x4;
    /// PUSH_PROMISE (we disable push, so receiving one is an error).
    pub const PUSH_PROMISE: u8 = 0x5;
    /// PING.
    pub const PING: u8 = 0x6;
    /// GOAWAY.
    pub const GOAWAY: u8 = 0x7;
    /// WINDOW_UPDATE.
    pub const WINDOW_UPDATE: u8 = 0x8;
    /// CONTINUATION.
    pub const CONTINUATION: u8 = 0x9;
}

/// Frame flags.
pub mod flag {
    /// DATA, HEADERS: the last frame of the stream from its sender.
    pub const END_STREAM: u8 = 0x1;
    /// SETTINGS, PING: an acknowledgement.
    pub const ACK: u8 = 0x1;
    /// HEADERS, CONTINUATION: the header block ends here.
    pub const END_HEADERS: u8 = 0x4;
    /// DATA, HEADERS: padded.
    pub const PADDED: u8 = 0x8;
    /// HEADERS: a priority block follows the pad length.
    pub const PRIORITY: u8 = 0x20;
}

/// SETTINGS identifiers.
pub mod setting {
    /// SETTINGS_HEADER_TABLE_SIZE.
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    /// SETTINGS_ENABLE_PUSH.
    pub const ENABLE_PUSH: u16 = 0x2;
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    /// SETTINGS_INITIAL_WINDOW_SIZE.
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    /// SETTINGS_MAX_FRAME_SIZE.
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    /// SETTINGS_MAX_HEADER_LIST_SIZE.
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
}

/// An HTTP/2 error code (RFC 9113 section 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reason(pub u32);

impl Reason {
    /// NO_ERROR.
    pub const NO_ERROR: Reason = Reason(0x0);
    /// PROTOCOL_ERROR.
    pub const PROTOCOL_ERROR: Reason = Reason(0x1);
    /// INTERNAL_ERROR.
    pub const INTERNAL_ERROR: Reason = Reason(0x2);
    /// FLOW_CONTROL_ERROR.
    pub const FLOW_CONTROL_ERROR: Reason = Reason(0x3);
    /// SETTINGS_TIMEOUT.
    pub const SETTINGS_TIMEOUT: Reason = Reason(0x4);
    /// STREAM_CLOSED.
    pub const STREAM_CLOSED: Reason = Reason(0x5);
    /// FRAME_SIZE_ERROR.
    pub const FRAME_SIZE_ERROR: Reason = Reason(0x6);
    /// REFUSED_STREAM: the server did not process the stream; it may be retried.
    pub const REFUSED_STREAM: Reason = Reason(0x7);
    /// CANCEL.
    pub const CANCEL: Reason = Reason(0x8);
    /// COMPRESSION_ERROR.
    pub const COMPRESSION_ERROR: Reason = Reason(0x9);
    /// CONNECT_ERROR.
    pub const CONNECT_ERROR: Reason = Reason(0xa);
    /// ENHANCE_YOUR_CALM.
    pub const ENHANCE_YOUR_CALM: Reason = Reason(0xb);
    /// INADEQUATE_SECURITY.
    pub const INADEQUATE_SECURITY: Reason = Reason(0xc);
    /// HTTP_1_1_REQUIRED.
    pub const HTTP_1_1_REQUIRED: Reason = Reason(0xd);

    /// The code's name in RFC 9113, or its number.
    pub fn name(self) -> std::borrow::Cow<'static, str> {
        const NAMES: [&str; 14] = [
            "NO_ERROR",
            "PROTOCOL_ERROR",
            "INTERNAL_ERROR",
            "FLOW_CONTROL_ERROR",
            "SETTINGS_TIMEOUT",
            "STREAM_CLOSED",
            "FRAME_SIZE_ERROR",
            "REFUSED_STREAM",
            "CANCEL",
            "COMPRESSION_ERROR",
            "CONNECT_ERROR",
            "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY",
            "HTTP_1_1_REQUIRED",
        ];
        match NAMES.get(self.0 as usize) {
            Some(n) => (*n).into(),
            None => format!("error code {:#x}", self.0).into(),
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

/// Appends a frame header.
#[inline]
pub fn write_header(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    debug_assert!(len <= MAX_MAX_FRAME as usize);
    let l = (len as u32).to_be_bytes();
    out.extend_from_slice(&[l[1], l[2], l[3], kind, flags]);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
}

/// A frame header read from 9 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// The payload's length.
    pub len: usize,
    /// The frame type.
    pub kind: u8,
    /// Its flags.
    pub flags: u8,
    /// The stream (the reserved bit cleared).
    pub stream: u32,
}

impl Head {
    /// Reads the header at the start of `b` (at least 9 bytes).
    #[inline]
    pub fn read(b: &[u8]) -> Head {
        Head {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]) as usize,
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }
}

/// Appends a SETTINGS frame with `pairs`.
pub fn write_settings(out: &mut Vec<u8>, pairs: &[(u16, u32)]) {
    write_header(out, pairs.len() * 6, kind::SETTINGS, 0, 0);
    for (id, v) in pairs {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// Appends a WINDOW_UPDATE frame.
pub fn write_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    write_header(out, 4, kind::WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

/// Appends a RST_STREAM frame.
pub fn write_rst(out: &mut Vec<u8>, stream: u32, reason: Reason) {
    write_header(out, 4, kind::RST_STREAM, 0, stream);
    out.extend_from_slice(&reason.0.to_be_bytes());
}

/// Appends a GOAWAY frame.
pub fn write_goaway(out: &mut Vec<u8>, last: u32, reason: Reason, debug: &[u8]) {
    write_header(out, 8 + debug.len(), kind::GOAWAY, 0, 0);
    out.extend_from_slice(&last.to_be_bytes());
    out.extend_from_slice(&reason.0.to_be_bytes());
    out.extend_from_slice(debug);
}

/// Appends a PING frame.
pub fn write_ping(out: &mut Vec<u8>, ack: bool, payload: [u8; 8]) {
    write_header(out, 8, kind::PING, if ack { flag::ACK } else { 0 }, 0);
    out.extend_from_slice(&payload);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_reads_back_as_written_with_the_reserved_bit_cleared() {
        let mut out = Vec::new();
        write_header(
            &mut out,
            0x01_02_03,
            kind::HEADERS,
            flag::END_HEADERS,
            0x8000_0005,
        );
        assert_eq!(out, [1, 2, 3, 1, 4, 0, 0, 0, 5]);
        let h = Head::read(&out);
        assert_eq!((h.len, h.kind, h.flags, h.stream), (0x010203, 1, 4, 5));
        assert_eq!(Reason(7).to_string(), "REFUSED_STREAM");
        assert_eq!(Reason(0x99).to_string(), "error code 0x99");
    }
}
