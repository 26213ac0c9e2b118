use super::login::{greeting, native_password, scramble, sha2_password};
use super::*;
use crate::error::Violation;

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn logins_hash_as_the_server_does() {
    // As Python's hashlib gives it, for the nonce 1, 2, ... 20.
    let nonce: Vec<u8> = (1..=20).collect();
    assert_eq!(
        hex(&native_password("throng-pw", &nonce)),
        "818898d1e7c3c8fb4b59c2dedde5ab823f78a003"
    );
    assert_eq!(
        hex(&sha2_password("throng-pw", &nonce)),
        "626db63411961ab557022e032ec7c3073ad583bdd50ad512cabb18a42c3ee9e7"
    );
    // No password, no answer: that is how an empty password is said.
    assert!(native_password("", &nonce).is_empty());
    assert_eq!(scramble(b"client_ed25519", "pw", &nonce), None);
}

#[test]
fn length_encoded_integers_round_trip() {
    for n in [
        0,
        1,
        250,
        251,
        0xFFFF,
        0x1_0000,
        0xFF_FFFF,
        0x100_0000,
        u64::MAX,
    ] {
        let mut b = Vec::new();
        put_lenenc(&mut b, n);
        let width = match n {
            0..=250 => 1,
            251..=0xFFFF => 3,
            0x1_0000..=0xFF_FFFF => 4,
            _ => 9,
        };
        assert_eq!(b.len(), width, "{n}");
        let mut f = Fields::new(&b, 0);
        assert_eq!(f.lenenc().unwrap(), n);
        assert_eq!(f.at, b.len());
    }
    assert!(Fields::new(&[0xFC, 1], 0).lenenc().is_err());
    assert!(Fields::new(&[0xFB], 0).lenenc().is_err());
}

/// Packets as the server frames them with a largest piece of `max` bytes.
fn framed(payloads: &[Vec<u8>], max: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, p) in payloads.iter().enumerate() {
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(p);
        seal(&mut out, at, i as u8 * 3, max);
    }
    out
}

#[test]
fn packets_are_framed_however_the_bytes_arrive() {
    let max = 8;
    let payloads: Vec<Vec<u8>> = [0, 3, 7, 8, 16, 21, 1]
        .iter()
        .map(|&n| (0..n as u8).map(|b| b.wrapping_mul(37)).collect())
        .collect();
    let wire = framed(&payloads, max);
    // Pieces of 8 bytes go on; one of exactly 8 (or 16) is ended by an empty piece.
    assert_eq!(wire.len(), 12 * 4 + 56);
    // Every split of the bytes in two arrivals gives the same packets.
    for split in 0..=wire.len() {
        let mut rx = Vec::new();
        let mut at = 0;
        let mut got = Vec::new();
        for arrival in [&wire[..split], &wire[split..]] {
            rx.extend_from_slice(arrival);
            while let Some((r, _)) = frame(&mut rx, at, max) {
                got.push(rx[r.clone()].to_vec());
                at = r.end;
            }
        }
        assert_eq!(got, payloads, "split at {split}");
        assert_eq!(at, rx.len());
    }
}

#[test]
fn a_long_packet_gives_the_next_sequence_id() {
    let mut tx = vec![0; 4];
    tx.extend_from_slice(&[7; 20]);
    // Pieces of 8, 8 and 4 bytes, numbered 5, 6 and 7.
    assert_eq!(seal(&mut tx, 0, 5, 8), 8);
    assert_eq!(&tx[..4], &[8, 0, 0, 5]);
    assert_eq!(&tx[24..28], &[4, 0, 0, 7]);
    let (r, seq) = frame(&mut tx, 0, 8).unwrap();
    assert_eq!((r, seq), (4..24, 7));
    assert_eq!(&tx[4..24], &[7; 20]);
    // A short packet's sequence id is its own.
    let mut short = vec![0; 4];
    short.push(1);
    assert_eq!(seal(&mut short, 0, 255, MAX), 0);
    assert_eq!(short, [1, 0, 0, 255, 1]);
}

#[test]
fn errors_carry_their_sqlstate_and_kind() {
    let e = error(b"\xff\x26\x04#23000Duplicate entry '1' for key 'PRIMARY'");
    let DbError::Database(db) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(db.code(), Some("23000"));
    assert_eq!(db.message(), "Duplicate entry '1' for key 'PRIMARY'");
    assert_eq!(db.violation(), Some(Violation::Unique));
    assert_eq!(crate::failure(&e).status.to_string(), "sqlstate 23000");
    // Without a SQLSTATE (an old server, or a packet out of order).
    let e = error(b"\xff\x84\x04Got packets out of order");
    let DbError::Database(db) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(db.code(), None);
    assert_eq!(db.message(), "Got packets out of order");
    for (number, kind) in [
        (1451u16, Violation::ForeignKey),
        (1452, Violation::ForeignKey),
        (1048, Violation::NotNull),
        (1364, Violation::NotNull),
        (3819, Violation::Check),
    ] {
        let mut b = vec![0xFF];
        b.extend_from_slice(&number.to_le_bytes());
        b.extend_from_slice(b"#23000x");
        let DbError::Database(db) = error(&b) else {
            panic!()
        };
        assert_eq!(db.violation(), Some(kind), "{number}");
    }
}

