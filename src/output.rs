//! Writing results: output files replaced only on success, paths checked
//! before the work, and standard output that treats a closed pipe as the
//! reader's choice rather than an error.

use std::io::{self, Write};
use std::path::Path;

use crate::{Error, Result};

/// Fail now, before any work, when `path` cannot become an output file: its
/// directory is missing, not a directory or not writable, or `path` itself
/// is a directory.
pub(crate) fn check_output_path(path: &Path) -> Result<()> {
    let dir = parent(path);
    if !dir.exists() {
        return Err(Error::Usage(format!(
            "cannot write {}: directory {} does not exist",
            path.display(),
            dir.display()
        )));
    }
    if !dir.is_dir() {
        return Err(Error::Usage(format!(
            "cannot write {}: {} is not a directory",
            path.display(),
            dir.display()
        )));
    }
    if path.is_dir() {
        return Err(Error::Usage(format!(
            "cannot write {}: it is a directory",
            path.display()
        )));
    }
    // The output is written to a temporary file next to it: try making one
    // (permissions alone do not tell, e.g. on a read-only file system).
    let dir = temp_dir_for(path);
    if let Err(e) = output_builder().tempfile_in(&dir) {
        // The OS's reason alone: tempfile's error names its probe file.
        let e = e
            .raw_os_error()
            .map_or_else(|| io::Error::from(e.kind()), io::Error::from_raw_os_error);
        return Err(Error::Usage(format!(
            "cannot write {}: cannot create a file in {}: {e}",
            path.display(),
            dir.display()
        )));
    }
    Ok(())
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Where the temporary file that becomes `path` is made: next to it, so
/// that a rename puts it in place, unless `path` is something other than a
/// regular file (a device, a pipe), which gets a copy (see [`persist`]).
pub(crate) fn temp_dir_for(path: &Path) -> std::path::PathBuf {
    match std::fs::metadata(path) {
        Ok(m) if !m.file_type().is_file() => std::env::temp_dir(),
        _ => parent(path).to_path_buf(),
    }
}

/// Write `path` through `write` into a temporary file next to it, renamed into
/// place only when `write` succeeds: on any failure an existing file is left
/// as it was and no partial file remains.
pub fn write_file(path: &Path, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    check_output_path(path)?;
    let tmp = output_builder()
        .suffix(".tmp")
        .tempfile_in(temp_dir_for(path))
        .map_err(Error::io(format!(
            "cannot create a temporary file next to {}",
            path.display()
        )))?;
    let mut w = io::BufWriter::with_capacity(1 << 16, tmp);
    write(&mut w)?;
    let tmp = w
        .into_inner()
        .map_err(|e| e.into_error())
        .map_err(Error::io(format!("cannot write {}", path.display())))?;
    tmp.as_file()
        .sync_all()
        .map_err(Error::io(format!("cannot write {}", path.display())))?;
    persist(tmp, path).map_err(Error::io(format!("cannot replace {}", path.display())))?;
    Ok(())
}

/// Put the finished temporary file `tmp` in place of `path`: renamed over a
/// regular file (or none), but copied into anything else that is there, a
/// device such as `/dev/null`, a pipe or a terminal. A rename would replace
/// the device itself: as root, `-o /dev/null` left a regular file there,
/// which every later reader of /dev/null then read back (a build's probe
/// of rustc failed on its contents).
pub fn persist(tmp: tempfile::NamedTempFile, path: &Path) -> io::Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if !m.file_type().is_file() => {
            let mut to = std::fs::OpenOptions::new().write(true).open(path)?;
            io::copy(&mut tmp.reopen()?, &mut to)?;
            to.flush()
        }
        _ => tmp.persist(path).map(|_| ()).map_err(|e| e.error),
    }
}

/// Temporary files that become outputs: named `.cprace-*` and created with
/// mode 0666 less the umask, like any file a command writes (a temporary
/// file's default, 0600, would leave traces unreadable to the group).
pub(crate) fn output_builder() -> tempfile::Builder<'static, 'static> {
    let mut b = tempfile::Builder::new();
    b.prefix(".cprace-");
    #[cfg(unix)]
    b.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    b
}

/// Stream `write` to standard output; a closed pipe ends it quietly.
pub fn to_stdout(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    crate::pipe::grow_pipe(1);
    let mut w = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    match write(&mut w).and_then(|_| w.flush()) {
        Err(e) if crate::error::io_broken_pipe(&e) => Ok(()),
        r => r.map_err(Error::io("cannot write to standard output")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_write_keeps_the_old_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.txt");
        std::fs::write(&p, "old").unwrap();
        let r = write_file(&p, |w| {
            w.write_all(b"partial")?;
            Err(Error::Usage("boom".into()))
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        write_file(&p, |w| Ok(w.write_all(b"new")?)).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
    }

    #[cfg(unix)]
    #[test]
    fn a_device_is_written_into_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        // A link to /dev/null stands for the device: a rename would replace
        // the link (as root, `-o /dev/null` replaced the device itself).
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("null");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        write_file(&link, |w| Ok(w.write_all(b"discarded")?)).unwrap();
        let m = std::fs::symlink_metadata(&link).unwrap();
        assert!(m.file_type().is_symlink(), "the link was replaced");
        assert!(
            std::fs::metadata(&link)
                .unwrap()
                .file_type()
                .is_char_device()
        );
        let tmp = tempfile::NamedTempFile::new().unwrap();
        persist(tmp, &link).unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // Nothing left beside it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn missing_directories_are_refused_before_any_work() {
        let e = check_output_path(Path::new("/nonexistent-cprace/p.svg")).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        assert!(check_output_path(Path::new("/tmp")).is_err());
        assert!(check_output_path(Path::new("plain-name.csv")).is_ok());
    }

    #[test]
    fn broken_pipes_are_recognised_through_wrappers() {
        let bp = || io::Error::from(io::ErrorKind::BrokenPipe);
        assert!(Error::from(bp()).is_broken_pipe());
        assert!(Error::io("writing")(bp()).is_broken_pipe());
        let csv_err: csv::Error = bp().into();
        assert!(Error::from(io::Error::from(csv_err)).is_broken_pipe());
        assert!(!Error::from(io::Error::other("other")).is_broken_pipe());
        assert!(!Error::Usage("other".into()).is_broken_pipe());
    }
}
