//! The codec tonic's client runs with: bytes in, bytes out. A request is encoded once (from its
//! JSON, by prost-reflect) and its bytes are reused for every call; a reply is decoded only when
//! a check or an extraction reads it.

use bytes::{Buf, BufMut, Bytes};
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::Status;

/// tonic's buffers start at 8 KiB for every call, each way; a load tester's messages are
/// usually small, and the buffers grow when one is not.
fn buffers() -> BufferSettings {
    BufferSettings::new(512, 32 * 1024)
}

/// A pass-through codec: messages are already encoded.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawCodec;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> RawCodec {
        RawCodec
    }

    fn decoder(&mut self) -> RawCodec {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }

    fn buffer_settings(&self) -> BufferSettings {
        buffers()
    }
}

impl Decoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }

    fn buffer_settings(&self) -> BufferSettings {
        buffers()
    }
}
