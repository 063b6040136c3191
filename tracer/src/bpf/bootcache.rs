//! Struct offsets read from the kernel's BTF, kept for the rest of the boot in
//! `/run/datacrumbs/struct-offsets`: parsing the BTF took most of a start's CPU time (0.18 s of
//! 0.6 s on a 2-core machine), and the running kernel's BTF cannot change before the next boot. The
//! file names the boot it was written in (`/proc/sys/kernel/random/boot_id`); one of another boot,
//! or one that another user could have written, is not read.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Context, Result, bail};

pub const DIR: &str = "/run/datacrumbs";
const FILE: &str = "struct-offsets";
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// The offsets known in this boot, `struct.member` → byte offset.
pub struct BootCache {
    file: PathBuf,
    boot_id: Option<String>,
    entries: BTreeMap<String, u16>,
}

impl BootCache {
    /// This boot's offsets in `dir`; none when the file is missing, of another boot, or not
    /// trusted (a bad file is said, and replaced at the next [`BootCache::put`]).
    pub fn open(dir: &Path) -> BootCache {
        let boot_id = std::fs::read_to_string(BOOT_ID)
            .ok()
            .map(|s| s.trim().to_owned());
        BootCache::open_for(dir, boot_id)
    }

    fn open_for(dir: &Path, boot_id: Option<String>) -> BootCache {
        let file = dir.join(FILE);
        let entries = match (&boot_id, read_trusted(dir, &file)) {
            (Some(boot), Some(text)) => parse(&text, &file, boot).unwrap_or_else(|e| {
                log::warn!(
                    "{}; reading the kernel's BTF instead",
                    datasets::error::chain(&e)
                );
                BTreeMap::new()
            }),
            _ => BTreeMap::new(),
        };
        BootCache {
            file,
            boot_id,
            entries,
        }
    }

    pub fn get(&self, key: &str) -> Option<u16> {
        self.entries.get(key).copied()
    }

    /// The entries whose key starts with `prefix`, in key order.
    pub fn with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, u16)> {
        (self.entries.range(prefix.to_owned()..))
            .take_while(move |(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.as_str(), *v))
    }

    /// Adds `key` and rewrites the file; one that cannot be written only costs the next run the
    /// parse, so that is logged, not failed.
    pub fn put(&mut self, key: &str, offset: u16) {
        self.put_all([(key.to_owned(), offset)]);
    }

    /// [`BootCache::put`] of each entry, with one rewrite.
    pub fn put_all(&mut self, entries: impl IntoIterator<Item = (String, u16)>) {
        self.entries.extend(entries);
        if let Err(e) = self.write() {
            log::debug!("{}: {}", self.file.display(), datasets::error::chain(&e));
        }
    }

    fn write(&self) -> Result<()> {
        let Some(boot) = &self.boot_id else {
            bail!("no boot id in {BOOT_ID}");
        };
        let dir = self
            .file
            .parent()
            .context("the cache file has no directory")?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("creating {}", dir.display()))?;
        let tmp = self
            .file
            .with_extension(format!("{}.tmp", std::process::id()));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .with_context(|| format!("creating {}", tmp.display()))?;
        let mut text = format!("boot {boot}\n");
        for (k, v) in &self.entries {
            text.push_str(&format!("{k} {v}\n"));
        }
        f.write_all(text.as_bytes())?;
        drop(f);
        std::fs::rename(&tmp, &self.file).with_context(|| format!("renaming {}", tmp.display()))
    }
}

/// The file's text when it and its directory belong to this user and no one else may write them.
fn read_trusted(dir: &Path, file: &Path) -> Option<String> {
    // SAFETY: geteuid takes no arguments.
    let me = unsafe { libc::geteuid() };
    let ok = |p: &Path| {
        std::fs::symlink_metadata(p).is_ok_and(|m| m.uid() == me && m.mode() & 0o022 == 0)
    };
    if !ok(dir) || !ok(file) {
        return None;
    }
    std::fs::read_to_string(file).ok()
}

/// `boot ID` then `struct.member offset` lines; empty when the file is of another boot.
fn parse(text: &str, file: &Path, boot: &str) -> Result<BTreeMap<String, u16>> {
    let mut lines = text.lines().enumerate();
    match lines.next().map(|(_, l)| l.split_once(' ')) {
        Some(Some(("boot", id))) if id == boot => {}
        Some(Some(("boot", _))) => return Ok(BTreeMap::new()),
        _ => bail!("{}:1: the first line is not `boot ID`", file.display()),
    }
    let mut entries = BTreeMap::new();
    for (i, line) in lines {
        let at = || format!("{}:{}", file.display(), i + 1);
        let (key, offset) = line
            .split_once(' ')
            .with_context(|| format!("{}: `{line}` is not `struct.member offset`", at()))?;
        let offset = offset
            .parse()
            .with_context(|| format!("{}: offset `{offset}` is not a number", at()))?;
        entries.insert(key.to_owned(), offset);
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn boot(id: &str) -> Option<String> {
        Some(id.to_owned())
    }

    #[test]
    fn offsets_come_back_in_the_same_boot_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cache");
        let mut c = BootCache::open_for(&dir, boot("b1"));
        assert_eq!(c.get("request.q"), None);
        c.put("request.q", 16);
        c.put("gendisk.major", 0);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join(FILE)), 0o600);
        let again = BootCache::open_for(&dir, boot("b1"));
        assert_eq!(again.get("request.q"), Some(16));
        assert_eq!(again.get("gendisk.major"), Some(0));
        assert_eq!(BootCache::open_for(&dir, boot("b2")).get("request.q"), None);
    }

    #[test]
    fn a_file_others_may_write_is_not_read() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cache");
        BootCache::open_for(&dir, boot("b1")).put("request.q", 16);
        let file = dir.join(FILE);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o620)).unwrap();
        assert_eq!(BootCache::open_for(&dir, boot("b1")).get("request.q"), None);
    }

    #[test]
    fn a_bad_line_is_named_by_file_and_line() {
        let f = Path::new("/run/x");
        let e = parse("boot b1\nrequest.q 16\nrequest.q sixteen\n", f, "b1").unwrap_err();
        assert_eq!(
            datasets::error::chain(&e),
            "/run/x:3: offset `sixteen` is not a number: invalid digit found in string"
        );
        let e = parse("request.q 16\n", f, "b1").unwrap_err();
        assert_eq!(
            datasets::error::chain(&e),
            "/run/x:1: the first line is not `boot ID`"
        );
        let e = parse("boot b1\nrequest.q\n", f, "b1").unwrap_err();
        assert_eq!(
            datasets::error::chain(&e),
            "/run/x:2: `request.q` is not `struct.member offset`"
        );
    }
}
