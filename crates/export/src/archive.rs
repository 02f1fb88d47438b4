//! A zip archive writer for members deflated elsewhere (on every core): local headers, the central
//! directory and, where an offset, a size or the member count passes its 32- or 16-bit field, the
//! ZIP64 records (PKWARE APPNOTE 6.3.10: 4.3.7, 4.3.12, 4.3.14–4.3.16, 4.5.3).
//!
//! ```text
//! Deflated::new (rayon) ─▶ ZipWriter::add: local header + data ─▶ … ─▶ finish:
//!   central directory: one entry per member; a ZIP64 extra field holding exactly the values
//!                      written as 0xFFFFFFFF (size, compressed size, local-header offset)
//!   ZIP64 end record + locator, when the count ≥ 0xFFFF or the directory passes 4 GiB
//!   end of central directory
//! ```
//!
//! The `zip` crate's raw copy (`ZipWriter::merge_archive`, 2.6) kept each copied member's extra
//! fields from its one-member archive, so a member whose local header lay past 4 GiB was written
//! with the offset 0xFFFFFFFF and no ZIP64 field, and neither Python's `zipfile` nor the `zip`
//! crate could read it (the full-scale `qa.zip`, from member 218,230 of 227,835). Here each
//! central entry's ZIP64 field is built from the values it stands in for.
//!
//! Every member gets the same fixed timestamp (1980-01-01 00:00) and Unix mode 0644, so an
//! archive's bytes depend on its members only.

use std::io::{self, Read, Seek, Write};

use flate2::Compression;
use flate2::write::DeflateEncoder;

/// What a 32-bit field holds when its value is in the ZIP64 extra field.
const ZIP64_U32: u32 = u32::MAX;
/// What the end record's 16-bit counts hold when the count is in the ZIP64 end record.
const ZIP64_U16: u16 = u16::MAX;
/// Version needed to extract: deflate (2.0), ZIP64 (4.5).
const VERSION_DEFLATE: u16 = 20;
const VERSION_ZIP64: u16 = 45;
/// Version made by: high byte 3 = Unix (the external attributes are a Unix mode).
const MADE_BY_UNIX: u16 = 3 << 8;
/// General purpose flag bit 11: the name is UTF-8.
const FLAG_UTF8: u16 = 1 << 11;
const METHOD_DEFLATE: u16 = 8;
/// MS-DOS date of 1980-01-01 (day 1, month 1, year 0); the time is 00:00:00.
const DOS_DATE: u16 = (1 << 5) | 1;
const DOS_TIME: u16 = 0;
/// A regular file, mode 0644.
const UNIX_FILE_0644: u32 = 0o100_644 << 16;
/// Header id of the ZIP64 extended information extra field.
const ZIP64_EXTRA_ID: u16 = 0x0001;
/// A local header's fixed part (4.3.7), before the name.
const LOCAL_HEADER_LEN: u64 = 30;
/// The ZIP64 field of a local header: id, length, size and compressed size.
const LOCAL_ZIP64_EXTRA_LEN: u64 = 4 + 16;

/// One member's name and deflated bytes, made on any thread.
#[derive(Debug)]
pub(crate) struct Deflated {
    name: String,
    crc32: u32,
    size: u64,
    data: Vec<u8>,
}

impl Deflated {
    /// `bytes` deflated at `level` (0–9) as the member `name`.
    pub fn new(name: String, bytes: &[u8], level: u32) -> io::Result<Self> {
        let capacity = bytes.len() / 3 + 64;
        let mut encoder =
            DeflateEncoder::new(Vec::with_capacity(capacity), Compression::new(level));
        encoder.write_all(bytes)?;
        let data = encoder.finish()?;
        Ok(Self {
            name,
            crc32: crc32fast::hash(bytes),
            size: bytes.len() as u64,
            data,
        })
    }
}

/// A member already written, for the central directory.
#[derive(Debug)]
struct Entry {
    name: String,
    crc32: u32,
    size: u64,
    compressed: u64,
    /// Where its local header starts, from the start of the output.
    offset: u64,
}

impl Entry {
    fn flags(&self) -> u16 {
        if self.name.is_ascii() { 0 } else { FLAG_UTF8 }
    }
}

