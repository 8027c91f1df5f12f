//! The fingerprint of a model: `xxh3:` + xxh3-64 over its files' bytes,
//! each prefixed by its length (an absent file by a marker), so moving
//! bytes between files changes it. One definition serves the transformer
//! folders, model2vec folders, and `build.rs` for the bundled model — so
//! the bundled model and the same files loaded as a folder agree.

/// The fingerprint of `parts`, in order (`None` for an absent file).
pub(super) fn fingerprint(parts: &[Option<&[u8]>]) -> String {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    for part in parts {
        match part {
            Some(bytes) => {
                hasher.update(&(bytes.len() as u64).to_le_bytes());
                hasher.update(bytes);
            }
            None => hasher.update(&u64::MAX.to_le_bytes()),
        }
    }
    format!("xxh3:{:016x}", hasher.digest())
}
