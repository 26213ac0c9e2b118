//! Binary result rows as JSON, for the statements whose rows are kept (a scenario's checks
//! and extractions, the database's statistics): numbers as numbers, DECIMAL as a number when
//! its text is one, strings as strings, dates and times as their text, as sqlx's path gives
//! them.

use std::fmt::Write as _;

use serde_json::Value as Json;

use super::{protocol, Fields};
use crate::error::DbError;

/// The UNSIGNED flag of a column definition.
const UNSIGNED: u16 = 0x20;
/// The `binary` collation: bytes, not text.
const BINARY: u16 = 63;

/// A column of a result, as its definition gives it.
#[derive(Debug)]
pub(super) struct Column {
    name: String,
    ty: u8,
    flags: u16,
    collation: u16,
}

impl Column {
    /// A column definition packet (protocol 4.1).
    pub(super) fn parse(b: &[u8]) -> Result<Column, DbError> {
        let mut f = Fields::new(b, 0);
        for _ in 0..4 {
            f.lenenc_bytes()?; // catalog, schema, table, original table
        }
        let name = String::from_utf8_lossy(f.lenenc_bytes()?).into_owned();
        f.lenenc_bytes()?; // original name
        f.lenenc()?; // the fixed fields' length
        let collation = f.int::<2>()? as u16;
        f.int::<4>()?; // display length
        let ty = f.u8()?;
        let flags = f.int::<2>()? as u16;
        Ok(Column {
            name,
            ty,
            flags,
            collation,
        })
    }

    fn value(&self, f: &mut Fields<'_>) -> Result<Json, DbError> {
        let unsigned = self.flags & UNSIGNED != 0;
        Ok(match self.ty {
            // TINY, SHORT and YEAR, LONG and INT24, LONGLONG
            1 => int(f.bytes(1)?, unsigned),
            2 | 13 => int(f.bytes(2)?, unsigned),
            3 | 9 => int(f.bytes(4)?, unsigned),
            8 => int(f.bytes(8)?, unsigned),
            4 => {
                let b = f.bytes(4)?;
                float(f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            }
            5 => float(f64::from_le_bytes(f.int::<8>()?.to_le_bytes())),
            // TIMESTAMP, DATE, DATETIME
            7 | 10 | 12 => Json::String(date(self.ty == 10, f)?),
            11 => Json::String(time(f)?),
            // BIT: its bytes, big-endian.
            16 => Json::Number(
                f.lenenc_bytes()?
                    .iter()
                    .fold(0u64, |n, &b| n << 8 | u64::from(b))
                    .into(),
            ),
            // VARCHAR, ENUM, the BLOBs, VAR_STRING, STRING: text unless their collation is
            // binary.
            15 | 247 | 249..=254 if self.collation != BINARY => {
                match std::str::from_utf8(f.lenenc_bytes()?) {
                    Ok(s) => Json::String(s.to_string()),
                    Err(_) => self.unsupported(),
                }
            }
            // DECIMAL, JSON, SET, GEOMETRY, binary strings: their text, a number when it is one.
            _ => match std::str::from_utf8(f.lenenc_bytes()?) {
                Ok(s) => serde_json::from_str::<serde_json::Number>(s)
                    .map_or_else(|_| Json::String(s.to_string()), Json::Number),
                Err(_) => self.unsupported(),
            },
        })
    }

    fn unsupported(&self) -> Json {
        let name = match self.ty {
            254 => "BINARY",
            249..=252 => "BLOB",
            255 => "GEOMETRY",
            _ => "VARBINARY",
        };
        Json::String(format!("<{name}: cast it to text in the query>"))
    }
}

fn int(le: &[u8], unsigned: bool) -> Json {
    let mut b = [0u8; 8];
    b[..le.len()].copy_from_slice(le);
    if unsigned {
        return Json::Number(u64::from_le_bytes(b).into());
    }
    if le.last().is_some_and(|&top| top & 0x80 != 0) {
        b[le.len()..].fill(0xFF);
    }
    Json::Number(i64::from_le_bytes(b).into())
}

fn float(x: f64) -> Json {
    serde_json::Number::from_f64(x).map_or(Json::Null, Json::Number)
}

/// A binary DATE, DATETIME or TIMESTAMP: a length (0, 4, 7 or 11), then year, month, day,
/// hour, minute, second and microseconds.
fn date(day_only: bool, f: &mut Fields<'_>) -> Result<String, DbError> {
    let n = usize::from(f.u8()?);
    let mut d = [0u8; 11];
    d[..n.min(11)].copy_from_slice(&f.bytes(n)?[..n.min(11)]);
    let year = u16::from_le_bytes([d[0], d[1]]);
    let mut t = format!("{year:04}-{:02}-{:02}", d[2], d[3]);
    if !day_only {
        let _ = write!(t, " {:02}:{:02}:{:02}", d[4], d[5], d[6]);
        let micros = u32::from_le_bytes([d[7], d[8], d[9], d[10]]);
        if micros > 0 {
            let _ = write!(t, ".{micros:06}");
        }
    }
    Ok(t)
}

/// A binary TIME: a length (0, 8 or 12), then sign, days, hours, minutes, seconds and
/// microseconds.
fn time(f: &mut Fields<'_>) -> Result<String, DbError> {
    let n = usize::from(f.u8()?);
    let mut d = [0u8; 12];
    d[..n.min(12)].copy_from_slice(&f.bytes(n)?[..n.min(12)]);
    let days = u32::from_le_bytes([d[1], d[2], d[3], d[4]]);
    let hours = days * 24 + u32::from(d[5]);
    let sign = if d[0] == 1 { "-" } else { "" };
    let mut t = format!("{sign}{hours:02}:{:02}:{:02}", d[6], d[7]);
    let micros = u32::from_le_bytes([d[8], d[9], d[10], d[11]]);
    if micros > 0 {
        let _ = write!(t, ".{micros:06}");
    }
    Ok(t)
}

/// A binary row (a 0 header, the null bitmap from bit 2, then the values that are not null)
/// as a JSON object.
pub(super) fn json(b: &[u8], columns: &[Column]) -> Result<Json, DbError> {
    let nulls = b
        .get(1..1 + (columns.len() + 9) / 8)
        .ok_or_else(|| protocol("MySQL sent a row shorter than its null bitmap"))?;
    let mut f = Fields::new(b, 1 + nulls.len());
    let mut m = serde_json::Map::new();
    for (i, c) in columns.iter().enumerate() {
        let bit = i + 2;
        let v = match nulls[bit / 8] & (1 << (bit % 8)) {
            0 => c.value(&mut f)?,
            _ => Json::Null,
        };
        m.insert(c.name.clone(), v);
    }
    Ok(Json::Object(m))
}
