//! Durable, atomic file writes and hashing.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

/// Writes `bytes` to `path` so that a reader sees either the old file or the complete new one,
/// never a partial file: write to a temporary name in the same directory, fsync, rename, fsync
/// the directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    // A sealed (read-only) file of the same name is replaced only by an explicit rewrite, which
    // the rename does regardless of the target's mode on Unix.
    fs::rename(&tmp, path)?;
    sync_dir(dir)
}

/// Fsyncs a directory so a rename inside it is durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Makes a file read-only (sealed).
pub fn seal_file(path: &Path) -> io::Result<()> {
    let mut perm = fs::metadata(path)?.permissions();
    perm.set_readonly(true);
    fs::set_permissions(path, perm)
}

/// The sha256 (hex) and size of a file, streamed.
pub fn sha256_file(path: &Path) -> io::Result<(String, u64)> {
    let mut f = File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        h.update(&buf[..n]);
    }
    Ok((hex::encode(h.finalize()), size))
}

/// The sha256 (hex) of bytes.
pub fn sha256_bytes(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_hashes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b.txt");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let (h, n) = sha256_file(&p).unwrap();
        assert_eq!(n, 3);
        assert_eq!(h, sha256_bytes(b"two"));
        // No temporary files are left behind.
        let names: Vec<_> = fs::read_dir(p.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1);
        seal_file(&p).unwrap();
        assert!(fs::metadata(&p).unwrap().permissions().readonly());
    }
}
