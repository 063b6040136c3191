//! Every file a `dc-*` binary writes goes through [`Output`], so that running as root in a shared
//! directory is safe: an existing file is never followed through a symbolic link, never replaced
//! without `--force`, and a reader never sees a half-written file under its final name.
//!
//! The data goes to `NAME.PID.partial` in the same directory, created with `O_EXCL|O_NOFOLLOW`,
//! mode 0640, and owned by the invoking user under sudo (`SUDO_UID`/`SUDO_GID`). [`Output::commit`]
//! renames it into place (`RENAME_NOREPLACE` unless replacing); dropping an uncommitted output
//! removes it, so a failed start leaves nothing behind. Every error, from creating, writing or
//! committing, names the path the user gave, never the partial file.

use std::ffi::CString;
use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Named, Result, named};

/// The mode of every output file: the invoking user reads and writes, its group reads.
pub const MODE: u32 = 0o640;

/// What happens when the output path already exists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Existing {
    /// Refuse to write (the default).
    #[default]
    Refuse,
    /// Replace a regular file; a symbolic link or anything else is still refused.
    Replace,
}

impl Existing {
    /// What `--force` asks for.
    pub fn forced(force: bool) -> Existing {
        if force {
            Existing::Replace
        } else {
            Existing::Refuse
        }
    }
}

/// A file being written under a temporary name, renamed into place by [`Output::commit`].
#[derive(Debug)]
pub struct Output {
    path: PathBuf,
    partial: PathBuf,
    file: Option<File>,
    existing: Existing,
}

impl Output {
    /// Checks that `path` may be written, then creates its partial file.
    pub fn create(path: impl AsRef<Path>, existing: Existing) -> Result<Output> {
        let path = path.as_ref().to_path_buf();
        check_target(&path, existing)?;
        let partial = partial_path(&path);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(MODE)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&partial)
            .map_err(|e| cannot_create(&path, e))?;
        let out = Output {
            path,
            partial,
            file: Some(file),
            existing,
        };
        out.set_owner_and_mode()?;
        Ok(out)
    }

    /// The final name.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the data is until [`Output::commit`]; what a killed writer leaves behind.
    pub fn partial_path(&self) -> &Path {
        &self.partial
    }

    fn parts(&mut self) -> (&Path, &mut File) {
        (&self.path, self.file.as_mut().expect("open until commit"))
    }

    /// Mode 0640 whatever the umask; under sudo, the user who ran sudo owns the file.
    fn set_owner_and_mode(&self) -> Result<()> {
        let file = self.file.as_ref().expect("open until commit");
        file.set_permissions(Permissions::from_mode(MODE))
            .map_err(|e| Error::io(&self.path, e))?;
        if let Some((uid, gid)) = sudo_user() {
            std::os::unix::fs::fchown(file, Some(uid), Some(gid))
                .map_err(|e| Error::io(&self.path, e))?;
        }
        Ok(())
    }

    /// Flushes the file and renames it to its final name.
    pub fn commit(mut self) -> Result<()> {
        let mut file = self.file.take().expect("open until commit");
        file.flush().map_err(|e| Error::io(&self.path, e))?;
        drop(file);
        let renamed = match self.existing {
            Existing::Refuse => rename_noreplace(&self.partial, &self.path),
            Existing::Replace => {
                check_target(&self.path, Existing::Replace)?;
                std::fs::rename(&self.partial, &self.path)
            }
        };
        match renamed {
            Ok(()) => {
                self.partial.clear();
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(exists(&self.path)),
            Err(e) => Err(Error::io(&self.path, e)),
        }
    }
}

/// Its errors name the final path, whoever passes them on: the partial name means nothing to the user.
impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let (path, file) = self.parts();
        file.write(buf).map_err(|e| named(path, e))
    }

    fn flush(&mut self) -> io::Result<()> {
        let (path, file) = self.parts();
        file.flush().map_err(|e| named(path, e))
    }
}

/// A copy of `e` (an `io::Error` is not `Clone`) for a writer that returns one failure to every later
/// call; the copy of an [`Output`]'s error still names its path once.
pub fn copy_error(e: &io::Error) -> io::Error {
    match e.get_ref().and_then(|inner| inner.downcast_ref::<Named>()) {
        Some(n) => named(&n.path, copy_error(&n.cause)),
        None => io::Error::new(e.kind(), e.to_string()),
    }
}