/// Writes a zip archive to `out` from its current position on (anything before it is kept, as
/// in a self-extracting archive; offsets count from the start of `out`).
#[derive(Debug)]
pub(crate) struct ZipWriter<W: Write> {
    out: W,
    /// Where the next record starts.
    position: u64,
    entries: Vec<Entry>,
}

/// Little-endian record bytes.
#[derive(Default)]
struct Record(Vec<u8>);

impl Record {
    fn u16(mut self, value: u16) -> Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }

    fn u32(mut self, value: u32) -> Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }

    fn u64(mut self, value: u64) -> Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }

    fn bytes(mut self, value: &[u8]) -> Self {
        self.0.extend_from_slice(value);
        self
    }

    /// The fields local and central headers share, from the flags to the extra field's length
    /// (`compressed` and `size` as written: the value or 0xFFFFFFFF).
    fn described(self, entry: &Entry, compressed: u32, size: u32, extra: usize) -> Self {
        self.u16(entry.flags())
            .u16(METHOD_DEFLATE)
            .u16(DOS_TIME)
            .u16(DOS_DATE)
            .u32(entry.crc32)
            .u32(compressed)
            .u32(size)
            .u16(entry.name.len() as u16)
            .u16(extra as u16)
    }
}

/// Whether `value` fits a 32-bit field (0xFFFFFFFF itself means "in the ZIP64 field").
fn fits32(value: u64) -> bool {
    value < u64::from(ZIP64_U32)
}

/// `value` for a 32-bit field and, when it does not fit, the value for the ZIP64 extra field.
fn field32(value: u64, zip64: &mut Vec<u64>) -> u32 {
    if fits32(value) {
        value as u32
    } else {
        zip64.push(value);
        ZIP64_U32
    }
}

/// The ZIP64 extended information extra field holding `values` (empty when there are none).
fn zip64_extra(values: &[u64]) -> Vec<u8> {
    if values.is_empty() {
        return Vec::new();
    }
    let header = Record::default()
        .u16(ZIP64_EXTRA_ID)
        .u16(8 * values.len() as u16);
    values.iter().fold(header, |r, v| r.u64(*v)).0
}

impl<W: Write + Seek> ZipWriter<W> {
    /// Starts an archive at `out`'s current position.
    pub fn new(mut out: W) -> io::Result<Self> {
        let position = out.stream_position()?;
        Ok(Self {
            out,
            position,
            entries: Vec::new(),
        })
    }
}