#[test]
fn greetings_give_capabilities_plugin_and_nonce() {
    // MariaDB 10.4's, as sqlx's own test has it.
    let b = b"\n5.5.5-10.4.7-MariaDB-1:10.4.7+maria~bionic\x00\x0b\x00\x00\x00t6L\\j\"dS\x00\xfe\xf7\x08\x02\x00\xff\x81\x15\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00U14Oph9\"<H5n\x00mysql_native_password\x00";
    let g = greeting(b).unwrap();
    assert_eq!(g.plugin, b"mysql_native_password");
    assert_eq!(g.nonce, b"t6L\\j\"dSU14Oph9\"<H5n");
    assert!(g.caps & DEPRECATE_EOF != 0 && g.caps & SSL == 0);
    // MySQL 8.0's: TLS offered, caching_sha2_password.
    let b = b"\n8.0.18\x00\x19\x00\x00\x00\x114aB0c\x06g\x00\xff\xff\xff\x02\x00\xff\xc7\x15\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00tL\x03s\x0f[4\rl4. \x00caching_sha2_password\x00";
    let g = greeting(b).unwrap();
    assert_eq!(g.plugin, b"caching_sha2_password");
    assert_eq!(g.nonce.len(), 20);
    assert!(g.caps & SSL != 0);
    // Refused before the greeting.
    assert!(matches!(
        greeting(b"\xff\x10\x04Too many connections"),
        Err(DbError::Database(_))
    ));
    assert!(matches!(greeting(b"\n5.5"), Err(DbError::Protocol(_))));
}

#[test]
fn parameters_are_bound_in_binary_with_their_types_sent_when_they_change() {
    let mut st = Statement {
        id: 7,
        params: 5,
        columns: None,
        types: Vec::new(),
    };
    let args = [
        Value::Int(-2),
        Value::Null,
        Value::Text("ab".into()),
        Value::Bool(true),
        Value::Float(0.5),
    ];
    let mut tx = Vec::new();
    execute(&mut tx, &mut st, &args);
    let mut want = vec![7, 0, 0, 0, 0, 1, 0, 0, 0];
    want.extend_from_slice(&[0b10, 1]);
    want.extend_from_slice(&[8, 0, 6, 0, 0xFD, 0, 1, 0, 5, 0]);
    let values = {
        let mut v = (-2i64).to_le_bytes().to_vec();
        v.extend_from_slice(&[2, b'a', b'b', 1]);
        v.extend_from_slice(&0.5f64.to_le_bytes());
        v
    };
    want.extend_from_slice(&values);
    assert_eq!(tx, want);
    // The same types again: flag 0 and no types.
    let mut again = Vec::new();
    execute(&mut again, &mut st, &args);
    let mut want = vec![7, 0, 0, 0, 0, 1, 0, 0, 0, 0b10, 0];
    want.extend_from_slice(&values);
    assert_eq!(again, want);
    // A NULL where an integer was: the types are sent anew.
    let mut changed = Vec::new();
    let args = [
        Value::Null,
        Value::Null,
        Value::Text("ab".into()),
        Value::Bool(true),
        Value::Float(0.5),
    ];
    execute(&mut changed, &mut st, &args);
    assert_eq!(&changed[9..13], &[0b11, 1, 6, 0]);
}

fn column(name: &str, ty: u8, flags: u16, collation: u16) -> Vec<u8> {
    let mut b = Vec::new();
    for s in ["def", "db", "t", "t", name, name] {
        put_lenenc(&mut b, s.len() as u64);
        b.extend_from_slice(s.as_bytes());
    }
    b.push(0x0c);
    b.extend_from_slice(&collation.to_le_bytes());
    b.extend_from_slice(&10u32.to_le_bytes());
    b.push(ty);
    b.extend_from_slice(&flags.to_le_bytes());
    b.extend_from_slice(&[0, 0, 0]);
    b
}

#[test]
fn kept_rows_are_json_by_column_type() {
    let columns: Vec<row::Column> = [
        column("i", 8, 0, 63),
        column("u", 1, 0x20, 63),
        column("s", 2, 0, 63),
        column("d", 246, 0, 63),
        column("c", 253, 0, 45),
        column("n", 3, 0, 63),
        column("at", 12, 0, 63),
        column("f", 5, 0, 63),
    ]
    .iter()
    .map(|b| row::Column::parse(b).unwrap())
    .collect();
    let mut b = vec![0, 0b1000_0000, 0];
    b.extend_from_slice(&(-5i64).to_le_bytes());
    b.push(200);
    b.extend_from_slice(&(-3i16).to_le_bytes());
    b.extend_from_slice(b"\x0512.50");
    b.extend_from_slice(b"\x03abc");
    b.extend_from_slice(&[7, 0xEA, 0x07, 11, 24, 1, 2, 3]);
    b.extend_from_slice(&1.5f64.to_le_bytes());
    let row = row::json(&b, &columns).unwrap();
    assert_eq!(
        row,
        serde_json::json!({
            "i": -5, "u": 200, "s": -3, "d": 12.5, "c": "abc", "n": null,
            "at": "2026-11-24 01:02:03", "f": 1.5
        })
    );
    assert!(row::json(&b[..20], &columns).is_err());
}
