//! What the scripted servers' tests share: the greeter's configuration and a reply's frames.
#![allow(clippy::unwrap_used)] // tests fail loudly by design
#![allow(dead_code)] // each test uses its part

use throng_grpc::{Descriptors, GrpcConfig};
use throng_h2::frame::{self, flag, kind};
use throng_h2::hpack::Block;

/// A call of the testbed greeter's `method` at `url`, its descriptors from its `.proto` (no
/// reflection: a scripted server has none).
pub(crate) fn greeter(url: &str, method: &str) -> GrpcConfig {
    let mut cfg = GrpcConfig::new(url, &format!("helloworld.Greeter/{method}")).unwrap();
    let proto = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testbed/proto/greeter.proto"
    );
    cfg.descriptors = Descriptors::Protos {
        files: vec![proto.into()],
        includes: vec![],
    };
    cfg
}

/// A reply's head on stream `id`: `:status 200`, gRPC's content type.
pub(crate) fn head(out: &mut Vec<u8>, id: u32) {
    let block = Block::builder()
        .field(":status", b"200")
        .field("content-type", b"application/grpc")
        .build();
    let block = block.fixed().unwrap();
    frame::write_header(out, block.len(), kind::HEADERS, flag::END_HEADERS, id);
    out.extend_from_slice(block);
}

/// One empty reply message on stream `id`.
pub(crate) fn message(out: &mut Vec<u8>, id: u32) {
    frame::write_header(out, 5, kind::DATA, 0, id);
    out.extend_from_slice(&[0; 5]);
}

/// An OK reply on stream `id`: its head, one empty message, `grpc-status: 0` in the trailers.
pub(crate) fn answer(out: &mut Vec<u8>, id: u32) {
    head(out, id);
    message(out, id);
    let trailers = Block::builder().field("grpc-status", b"0").build();
    let trailers = trailers.fixed().unwrap();
    let end = flag::END_HEADERS | flag::END_STREAM;
    frame::write_header(out, trailers.len(), kind::HEADERS, end, id);
    out.extend_from_slice(trailers);
}