impl<W: Write> ZipWriter<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.position += bytes.len() as u64;
        Ok(())
    }

    /// Appends `member`: its local header, then its deflated bytes.
    pub fn add(&mut self, member: Deflated) -> io::Result<()> {
        let entry = Entry {
            crc32: member.crc32,
            size: member.size,
            compressed: member.data.len() as u64,
            offset: self.position,
            name: member.name,
        };
        // Both headers store the name's length in 16 bits.
        if u16::try_from(entry.name.len()).is_err() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("zip member {}: its name is over 65,535 bytes", entry.name),
            ));
        }
        // The local header has both sizes in its ZIP64 field when either does not fit (4.5.3).
        let (extra, version, size, compressed) = if !fits32(entry.size) || !fits32(entry.compressed)
        {
            let extra = zip64_extra(&[entry.size, entry.compressed]);
            (extra, VERSION_ZIP64, ZIP64_U32, ZIP64_U32)
        } else {
            (
                Vec::new(),
                VERSION_DEFLATE,
                entry.size as u32,
                entry.compressed as u32,
            )
        };
        let header = Record::default()
            .bytes(b"PK\x03\x04")
            .u16(version)
            .described(&entry, compressed, size, extra.len())
            .bytes(entry.name.as_bytes())
            .bytes(&extra);
        self.write(&header.0)?;
        self.write(&member.data)?;
        self.entries.push(entry);
        Ok(())
    }

    /// Whether the members were added in name order.
    pub fn in_name_order(&self) -> bool {
        self.entries.windows(2).all(|w| w[0].name <= w[1].name)
    }

    /// Finishes the archive in `out` instead, with the members in name order: `source` reads
    /// what this writer wrote (its output, flushed here), each member's local header and data
    /// are copied from it in order, then the central directory follows. An archive's bytes then
    /// depend only on its members, not on the order in which they were added.
    pub fn finish_in_name_order<R, O>(mut self, mut source: R, out: O) -> io::Result<O>
    where
        R: Read + Seek,
        O: Write + Seek,
    {
        self.out.flush()?;
        let mut sorted = ZipWriter::new(out)?;
        let mut entries = std::mem::take(&mut self.entries);
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for mut entry in entries {
            let zip64 = !fits32(entry.size) || !fits32(entry.compressed);
            let header = LOCAL_HEADER_LEN
                + entry.name.len() as u64
                + if zip64 { LOCAL_ZIP64_EXTRA_LEN } else { 0 };
            source.seek(io::SeekFrom::Start(entry.offset))?;
            let length = header + entry.compressed;
            let copied = io::copy(&mut (&mut source).take(length), &mut sorted.out)?;
            if copied != length {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("zip member {}: {copied} of {length} bytes", entry.name),
                ));
            }
            entry.offset = sorted.position;
            sorted.position += copied;
            sorted.entries.push(entry);
        }
        sorted.finish()
    }

    /// Writes the central directory and the end records; returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        let start = self.position;
        let entries = std::mem::take(&mut self.entries);
        for entry in &entries {
            // Order of the ZIP64 field's values: size, compressed size, offset (4.5.3).
            let mut zip64 = Vec::new();
            let size = field32(entry.size, &mut zip64);
            let compressed = field32(entry.compressed, &mut zip64);
            let offset = field32(entry.offset, &mut zip64);
            let extra = zip64_extra(&zip64);
            let version = if zip64.is_empty() {
                VERSION_DEFLATE
            } else {
                VERSION_ZIP64
            };
            let record = Record::default()
                .bytes(b"PK\x01\x02")
                .u16(MADE_BY_UNIX | version)
                .u16(version)
                .described(entry, compressed, size, extra.len())
                .u16(0) // comment length
                .u16(0) // disk number
                .u16(0) // internal attributes
                .u32(UNIX_FILE_0644)
                .u32(offset)
                .bytes(entry.name.as_bytes())
                .bytes(&extra);
            self.write(&record.0)?;
        }
        let size = self.position - start;
        let count = entries.len() as u64;
        let mut zip64 = Vec::new();
        let count16 = match u16::try_from(count) {
            Ok(small) if small != ZIP64_U16 => small,
            _ => {
                zip64.push(count);
                ZIP64_U16
            }
        };
        let size32 = field32(size, &mut zip64);
        let start32 = field32(start, &mut zip64);
        if !zip64.is_empty() {
            let record_at = self.position;
            let end64 = Record::default()
                .bytes(b"PK\x06\x06")
                .u64(44) // size of the rest of this record
                .u16(MADE_BY_UNIX | VERSION_ZIP64)
                .u16(VERSION_ZIP64)
                .u32(0) // this disk
                .u32(0) // disk of the central directory
                .u64(count)
                .u64(count)
                .u64(size)
                .u64(start);
            let locator = Record::default()
                .bytes(b"PK\x06\x07")
                .u32(0) // disk of the ZIP64 end record
                .u64(record_at)
                .u32(1); // disks in all
            self.write(&end64.0)?;
            self.write(&locator.0)?;
        }
        let end = Record::default()
            .bytes(b"PK\x05\x06")
            .u16(0)
            .u16(0)
            .u16(count16)
            .u16(count16)
            .u32(size32)
            .u32(start32)
            .u16(0); // comment length
        self.write(&end.0)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::io::{BufWriter, Cursor, Read, SeekFrom};

    use super::*;

    fn member(n: usize) -> Deflated {
        let name = format!(
            "qa/p10/p{:08}/s{:08}.qa.json",
            10_000_000 + n,
            50_000_000 + n
        );
        let text = format!("{{\"n\":{n},\"pad\":\"{}\"}}\n", "x".repeat(n % 97));
        Deflated::new(name, text.as_bytes(), 6).expect("deflate")
    }

    fn read_member<R: Read + Seek>(archive: &mut zip::ZipArchive<R>, index: usize) -> String {
        let mut text = String::new();
        archive
            .by_index(index)
            .expect("member")
            .read_to_string(&mut text)
            .expect("inflate, checked against its CRC");
        text
    }

    #[test]
    fn members_added_in_any_order_make_the_same_bytes_in_name_order() {
        let write = |order: &[usize]| -> Vec<u8> {
            let mut writer = ZipWriter::new(Cursor::new(Vec::new())).expect("writer");
            for &n in order {
                writer.add(member(n)).expect("add");
            }
            if writer.in_name_order() {
                return writer.finish().expect("finish").into_inner();
            }
            let written = writer.out.get_ref().clone();
            writer
                .finish_in_name_order(Cursor::new(written), Cursor::new(Vec::new()))
                .expect("sorted")
                .into_inner()
        };
        let in_order = write(&[0, 1, 2, 3]);
        assert_eq!(write(&[2, 0, 3, 1]), in_order);
        assert_eq!(write(&[3, 2, 1, 0]), in_order);
        let mut archive = zip::ZipArchive::new(Cursor::new(in_order)).expect("zip");
        assert_eq!(archive.len(), 4);
        assert!(read_member(&mut archive, 2).contains("\"n\":2"));
    }

    #[test]
    fn a_small_archive_has_no_zip64_records_and_reads_back() {
        let mut writer = ZipWriter::new(Cursor::new(Vec::new())).expect("writer");
        for n in 0..3 {
            writer.add(member(n)).expect("add");
        }
        let bytes = writer.finish().expect("finish").into_inner();
        assert!(
            !bytes.windows(4).any(|w| w == b"PK\x06\x06"),
            "no ZIP64 end record"
        );
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).expect("zip");
        assert_eq!(archive.len(), 3);
        assert_eq!(
            archive.name_for_index(1),
            Some("qa/p10/p10000001/s50000001.qa.json")
        );
        assert_eq!(read_member(&mut archive, 2), "{\"n\":2,\"pad\":\"xx\"}\n");
    }

    /// An archive whose members lie past 4 GiB and that has more than 65,535 of them: written
    /// after a 4 GiB hole (a sparse file, so the test writes a few MB), then read by the `zip`
    /// crate (what `cxrlake import release` uses), by the import's member reader and by Python's
    /// `zipfile`.
    #[test]
    fn members_past_4_gib_and_past_65535_get_zip64_records_every_reader_reads() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("qa.zip");
        let mut file = File::create(&path).expect("create");
        let hole = (1u64 << 32) + 12_345;
        file.seek(SeekFrom::Start(hole)).expect("seek past 4 GiB");
        let mut writer = ZipWriter::new(BufWriter::new(file)).expect("writer");
        let members = 70_000;
        for n in 0..members {
            writer.add(member(n)).expect("add");
        }
        writer.finish().expect("finish");

        let mut archive = zip::ZipArchive::new(File::open(&path).expect("open")).expect("zip");
        assert_eq!(archive.len(), members);
        for n in [0, 1, 65_535, members - 1] {
            assert_eq!(
                read_member(&mut archive, n),
                format!("{{\"n\":{n},\"pad\":\"{}\"}}\n", "x".repeat(n % 97))
            );
            assert!(archive.by_index_raw(n).expect("raw").header_start() >= hole);
        }
        let mut stored = Vec::new();
        let mut imported =
            crate::import::members::Member::read(&mut archive, members - 1, &mut stored)
                .expect("read")
                .expect("a release member");
        assert_eq!(imported.study_id, format!("s{}", 50_000_000 + members - 1));
        assert!(imported.inflate(&stored, &mut Vec::new()).is_ok());

        let script = "import sys, zipfile\n\
            z = zipfile.ZipFile(sys.argv[1])\n\
            names = z.namelist()\n\
            assert len(names) == int(sys.argv[2]), len(names)\n\
            assert z.testzip() is None\n\
            print(z.read(names[-1]).decode().strip())\n";
        let output = std::process::Command::new("python3")
            .args(["-c", script])
            .arg(&path)
            .arg(members.to_string())
            .output()
            .expect("python3 must be installed");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(stdout.starts_with("{\"n\":69999,"), "{stdout}");
    }
}
