//! Members of a release zip: read as stored (still compressed) in archive order by one reader,
//! inflated and checked later by whichever thread decodes them.
//!
//! A chunk's members keep their stored bytes in one buffer of the chunk ([`Member::read`]
//! appends to it; the reader reuses it for the next chunk), and a decoding thread inflates its
//! members one after another into one buffer of its own ([`Member::inflate`]): no allocation
//! per member (with two allocations per member, of every size from tens to hundreds of KiB and
//! the stored ones freed on other threads than the reader's, the import took 2.5 % more CPU).

use std::io::Read;

use zip::CompressionMethod;

/// What a member is, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Qa,
    SceneGraph,
    StudyMetadata,
}

impl Kind {
    fn of(name: &str) -> Option<(Kind, &str)> {
        let file = name.rsplit('/').next().unwrap_or(name);
        [
            (".qa.json", Kind::Qa),
            (".scene_graph.json", Kind::SceneGraph),
            (crate::release::STUDY_METADATA_SUFFIX, Kind::StudyMetadata),
        ]
        .into_iter()
        .find_map(|(suffix, kind)| file.strip_suffix(suffix).map(|study| (kind, study)))
    }

    /// The lake table its rows go to.
    pub fn table(self) -> &'static str {
        match self {
            Kind::Qa => "qa",
            Kind::SceneGraph => "scene_graphs",
            Kind::StudyMetadata => "images",
        }
    }
}

/// The kind, patient folder and study of a member name
/// `…/pXX/pXXXXXXXX/sXXXXXXXX.<kind>.json`.
pub(super) fn member_ids(name: &str) -> Option<(Kind, String, String)> {
    let (kind, study) = Kind::of(name)?;
    let mut parts = name.rsplit('/');
    parts.next();
    let patient = parts.next()?;
    Some((kind, patient.to_string(), study.to_string()))
}

/// One member as stored in its zip.
#[derive(Debug)]
pub(crate) struct Member {
    pub name: String,
    pub kind: Kind,
    /// The study id its file name gives, and the patient id of its folder.
    pub study_id: String,
    pub patient_id: String,
    /// Where its stored bytes lie in its chunk's buffer.
    stored: std::ops::Range<usize>,
    /// Why the stored bytes could not be read whole.
    unreadable: Option<String>,
    method: CompressionMethod,
    crc32: u32,
    /// Bytes once inflated.
    pub size: u64,
}

impl Member {
    /// Reads member `index` of `archive` as stored, its bytes appended to `stored` (its
    /// chunk's buffer); `None` for folders and files that are not release members (the error:
    /// the zip cannot be read there).
    pub fn read<R: Read + std::io::Seek>(
        archive: &mut zip::ZipArchive<R>,
        index: usize,
        stored: &mut Vec<u8>,
    ) -> zip::result::ZipResult<Option<Member>> {
        let mut entry = archive.by_index_raw(index)?;
        if entry.is_dir() {
            return Ok(None);
        }
        let Some((kind, patient_id, study_id)) = member_ids(entry.name()) else {
            return Ok(None);
        };
        let start = stored.len();
        stored.reserve(usize::try_from(entry.compressed_size()).unwrap_or(0));
        let mut unreadable = entry.read_to_end(stored).err().map(|e| e.to_string());
        if entry.encrypted() {
            unreadable = Some("encrypted".into());
        }
        let method = entry.compression();
        Ok(Some(Member {
            name: entry.name().to_string(),
            kind,
            study_id,
            patient_id,
            stored: start..stored.len(),
            unreadable,
            method,
            crc32: entry.crc32(),
            size: entry.size(),
        }))
    }

    /// The member's bytes (its stored bytes in `chunk`, its chunk's buffer) inflated into
    /// `content` (cleared first) and checked against its CRC-32; the error says why they cannot
    /// be used, `content` then holding the bytes as far as they could be inflated.
    pub fn inflate(&mut self, chunk: &[u8], content: &mut Vec<u8>) -> Result<(), String> {
        let stored = chunk.get(self.stored.clone()).unwrap_or_default();
        content.clear();
        let read = match self.method {
            _ if self.unreadable.is_some() => {
                content.extend_from_slice(stored);
                Err(self.unreadable.take().unwrap_or_default())
            }
            CompressionMethod::Stored => {
                content.extend_from_slice(stored);
                Ok(())
            }
            CompressionMethod::Deflated => inflate(stored, self.size, content),
            other => {
                content.extend_from_slice(stored);
                Err(format!("compression method {other} is not supported"))
            }
        };
        read.and_then(|()| {
            if content.len() as u64 == self.size && crc32fast::hash(content) == self.crc32 {
                Ok(())
            } else {
                Err("invalid checksum or size".to_string())
            }
        })
        .map_err(|error| format!("unreadable member: {error}"))
    }
}

/// Inflates the raw deflate stream `stored` into `content`, sized for the `size` bytes the
/// zip's directory gives (written in place: no zeroed buffer, no copy of the input); the error
/// says why the stream cannot be inflated whole.
fn inflate(stored: &[u8], size: u64, content: &mut Vec<u8>) -> Result<(), String> {
    use flate2::{Decompress, FlushDecompress, Status};
    // One byte more than announced: a longer stream shows as a size mismatch, not a cut.
    content.reserve(usize::try_from(size).unwrap_or(0).saturating_add(1));
    let mut inflater = Decompress::new(false);
    loop {
        let (before_in, before_out) = (inflater.total_in(), inflater.total_out());
        let input = &stored[usize::try_from(before_in).unwrap_or(stored.len())..];
        match inflater.decompress_vec(input, content, FlushDecompress::Finish) {
            Ok(Status::StreamEnd) => return Ok(()),
            Ok(Status::Ok | Status::BufError) => {
                if content.len() == content.capacity() {
                    content.reserve(content.capacity().max(1 << 16));
                } else if inflater.total_in() == before_in && inflater.total_out() == before_out {
                    return Err("the deflate stream ends early".into());
                }
            }
            Err(error) => return Err(error.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn deflated(bytes: &[u8]) -> Vec<u8> {
        let mut encoder =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(6));
        encoder.write_all(bytes).expect("deflate");
        encoder.finish().expect("deflate")
    }

    #[test]
    fn members_inflate_whole_and_cut_streams_are_refused() {
        let text: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let stored = deflated(&text);
        for announced in [text.len() as u64, 10, 0] {
            let mut content = Vec::new();
            inflate(&stored, announced, &mut content).expect("inflates");
            assert_eq!(content, text, "announced {announced}");
        }
        let mut content = Vec::new();
        let error = inflate(&stored[..stored.len() / 2], text.len() as u64, &mut content)
            .expect_err("a cut stream");
        assert!(error.contains("ends early"), "{error}");
        let mut content = Vec::new();
        assert!(inflate(b"not deflate at all", 100, &mut content).is_err());
    }
}
