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
    hash_reader(File::open(path)?)
}

fn hash_reader(mut f: File) -> io::Result<(String, u64)> {
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

/// Why `rel`, a path read from a stored record (a manifest, a retention record), cannot name a
/// file inside the run directory: `None` when it is a plain relative path of normal components.
/// Refused: empty paths, absolute paths, `.`/`..`/empty components, backslashes (a Windows
/// separator), NUL and other control characters, drive prefixes, and absurd lengths.
pub fn unsafe_relative(rel: &str) -> Option<&'static str> {
    if rel.is_empty() {
        return Some("the path is empty");
    }
    if rel.len() > 4096 {
        return Some("the path is longer than 4096 bytes");
    }
    if rel.starts_with('/') {
        return Some("the path is absolute");
    }
    if rel.contains('\\') {
        return Some("the path contains a backslash");
    }
    if rel.chars().any(char::is_control) {
        return Some("the path contains a NUL or control character");
    }
    if rel.split('/').next().is_some_and(|c| c.contains(':')) {
        return Some("the path starts with a drive or scheme prefix");
    }
    for c in rel.split('/') {
        match c {
            "" => return Some("the path has an empty component"),
            "." | ".." => return Some("the path has a `.` or `..` component"),
            _ => {}
        }
    }
    None
}

/// Resolves `rel` (from a stored record) inside `root`, for reading, hashing or deleting. The
/// path must be a plain relative path ([`unsafe_relative`]), no directory on the way may be a
/// symbolic link, and the file itself, when it exists, must be a regular file (not a symlink, a
/// FIFO that would block a reader, or a device). A file that does not exist is not an error
/// here: the caller decides what missing means.
pub fn resolve_in(root: &Path, rel: &str) -> Result<std::path::PathBuf, crate::StoreError> {
    if let Some(why) = unsafe_relative(rel) {
        return Err(crate::StoreError::Integrity(format!(
            "refusing artifact path {rel:?}: {why} (paths must stay inside the run directory)"
        )));
    }
    let mut p = root.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for (i, c) in parts.iter().enumerate() {
        p.push(c);
        let last = i + 1 == parts.len();
        match fs::symlink_metadata(&p) {
            Err(_) => return Ok(root.join(rel)),
            Ok(m) if m.file_type().is_symlink() => {
                return Err(crate::StoreError::Integrity(format!(
                    "refusing artifact path {rel:?}: {} is a symbolic link (paths must stay inside the run directory)",
                    parts[..=i].join("/")
                )));
            }
            Ok(m) if last && !m.is_file() => {
                return Err(crate::StoreError::Integrity(format!(
                    "refusing artifact path {rel:?}: it is not a regular file"
                )));
            }
            Ok(m) if !last && !m.is_dir() => return Ok(root.join(rel)),
            Ok(_) => {}
        }
    }
    Ok(p)
}

/// Opens a file named by a stored record, resolved with [`resolve_in`] and opened without
/// following a symbolic link (so a link swapped in after the check is not followed either) and
/// without blocking on a FIFO. `Ok(None)` when the file does not exist.
pub fn open_in(root: &Path, rel: &str) -> Result<Option<File>, crate::StoreError> {
    let path = resolve_in(root, rel)?;
    let mut opts = OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let f = match opts.open(&path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(crate::StoreError::Integrity(format!(
                "cannot open artifact {rel:?}: {e}"
            )));
        }
        Ok(f) => f,
    };
    if !f.metadata()?.is_file() {
        return Err(crate::StoreError::Integrity(format!(
            "refusing artifact path {rel:?}: it is not a regular file"
        )));
    }
    Ok(Some(f))
}

/// [`sha256_file`] of a file named by a stored record ([`open_in`]). `Ok(None)` when the file
/// does not exist.
pub fn sha256_in(root: &Path, rel: &str) -> Result<Option<(String, u64)>, crate::StoreError> {
    match open_in(root, rel)? {
        None => Ok(None),
        Some(f) => hash_reader(f).map(Some).map_err(Into::into),
    }
}

/// Reads a file of a run directory the way every reader of stored runs must ([`open_in`]):
/// only a regular file inside `root`. A missing file is `NotFound`; a refused path is
/// `InvalidData` with the reason.
pub fn read_in(root: &Path, rel: &str) -> io::Result<Vec<u8>> {
    match open_in(root, rel) {
        Ok(Some(mut f)) => {
            let mut v = Vec::new();
            f.read_to_end(&mut v)?;
            Ok(v)
        }
        Ok(None) => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{rel}: no such file"),
        )),
        Err(e) => Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
    }
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
