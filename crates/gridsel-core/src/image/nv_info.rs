//! `.nv.info` attribute records.
//!
//! Every record starts with a 4-byte header `u8 format, u8 attribute, u16 x`:
//!
//! | format | name | `x` | payload |
//! |---|---|---|---|
//! | 1 | `EIFMT_NVAL` | unused (0) | none |
//! | 2 | `EIFMT_BVAL` | u8 value, u8 pad | none |
//! | 3 | `EIFMT_HVAL` | u16 value | none |
//! | 4 | `EIFMT_SVAL` | u16 length | `length` bytes |
//!
//! Records follow each other without padding (every length seen is a multiple
//! of 4, so records stay 4-byte aligned). Unknown attributes are skipped by
//! their format; an unknown format cannot be skipped and is an error.

use std::collections::HashMap;

use super::ImageError;

/// `EIATTR_MAX_THREADS`: u32 x, y, z (`.maxntid`), in `.nv.info.<kernel>`.
pub const EIATTR_MAX_THREADS: u8 = 0x05;
/// `EIATTR_FRAME_SIZE`: u32 symbol index, u32 bytes, in `.nv.info`.
pub const EIATTR_FRAME_SIZE: u8 = 0x11;
/// `EIATTR_MIN_STACK_SIZE`: u32 symbol index, u32 bytes, in `.nv.info`.
pub const EIATTR_MIN_STACK_SIZE: u8 = 0x12;
/// `EIATTR_MAX_STACK_SIZE`: u32 symbol index, u32 bytes, in `.nv.info`.
pub const EIATTR_MAX_STACK_SIZE: u8 = 0x23;
/// `EIATTR_REGCOUNT`: u32 symbol index, u32 registers, in `.nv.info`.
pub const EIATTR_REGCOUNT: u8 = 0x2f;

/// `EIFMT_NVAL`.
pub const EIFMT_NVAL: u8 = 1;
/// `EIFMT_BVAL`.
pub const EIFMT_BVAL: u8 = 2;
/// `EIFMT_HVAL`.
pub const EIFMT_HVAL: u8 = 3;
/// `EIFMT_SVAL`.
pub const EIFMT_SVAL: u8 = 4;

/// One record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// Offset of the record header in its section.
    pub offset: usize,
    /// `EIFMT_*`.
    pub format: u8,
    /// `EIATTR_*`.
    pub attribute: u8,
    /// The u16 after the attribute: the value for formats 2 and 3, the
    /// payload length for format 4.
    pub value: u16,
    /// Payload (format 4 only).
    pub data: &'a [u8],
}

/// Splits a `.nv.info*` section into records.
pub fn records<'a>(section: &str, bytes: &'a [u8]) -> Result<Vec<Record<'a>>, ImageError> {
    let mut out = Vec::new();
    let mut off = 0usize;
    let bad = |offset: usize, reason: String| ImageError::NvInfo {
        section: section.to_owned(),
        offset,
        reason,
    };
    while off < bytes.len() {
        let Some(h) = bytes.get(off..off + 4) else {
            return Err(bad(
                off,
                format!("truncated record header ({} of 4 bytes)", bytes.len() - off),
            ));
        };
        let (format, attribute, value) = (h[0], h[1], u16::from_le_bytes([h[2], h[3]]));
        let data = match format {
            EIFMT_NVAL | EIFMT_BVAL | EIFMT_HVAL => &[][..],
            EIFMT_SVAL => {
                let start = off + 4;
                let end = start + usize::from(value);
                bytes.get(start..end).ok_or_else(|| {
                    bad(
                        off,
                        format!(
                            "truncated record: attribute {attribute:#04x} declares {value} bytes, {} remain",
                            bytes.len() - start
                        ),
                    )
                })?
            }
            _ => {
                return Err(bad(
                    off,
                    format!("unknown record format {format} (attribute {attribute:#04x})"),
                ));
            }
        };
        out.push(Record {
            offset: off,
            format,
            attribute,
            value,
            data,
        });
        off += 4 + data.len();
    }
    Ok(out)
}

/// The attributes gridsel uses from one section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NvInfoAttrs {
    /// `EIATTR_REGCOUNT` by symbol index.
    pub regcount: HashMap<u32, u32>,
    /// `EIATTR_FRAME_SIZE` by symbol index.
    pub frame_size: HashMap<u32, u32>,
    /// The larger of `EIATTR_MIN_STACK_SIZE` and `EIATTR_MAX_STACK_SIZE` by
    /// symbol index: the stack a kernel needs with its callees (the CUDA
    /// driver's `LOCAL_SIZE_BYTES`; measured on the H100).
    pub stack_size: HashMap<u32, u32>,
    /// `EIATTR_MAX_THREADS` (x, y, z).
    pub max_threads: Option<(u32, u32, u32)>,
}

fn u32s<const N: usize>(data: &[u8]) -> Option<[u32; N]> {
    let mut out = [0u32; N];
    for (i, v) in out.iter_mut().enumerate() {
        let b: [u8; 4] = data.get(i * 4..i * 4 + 4)?.try_into().ok()?;
        *v = u32::from_le_bytes(b);
    }
    Some(out)
}

/// Parses a section and keeps the attributes gridsel uses.
pub fn parse(section: &str, bytes: &[u8]) -> Result<NvInfoAttrs, ImageError> {
    let mut out = NvInfoAttrs::default();
    for r in records(section, bytes)? {
        let short = |need: usize| ImageError::NvInfo {
            section: section.to_owned(),
            offset: r.offset,
            reason: format!(
                "attribute {:#04x} has {} bytes of payload, expected at least {need} (format {})",
                r.attribute,
                r.data.len(),
                r.format
            ),
        };
        let pair = || {
            if r.format != EIFMT_SVAL {
                return Err(short(8));
            }
            u32s::<2>(r.data).ok_or_else(|| short(8))
        };
        match r.attribute {
            EIATTR_REGCOUNT => {
                let [sym, regs] = pair()?;
                out.regcount.insert(sym, regs);
            }
            EIATTR_FRAME_SIZE => {
                let [sym, bytes] = pair()?;
                out.frame_size.insert(sym, bytes);
            }
            EIATTR_MIN_STACK_SIZE | EIATTR_MAX_STACK_SIZE => {
                let [sym, bytes] = pair()?;
                let entry = out.stack_size.entry(sym).or_insert(0);
                *entry = (*entry).max(bytes);
            }
            EIATTR_MAX_THREADS => {
                if r.format != EIFMT_SVAL {
                    return Err(short(12));
                }
                let [x, y, z] = u32s::<3>(r.data).ok_or_else(|| short(12))?;
                out.max_threads = Some((x, y, z));
            }
            _ => {}
        }
    }
    Ok(out)
}
