//! LLVM OffloadBinary (`llvm/include/llvm/Object/OffloadBinary.h`, LLVM 15-19).
//!
//! ```text
//! Header (32 B): u8 magic[4] = 10 FF 10 AD; u32 version (1); u64 size (whole binary);
//!                u64 entry_offset; u64 entry_size (bytes of the entry array, 40 per entry)
//! Entry (40 B):  u16 image_kind; u16 offload_kind; u32 flags; u64 string_offset;
//!                u64 num_strings; u64 image_offset; u64 image_size
//! String (16 B): u64 key_offset; u64 value_offset   (NUL-terminated, from the binary's start)
//! ```
//!
//! All offsets are relative to the start of the binary; all integers are
//! little-endian. Several binaries may follow each other in one
//! `.llvm.offloading` section, each starting 8-byte aligned.

use super::ImageError;

/// `10 FF 10 AD`.
pub const MAGIC: [u8; 4] = [0x10, 0xff, 0x10, 0xad];
const HEADER_LEN: u64 = 32;
const ENTRY_LEN: u64 = 40;
const STRING_LEN: u64 = 16;

/// `ImageKind` of an entry (`IMG_*`).
pub mod image_kind {
    /// `IMG_None`.
    pub const NONE: u16 = 0;
    /// `IMG_Object`: an ELF (cubin, or the host-offload shared object).
    pub const OBJECT: u16 = 1;
    /// `IMG_Bitcode`.
    pub const BITCODE: u16 = 2;
    /// `IMG_Cubin`.
    pub const CUBIN: u16 = 3;
    /// `IMG_Fatbinary`.
    pub const FATBINARY: u16 = 4;
    /// `IMG_PTX`.
    pub const PTX: u16 = 5;
}

/// One entry of an OffloadBinary: an image and its string table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffloadEntry<'a> {
    /// `IMG_*` ([`image_kind`]).
    pub image_kind: u16,
    /// `OFK_*`: 1 OpenMP, 2 CUDA, 4 HIP.
    pub offload_kind: u16,
    /// Entry flags.
    pub flags: u32,
    /// The `triple` string, e.g. `nvptx64-nvidia-cuda`.
    pub triple: Option<String>,
    /// The `arch` string, e.g. `sm_90`.
    pub arch: Option<String>,
    /// The wrapped image.
    pub image: &'a [u8],
}

fn u16_at(b: &[u8], off: u64) -> Option<u16> {
    let off = usize::try_from(off).ok()?;
    let s = b.get(off..off.checked_add(2)?)?;
    Some(u16::from_le_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], off: u64) -> Option<u32> {
    let off = usize::try_from(off).ok()?;
    let s: [u8; 4] = b.get(off..off.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_le_bytes(s))
}

fn u64_at(b: &[u8], off: u64) -> Option<u64> {
    let off = usize::try_from(off).ok()?;
    let s: [u8; 8] = b.get(off..off.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(s))
}

