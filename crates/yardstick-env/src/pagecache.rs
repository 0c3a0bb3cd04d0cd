//! Making reads cold: dropping the kernel's page cache before a measurement that must start
//! from storage (a cold start, a cold pass of a data loader).

use std::io::Write;
use std::path::Path;

/// `sync`, then `3` into `/proc/sys/vm/drop_caches` (page cache, dentries and inodes of the
/// whole machine). Needs root (or a writable `/proc/sys/vm`); the error says why it failed.
pub fn drop_page_cache() -> std::io::Result<()> {
    // SAFETY: sync(2) has no arguments.
    unsafe { libc::sync() };
    std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/sys/vm/drop_caches")
        .and_then(|mut f| f.write_all(b"3\n"))
}

/// Evicts one file's clean pages from the page cache (`posix_fadvise(POSIX_FADV_DONTNEED)`),
/// which any user who can open the file may ask. Dirty pages are written first (`fdatasync`) so
/// they can be dropped too.
pub fn evict_file(path: &Path) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path)?;
    // A file opened read-only may still carry dirty pages from an earlier writer.
    let _ = f.sync_data();
    // SAFETY: the descriptor is open for the duration of the call.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(rc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_can_be_evicted_and_a_missing_one_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![7u8; 1 << 16]).unwrap();
        evict_file(&p).unwrap();
        // Still readable, and unchanged, after its pages are dropped.
        assert_eq!(std::fs::read(&p).unwrap(), vec![7u8; 1 << 16]);
        let e = evict_file(&dir.path().join("missing")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }
}

/// The share of a file's pages that are in the page cache now (`mincore` over a read-only
/// mapping), in `[0, 1]`; `None` for an empty file or where the kernel will not say.
pub fn resident_fraction(path: &Path) -> Option<f64> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).ok()?;
    let len = usize::try_from(f.metadata().ok()?.len()).ok()?;
    if len == 0 {
        return None;
    }
    // SAFETY: sysconf has no memory-safety preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
    let pages = len.div_ceil(page);
    // SAFETY: a private read-only mapping of an open file; it is unmapped below and never read
    // through (mincore only reports residency).
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            f.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return None;
    }
    let mut vec = vec![0u8; pages];
    // SAFETY: `addr` maps `len` bytes and `vec` holds one byte per page of it.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    // SAFETY: the mapping made above, of `len` bytes.
    unsafe { libc::munmap(addr, len) };
    if rc != 0 {
        return None;
    }
    Some(vec.iter().filter(|&&b| b & 1 == 1).count() as f64 / pages as f64)
}

#[cfg(test)]
mod residency {
    use super::*;

    #[test]
    fn reading_a_file_makes_it_resident_and_evicting_it_does_not_leave_it_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![1u8; 1 << 20]).unwrap();
        let _ = std::fs::read(&p).unwrap();
        assert_eq!(resident_fraction(&p), Some(1.0));
        evict_file(&p).unwrap();
        let after = resident_fraction(&p).unwrap();
        assert!(
            (0.0..1.0).contains(&after),
            "resident after eviction: {after}"
        );
        std::fs::write(dir.path().join("empty"), b"").unwrap();
        assert_eq!(resident_fraction(&dir.path().join("empty")), None);
    }
}
