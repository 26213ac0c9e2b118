//! Method descriptors from `.proto` files (compiled by protox, no `protoc`), from a protoset, or
//! from the server's reflection service.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use prost::Message as _;
use prost_reflect::{DescriptorPool, MethodDescriptor};
use prost_types::FileDescriptorProto;

use crate::config::{Descriptors, GrpcError};

/// Compiles `.proto` files; the files' own directories are import paths after `includes`.
pub fn compile_protos(
    files: &[PathBuf],
    includes: &[PathBuf],
) -> Result<DescriptorPool, GrpcError> {
    let mut paths: Vec<PathBuf> = includes.to_vec();
    for f in files {
        if !f.is_file() {
            return Err(GrpcError::Proto(format!("{}: no such file", f.display())));
        }
        let dir = f.parent().filter(|d| !d.as_os_str().is_empty());
        let dir = dir
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        if !paths.contains(&dir) {
            paths.push(dir);
        }
    }
    for p in &paths {
        if !p.is_dir() {
            return Err(GrpcError::Proto(format!(
                "-I {}: no such directory",
                p.display()
            )));
        }
    }
    let mut compiler = protox::Compiler::new(&paths).map_err(|e| proto_error(&e))?;
    compiler.include_imports(true);
    for f in files {
        compiler.open_file(f).map_err(|e| {
            // protox names a file relative to its import path; say it as the user wrote it.
            let GrpcError::Proto(m) = proto_error(&e) else {
                return proto_error(&e);
            };
            let named = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            match m.strip_prefix(named).filter(|rest| rest.starts_with(':')) {
                Some(rest) if !named.is_empty() => {
                    GrpcError::Proto(format!("{}{rest}", f.display()))
                }
                _ => GrpcError::Proto(m),
            }
        })?;
    }
    Ok(compiler.descriptor_pool())
}

/// A protox error as `file:line:column: message` when it has a place.
fn proto_error(e: &protox::Error) -> GrpcError {
    use miette::Diagnostic;
    let place = (|| {
        let label = e.labels()?.next()?;
        let src = e.source_code()?;
        let contents = src.read_span(label.inner(), 0, 0).ok()?;
        Some(format!(
            "{}:{}:{}",
            e.file().unwrap_or("?"),
            contents.line() + 1,
            contents.column() + 1
        ))
    })();
    GrpcError::Proto(match place {
        Some(p) => format!("{p}: {e}"),
        None => match e.file() {
            Some(f) if !e.to_string().contains(f) => format!("{f}: {e}"),
            _ => e.to_string(),
        },
    })
}

/// Reads a `FileDescriptorSet`.
pub fn read_protoset(path: &Path) -> Result<DescriptorPool, GrpcError> {
    let bad = |reason: String| GrpcError::Protoset {
        path: path.to_path_buf(),
        reason,
    };
    let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    DescriptorPool::decode(bytes.as_slice()).map_err(|e| bad(e.to_string()))
}

/// Adds files in an order where each file's imports come first (reflection sends them in any
/// order, and prost-reflect refuses a file whose imports it has not seen).
pub(crate) fn pool_from_files(files: Vec<FileDescriptorProto>) -> Result<DescriptorPool, String> {
    let mut pool = DescriptorPool::new();
    let mut added: HashSet<String> = HashSet::new();
    let mut left = files;
    while !left.is_empty() {
        let (ready, wait): (Vec<_>, Vec<_>) = left
            .into_iter()
            .partition(|f| f.dependency.iter().all(|d| added.contains(d)));
        if ready.is_empty() {
            let missing: Vec<_> = wait
                .iter()
                .flat_map(|f| f.dependency.iter())
                .filter(|d| !added.contains(*d))
                .cloned()
                .collect();
            return Err(format!("the server did not send {}", missing.join(", ")));
        }
        for f in ready {
            added.insert(f.name().to_string());
            pool.add_file_descriptor_proto(f)
                .map_err(|e| e.to_string())?;
        }
        left = wait;
    }
    Ok(pool)
}

/// Decodes reflection's `file_descriptor_proto` bytes.
pub(crate) fn decode_file(bytes: &[u8]) -> Result<FileDescriptorProto, String> {
    FileDescriptorProto::decode(bytes).map_err(|e| format!("a file descriptor: {e}"))
}

/// Finds `service`/`method` in a pool, naming what is there when it is not.
pub fn find_method(
    pool: &DescriptorPool,
    service: &str,
    method: &str,
    source: &Descriptors,
) -> Result<MethodDescriptor, GrpcError> {
    let Some(svc) = pool.get_service_by_name(service) else {
        let known: Vec<_> = pool.services().map(|s| s.full_name().to_string()).collect();
        return Err(GrpcError::UnknownService {
            service: service.to_string(),
            source_name: match source {
                Descriptors::Protos { files, .. } => files
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                Descriptors::Protoset(p) => p.display().to_string(),
                Descriptors::Reflection => "the server's reflection".to_string(),
            },
            known: if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            },
        });
    };
    let found = svc.methods().find(|m| m.name() == method);
    found.ok_or_else(|| GrpcError::UnknownMethod {
        service: service.to_string(),
        method: method.to_string(),
        known: svc
            .methods()
            .map(|m| m.name().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_proto_is_named_with_its_place() {
        let dir = std::env::temp_dir().join(format!("throng-grpc-proto-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("bad.proto");
        std::fs::write(&f, "syntax = \"proto3\";\nmessage A {\n  string a = 1\n}\n").unwrap();
        let e = compile_protos(std::slice::from_ref(&f), &[])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(&format!("{}:4:1:", f.display())), "{e}");
        let e = compile_protos(&[dir.join("none.proto")], &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("none.proto: no such file"), "{e}");
        std::fs::write(&f, "syntax = \"proto3\";\nimport \"x.proto\";\n").unwrap();
        let e = compile_protos(std::slice::from_ref(&f), &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.proto"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
