//! The HPACK decoder against the public hpack-test-case corpus (a vendored subset, see
//! `tests/data/hpack-test-case/README.md`): every header block of every story decoded in order
//! on one decoder, as on one connection, to exactly the fields the story lists; and every
//! story's header lists re-encoded by our encoder decode back to the same fields.

use std::path::Path;

use throng_h2::hpack::{encode_field, Decoder};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn stories() -> Vec<(String, serde_json::Value)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hpack-test-case");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&root).expect("corpus") {
        let dir = dir.expect("entry").path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).expect("dir") {
            let f = f.expect("entry").path();
            let text = std::fs::read_to_string(&f).expect("story");
            let name = f
                .strip_prefix(&root)
                .expect("under root")
                .display()
                .to_string();
            out.push((name, serde_json::from_str(&text).expect("json")));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn expected(case: &serde_json::Value) -> Vec<(Vec<u8>, Vec<u8>)> {
    case["headers"]
        .as_array()
        .expect("headers")
        .iter()
        .flat_map(|h| h.as_object().expect("one field").iter())
        .map(|(n, v)| {
            let v = v.as_str().expect("value");
            (n.as_bytes().to_vec(), v.as_bytes().to_vec())
        })
        .collect()
}

#[test]
fn every_block_of_every_story_decodes_to_its_fields() {
    let stories = stories();
    assert_eq!(stories.len(), 16);
    let mut blocks = 0;
    for (name, story) in &stories {
        // The encoders may raise the table up to their story's header_table_size; we allow
        // what the largest of them asks (16384), the table starting at HTTP/2's 4096.
        let mut d = Decoder::new(4096);
        d.set_limit(65536);
        for case in story["cases"].as_array().expect("cases") {
            let wire = hex(case["wire"].as_str().expect("wire"));
            let mut got = Vec::new();
            d.decode(&wire, |n, v| got.push((n.to_vec(), v.to_vec())))
                .unwrap_or_else(|e| panic!("{name} seqno {}: {e}", case["seqno"]));
            assert_eq!(got, expected(case), "{name} seqno {}", case["seqno"]);
            blocks += 1;
        }
    }
    assert!(blocks > 1000, "{blocks} blocks");
}

#[test]
fn our_encoding_of_every_header_list_decodes_back_and_leaves_the_table_empty() {
    for (name, story) in stories() {
        let mut d = Decoder::new(4096);
        for case in story["cases"].as_array().expect("cases") {
            let want = expected(case);
            let mut block = Vec::new();
            for (n, v) in &want {
                encode_field(&mut block, n, v, false);
            }
            let mut got = Vec::new();
            d.decode(&block, |n, v| got.push((n.to_vec(), v.to_vec())))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(got, want, "{name} seqno {}", case["seqno"]);
        }
        assert_eq!(d.table().1, 0, "{name}: our blocks never index");
    }
}
