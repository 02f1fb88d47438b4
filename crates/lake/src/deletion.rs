//! Delta deletion vectors: the rows of a data file that a table version no longer holds, so a
//! replace of a few studies marks their old rows deleted instead of rewriting every file that
//! holds one of them (DESIGN 2.5; Delta protocol, "Deletion Vectors").
//!
//! ```text
//! deletion_vector_<uuid>.bin     (table root; one per replace commit)
//!   1 byte version (1)
//!   per data file: u32 BE size │ u32 LE magic 1681511377 │ 64-bit roaring bitmap (portable)
//!                  │ u32 BE CRC-32 of magic and bitmap
//! add.deletionVector = {storageType "u", pathOrInlineDv: z85(uuid), offset, sizeInBytes,
//!                       cardinality}
//! ```
//!
//! delta-rs 1.1 reads deletion vectors (its table provider skips the rows) but does not write
//! them; cxrlake writes them here and reads them itself where it reads data files directly
//! (`read.rs`).

use deltalake::kernel::{DeletionVectorDescriptor, StorageType};
use deltalake::logstore::ObjectStoreRef;
use object_store::ObjectStoreExt;
use object_store::path::Path;
use roaring::RoaringTreemap;
use uuid::Uuid;

use crate::error::{LakeError, Result};

/// The magic number of a bitmap in the portable 64-bit roaring format.
const MAGIC: u32 = 1_681_511_377;

/// Length of a z85-encoded UUID, the end of a `u` descriptor's `pathOrInlineDv`.
const ENCODED_UUID_LEN: usize = 20;

/// The deleted row indexes that `dv` describes (`table` names the table in errors).
pub(crate) async fn read(
    store: &ObjectStoreRef,
    table: &str,
    dv: &DeletionVectorDescriptor,
) -> Result<RoaringTreemap> {
    let invalid = |detail: String| {
        LakeError::Config(format!(
            "table '{table}': deletion vector {}: {detail}",
            dv.path_or_inline_dv
        ))
    };
    let bitmap = match dv.storage_type {
        StorageType::Inline => {
            let bytes =
                z85::decode(&dv.path_or_inline_dv).map_err(|e| invalid(format!("not z85: {e}")))?;
            check_magic(&bytes).map_err(invalid)?;
            bytes[4..].to_vec()
        }
        StorageType::UuidRelativePath => {
            let path = relative_path(&dv.path_or_inline_dv).map_err(invalid)?;
            let start = u64::try_from(dv.offset.unwrap_or(1))
                .map_err(|_| invalid("negative offset".into()))?;
            let size =
                u64::try_from(dv.size_in_bytes).map_err(|_| invalid("negative size".into()))?;
            let bytes = store.get_range(&path, start..start + 4 + size + 4).await?;
            let stored = u32::from_be_bytes(word(&bytes, 0));
            if u64::from(stored) != size {
                return Err(invalid(format!(
                    "{path} says {stored} bytes, the log {size}"
                )));
            }
            let data = &bytes[4..4 + size as usize];
            check_magic(data).map_err(invalid)?;
            let crc = u32::from_be_bytes(word(&bytes, 4 + size as usize));
            if crc32fast::hash(data) != crc {
                return Err(invalid(format!(
                    "{path}: checksum mismatch (a damaged file)"
                )));
            }
            data[4..].to_vec()
        }
        StorageType::AbsolutePath => {
            return Err(invalid(
                "stored at an absolute path, which cxrlake does not read".into(),
            ));
        }
    };
    let deleted = RoaringTreemap::deserialize_from(bitmap.as_slice())
        .map_err(|e| invalid(format!("not a roaring bitmap: {e}")))?;
    if deleted.len() != dv.cardinality as u64 {
        return Err(invalid(format!(
            "holds {} rows, the log says {}",
            deleted.len(),
            dv.cardinality
        )));
    }
    Ok(deleted)
}

/// The four bytes of `bytes` at `at` (callers checked the length).
fn word(bytes: &[u8], at: usize) -> [u8; 4] {
    [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]
}

fn check_magic(data: &[u8]) -> std::result::Result<(), String> {
    if data.len() < 4 || u32::from_le_bytes(word(data, 0)) != MAGIC {
        return Err("not a portable roaring bitmap (wrong magic number)".into());
    }
    Ok(())
}

/// The file of a `u` descriptor, relative to the table root: an optional prefix folder, then
/// `deletion_vector_<uuid>.bin`.
fn relative_path(path_or_inline_dv: &str) -> std::result::Result<Path, String> {
    let split = path_or_inline_dv
        .len()
        .checked_sub(ENCODED_UUID_LEN)
        .filter(|&at| path_or_inline_dv.is_char_boundary(at))
        .ok_or("shorter than an encoded UUID")?;
    let (prefix, encoded) = path_or_inline_dv.split_at(split);
    let bytes = z85::decode(encoded).map_err(|e| format!("not z85: {e}"))?;
    let uuid = Uuid::from_slice(&bytes).map_err(|e| format!("not a UUID: {e}"))?;
    Ok(file_path(prefix, &uuid))
}