/// Creating the partial file failed: the user gave `path`, so the error names it.
fn cannot_create(path: &Path, e: io::Error) -> Error {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let msg = if e.kind() == io::ErrorKind::NotFound {
        format!(
            "cannot be created: the directory {} does not exist",
            dir.display()
        )
    } else {
        format!("cannot be created: {e}")
    };
    Error::Output {
        path: path.to_path_buf(),
        msg,
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if !self.partial.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.partial);
        }
    }
}

/// Writes `bytes` to `path` through an [`Output`].
pub fn write(path: impl AsRef<Path>, existing: Existing, bytes: impl AsRef<[u8]>) -> Result<()> {
    let mut out = Output::create(path, existing)?;
    out.write_all(bytes.as_ref())
        .map_err(|e| Error::io(out.path(), e))?;
    out.commit()
}

/// `NAME.PID.partial` beside `path`.
pub fn partial_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.partial", std::process::id()));
    path.with_file_name(name)
}

fn exists(path: &Path) -> Error {
    Error::Exists {
        path: path.to_path_buf(),
    }
}

/// Refuses an existing path, unless replacing a regular file: what [`Output::create`] checks
/// first, for a command to call before long work whose result it will write there.
pub fn check_target(path: &Path, existing: Existing) -> Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(path, e)),
    };
    let refuse = |msg: &str| Error::Output {
        path: path.to_path_buf(),
        msg: msg.into(),
    };
    if meta.file_type().is_symlink() {
        return Err(refuse(
            "is a symbolic link; an output is never written through or over one",
        ));
    }
    if !meta.file_type().is_file() {
        return Err(refuse("exists and is not a regular file"));
    }
    match existing {
        Existing::Refuse => Err(exists(path)),
        Existing::Replace => Ok(()),
    }
}

/// `renameat2(RENAME_NOREPLACE)`: fails with `AlreadyExists` if `to` appeared meanwhile.
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(io::Error::other);
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: both are NUL-terminated paths that live across the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The user who ran sudo, when running as root through sudo.
fn sudo_user() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let id = |var: &str| std::env::var(var).ok()?.parse::<u32>().ok();
    Some((id("SUDO_UID")?, id("SUDO_GID")?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn data_appears_under_the_final_name_only_at_commit_with_mode_0640() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        let mut out = Output::create(&path, Existing::Refuse).unwrap();
        out.write_all(b"{}\n").unwrap();
        let partial = format!("t.json.{}.partial", std::process::id());
        assert_eq!(listing(dir.path()), [partial.as_str()]);
        out.commit().unwrap();
        assert_eq!(listing(dir.path()), ["t.json"]);
        assert_eq!(std::fs::read(&path).unwrap(), b"{}\n");
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o640);
    }

    #[test]
    fn an_existing_file_is_kept_unless_replacing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        std::fs::write(&path, "old").unwrap();
        let err = write(&path, Existing::Refuse, "new").unwrap_err();
        assert_eq!(err.remedy(), Some(crate::error::Remedy::Replace));
        assert_eq!(
            err.to_string(),
            format!("{}: already exists", path.display())
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        write(&path, Existing::Replace, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(listing(dir.path()), ["t.json"]);
    }

    #[test]
    fn a_symbolic_link_is_never_followed_nor_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("victim");
        std::fs::write(&target, "precious").unwrap();
        let link = dir.path().join("t.pfw.gz");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for existing in [Existing::Refuse, Existing::Replace] {
            let err = write(&link, existing, "evil").unwrap_err().to_string();
            assert!(
                err.ends_with("is a symbolic link; an output is never written through or over one"),
                "{err}"
            );
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn a_file_that_appears_while_writing_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        let out = Output::create(&path, Existing::Refuse).unwrap();
        std::fs::write(&path, "theirs").unwrap();
        assert!(out.commit().is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "theirs");
        assert_eq!(listing(dir.path()), ["t.json"]);
    }

    #[test]
    fn a_missing_directory_is_named_with_the_path_given_not_the_partial_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nowhere/x.parquet");
        let err = Output::create(&path, Existing::Refuse)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            format!(
                "{}: cannot be created: the directory {} does not exist",
                path.display(),
                dir.path().join("nowhere").display()
            )
        );
        assert!(listing(dir.path()).is_empty());
    }

    #[test]
    fn dropping_an_uncommitted_output_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = Output::create(dir.path().join("t.json"), Existing::Refuse).unwrap();
        out.write_all(b"half").unwrap();
        drop(out);
        assert!(listing(dir.path()).is_empty());
    }
}