fn c_string(b: &[u8], off: u64) -> Option<String> {
    let off = usize::try_from(off).ok()?;
    let rest = b.get(off..)?;
    let end = rest.iter().position(|&c| c == 0)?;
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// Parses one OffloadBinary at the start of `bytes`. `base` is where
/// `bytes` starts in the caller's buffer (for messages). Returns the entries
/// and the binary's size.
pub fn parse_one(bytes: &[u8], base: u64) -> Result<(Vec<OffloadEntry<'_>>, u64), ImageError> {
    let len = bytes.len() as u64;
    let bad = |reason: String| ImageError::OffloadBinary {
        offset: base,
        reason,
    };
    if len < HEADER_LEN {
        return Err(ImageError::truncated(
            "OffloadBinary header",
            base,
            HEADER_LEN,
            base + len,
        ));
    }
    if bytes.get(..4) != Some(&MAGIC[..]) {
        return Err(bad("magic is not 10 ff 10 ad".into()));
    }
    let (Some(version), Some(size), Some(entry_offset), Some(entry_size)) = (
        u32_at(bytes, 4),
        u64_at(bytes, 8),
        u64_at(bytes, 16),
        u64_at(bytes, 24),
    ) else {
        return Err(ImageError::truncated(
            "OffloadBinary header",
            base,
            HEADER_LEN,
            base + len,
        ));
    };
    if !(1..=2).contains(&version) {
        return Err(bad(format!(
            "unknown version {version} (LLVM 15-19 write 1)"
        )));
    }
    if size < HEADER_LEN + ENTRY_LEN {
        return Err(bad(format!(
            "size {size} is smaller than a header and one entry"
        )));
    }
    if size > len {
        return Err(ImageError::truncated(
            "OffloadBinary",
            base,
            size,
            base + len,
        ));
    }
    let bin = &bytes[..size as usize]; // size <= len checked above
    if entry_size == 0 || entry_size % ENTRY_LEN != 0 {
        return Err(bad(format!(
            "entry size {entry_size} is not a multiple of {ENTRY_LEN}"
        )));
    }
    let entries_end = entry_offset.checked_add(entry_size).filter(|&e| e <= size);
    if entries_end.is_none() || entry_offset < HEADER_LEN {
        return Err(bad(format!(
            "entries at {entry_offset:#x}..+{entry_size} lie outside the binary (size {size})"
        )));
    }
    let mut entries = Vec::new();
    for i in 0..entry_size / ENTRY_LEN {
        let e = entry_offset + i * ENTRY_LEN;
        let field = |o: u64| u64_at(bin, e + o);
        let (Some(image_kind), Some(offload_kind), Some(flags)) =
            (u16_at(bin, e), u16_at(bin, e + 2), u32_at(bin, e + 4))
        else {
            return Err(bad(format!("entry {i} is truncated")));
        };
        let (Some(string_offset), Some(num_strings), Some(image_offset), Some(image_size)) =
            (field(8), field(16), field(24), field(32))
        else {
            return Err(bad(format!("entry {i} is truncated")));
        };
        let image_end = image_offset.checked_add(image_size).filter(|&x| x <= size);
        let Some(image_end) = image_end else {
            return Err(bad(format!(
                "entry {i}: image at {image_offset:#x}..+{image_size} lies outside the binary (size {size})"
            )));
        };
        let image = &bin[image_offset as usize..image_end as usize];
        let strings_end = num_strings
            .checked_mul(STRING_LEN)
            .and_then(|n| n.checked_add(string_offset))
            .filter(|&x| x <= size);
        if strings_end.is_none() {
            return Err(bad(format!(
                "entry {i}: {num_strings} strings at {string_offset:#x} lie outside the binary"
            )));
        }
        let (mut triple, mut arch) = (None, None);
        for s in 0..num_strings {
            let at = string_offset + s * STRING_LEN;
            let (Some(k), Some(v)) = (u64_at(bin, at), u64_at(bin, at + 8)) else {
                return Err(bad(format!("entry {i}: string {s} is truncated")));
            };
            let (Some(key), Some(value)) = (c_string(bin, k), c_string(bin, v)) else {
                return Err(bad(format!(
                    "entry {i}: string {s} is not NUL-terminated inside the binary"
                )));
            };
            match key.as_str() {
                "triple" => triple = Some(value),
                "arch" => arch = Some(value),
                _ => {}
            }
        }
        entries.push(OffloadEntry {
            image_kind,
            offload_kind,
            flags,
            triple,
            arch,
            image,
        });
    }
    Ok((entries, size))
}

/// Parses every OffloadBinary in `bytes` (the contents of a `.llvm.offloading`
/// section, or a file holding one or more binaries back to back). Zero bytes
/// between binaries (alignment padding) are skipped.
pub fn parse_all(bytes: &[u8]) -> Result<Vec<OffloadEntry<'_>>, ImageError> {
    let mut out = Vec::new();
    let mut off = 0usize;
    while off < bytes.len() {
        let rest = &bytes[off..];
        if rest[0] == 0 {
            off += 1;
            continue;
        }
        let (entries, size) = parse_one(rest, off as u64)?;
        out.extend(entries);
        // parse_one guarantees 0 < size <= rest.len().
        off += size as usize;
    }
    Ok(out)
}