fn file_path(prefix: &str, uuid: &Uuid) -> Path {
    let name = format!("deletion_vector_{uuid}.bin");
    match prefix {
        "" => Path::from(name),
        prefix => Path::from(format!("{prefix}/{name}")),
    }
}

/// The deletion vectors of one commit, gathered in one file (one object-store put).
#[derive(Debug)]
pub(crate) struct DeletionVectorFile {
    uuid: Uuid,
    bytes: Vec<u8>,
}

impl DeletionVectorFile {
    pub(crate) fn new() -> Self {
        Self {
            uuid: Uuid::new_v4(),
            bytes: vec![1],
        }
    }

    /// Appends `deleted`; the descriptor of the data file's new `add` action.
    pub(crate) fn push(&mut self, deleted: &RoaringTreemap) -> Result<DeletionVectorDescriptor> {
        let too_big = || LakeError::Config("a deletion vector file over 2 GiB".into());
        let offset = i32::try_from(self.bytes.len()).map_err(|_| too_big())?;
        let mut data = MAGIC.to_le_bytes().to_vec();
        deleted
            .serialize_into(&mut data)
            .map_err(|e| LakeError::Config(format!("a deletion vector: {e}")))?;
        let size = i32::try_from(data.len()).map_err(|_| too_big())?;
        self.bytes.extend_from_slice(&(size as u32).to_be_bytes());
        self.bytes.extend_from_slice(&data);
        self.bytes
            .extend_from_slice(&crc32fast::hash(&data).to_be_bytes());
        Ok(DeletionVectorDescriptor {
            storage_type: StorageType::UuidRelativePath,
            path_or_inline_dv: z85::encode(self.uuid.as_bytes()),
            offset: Some(offset),
            size_in_bytes: size,
            cardinality: deleted.len() as i64,
        })
    }

    /// Whether no vector was pushed.
    pub(crate) fn is_empty(&self) -> bool {
        self.bytes.len() == 1
    }

    /// Writes the file into the table's folder (before the commit that refers to it).
    pub(crate) async fn put(self, store: &ObjectStoreRef) -> Result<()> {
        store
            .put(&file_path("", &self.uuid), self.bytes.into())
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use std::sync::Arc;

    #[tokio::test]
    async fn vectors_read_back_from_a_shared_file() {
        let store: ObjectStoreRef = Arc::new(InMemory::new());
        let mut file = DeletionVectorFile::new();
        let first: RoaringTreemap = [0u64, 7, 8, 1 << 33].into_iter().collect();
        let second: RoaringTreemap = (100u64..5000).collect();
        let a = file.push(&first).expect("first");
        let b = file.push(&second).expect("second");
        assert_eq!(a.offset, Some(1));
        assert_eq!(a.path_or_inline_dv.len(), ENCODED_UUID_LEN);
        file.put(&store).await.expect("put");
        assert_eq!(read(&store, "t", &a).await.expect("a"), first);
        assert_eq!(read(&store, "t", &b).await.expect("b"), second);

        let mut wrong = b.clone();
        wrong.cardinality += 1;
        let err = read(&store, "t", &wrong).await.expect_err("cardinality");
        assert!(err.to_string().contains("the log says"), "{err}");
    }

    #[tokio::test]
    async fn inline_vectors_and_damaged_files() {
        let store: ObjectStoreRef = Arc::new(InMemory::new());
        let deleted: RoaringTreemap = [3u64, 4].into_iter().collect();
        let mut data = MAGIC.to_le_bytes().to_vec();
        deleted.serialize_into(&mut data).expect("serialize");
        while !data.len().is_multiple_of(4) {
            data.push(0);
        }
        let inline = DeletionVectorDescriptor {
            storage_type: StorageType::Inline,
            path_or_inline_dv: z85::encode(&data),
            offset: None,
            size_in_bytes: data.len() as i32,
            cardinality: 2,
        };
        assert_eq!(read(&store, "t", &inline).await.expect("inline"), deleted);

        let mut file = DeletionVectorFile::new();
        let dv = file.push(&deleted).expect("push");
        let path = file_path("", &file.uuid);
        let mut bytes = file.bytes.clone();
        let last = bytes.len() - 5;
        bytes[last] ^= 0xff;
        store.put(&path, bytes.into()).await.expect("put");
        let err = read(&store, "t", &dv).await.expect_err("damaged");
        assert!(err.to_string().contains("checksum"), "{err}");
    }
}
