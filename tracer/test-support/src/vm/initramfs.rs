//! The VM's initramfs: busybox, the binaries under test with the shared libraries `ldd` names,
//! kernel modules and the init script, packed with `cpio -H newc` and cached by a hash of all of it.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

#[derive(Clone, Debug, Hash)]
enum Source {
    /// A host file's content.
    Copy(PathBuf),
    /// A host executable without its debug sections (`objcopy --strip-debug`): dc-trace's line
    /// tables are 90% of its size, and the guest unpacks every byte of the initramfs.
    StripDebug(PathBuf),
    /// A host file's content decompressed by `xz -dc` (Debian 6.12's modules are `.ko.xz`, which
    /// busybox's insmod cannot load).
    Unxz(PathBuf),
    Symlink(PathBuf),
    Text {
        content: String,
        mode: u32,
    },
}

/// What the image will hold, keyed by absolute path inside the image.
#[derive(Default)]
pub struct Plan {
    entries: BTreeMap<PathBuf, Source>,
}

impl Plan {
    pub fn text(&mut self, dest: &str, content: String, mode: u32) {
        self.entries
            .insert(PathBuf::from(dest), Source::Text { content, mode });
    }

    /// Places a host file at `dest`; a `.xz` file decompressed.
    pub fn file(&mut self, host: &Path, dest: &str) -> Result<(), String> {
        if !host.is_file() {
            return Err(format!("{} is not a file", host.display()));
        }
        let source = if host.extension().is_some_and(|e| e == "xz") {
            Source::Unxz(host.to_owned())
        } else {
            Source::Copy(host.to_owned())
        };
        self.entries.insert(PathBuf::from(dest), source);
        Ok(())
    }

    /// Places an executable at `dest`, and every shared library it loads at the host's path.
    pub fn binary(&mut self, host: &Path, dest: &str) -> Result<(), String> {
        if !host.is_file() {
            return Err(format!("{} is not a file", host.display()));
        }
        self.entries
            .insert(PathBuf::from(dest), Source::StripDebug(host.to_owned()));
        for lib in shared_libraries(host)? {
            self.mirror(&lib)?;
        }
        Ok(())
    }

    /// Places a host path at the same path in the image, recreating every symlink on the way
    /// (`/lib -> usr/lib` on Debian), so that programs find it where they look on the host.
    pub fn mirror(&mut self, host: &Path) -> Result<(), String> {
        if !host.is_absolute() {
            return Err(format!("{} is not an absolute path", host.display()));
        }
        let mut prefix = PathBuf::from("/");
        let components: Vec<_> = host.components().skip(1).collect();
        for (i, part) in components.iter().enumerate() {
            let Component::Normal(part) = part else {
                return Err(format!("{}: unexpected '..' or '.'", host.display()));
            };
            prefix.push(part);
            let meta = std::fs::symlink_metadata(&prefix)
                .map_err(|e| format!("{}: {e}", prefix.display()))?;
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&prefix)
                    .map_err(|e| format!("{}: {e}", prefix.display()))?;
                self.entries
                    .insert(prefix.clone(), Source::Symlink(target.clone()));
                let mut resolved = prefix.parent().unwrap_or(Path::new("/")).join(target);
                for rest in &components[i + 1..] {
                    resolved.push(rest);
                }
                return self.mirror(&normalize(&resolved));
            }
        }
        self.entries
            .insert(prefix.clone(), Source::Copy(prefix.clone()));
        Ok(())
    }

    /// A hash of every path, every symlink target and every byte of content.
    fn key(&self) -> Result<u64, String> {
        let mut h = DefaultHasher::new();
        for (dest, source) in &self.entries {
            dest.hash(&mut h);
            source.hash(&mut h);
            if let Source::Copy(host) | Source::StripDebug(host) | Source::Unxz(host) = source {
                let bytes =
                    std::fs::read(host).map_err(|e| format!("reading {}: {e}", host.display()))?;
                bytes.hash(&mut h);
            }
        }
        Ok(h.finish())
    }

    /// Returns `cache/<hash>.cpio`, building it only when no image of these exact inputs is there.
    /// Older images in `cache` are removed.
    pub fn build(&self, cache: &Path) -> Result<(PathBuf, bool), String> {
        std::fs::create_dir_all(cache).map_err(|e| format!("{}: {e}", cache.display()))?;
        let key = self.key()?;
        let image = cache.join(format!("{key:016x}.cpio"));
        let cached = image.is_file();
        if !cached {
            let err = |e: std::io::Error| format!("{}: {e}", cache.display());
            let staging = tempfile::tempdir_in(cache).map_err(err)?;
            self.stage(staging.path())?;
            let partial = tempfile::NamedTempFile::new_in(cache).map_err(err)?;
            pack(staging.path(), partial.path())?;
            partial
                .persist(&image)
                .map_err(|e| format!("{}: {e}", image.display()))?;
        }
        for old in std::fs::read_dir(cache).into_iter().flatten().flatten() {
            let path = old.path();
            if path != image && path.extension().is_some_and(|e| e == "cpio") {
                let _ = std::fs::remove_file(&path);
            }
        }
        Ok((image, cached))
    }

    fn stage(&self, root: &Path) -> Result<(), String> {
        for (dest, source) in &self.entries {
            let at = root.join(dest.strip_prefix("/").unwrap_or(dest));
            if let Some(dir) = at.parent() {
                std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            }
            let err = |e: std::io::Error| format!("staging {}: {e}", dest.display());
            match source {
                Source::Copy(host) => {
                    std::fs::copy(host, &at).map_err(err)?;
                }
                Source::StripDebug(host) => {
                    let output = Command::new("objcopy")
                        .arg("--strip-debug")
                        .arg(host)
                        .arg(&at)
                        .output()
                        .map_err(|e| format!("running objcopy (package binutils): {e}"))?;
                    if !output.status.success() {
                        return Err(format!(
                            "objcopy --strip-debug {}: {}",
                            host.display(),
                            String::from_utf8_lossy(&output.stderr)
                        ));
                    }
                }
                Source::Unxz(host) => {
                    let output = Command::new("xz")
                        .arg("-dc")
                        .arg(host)
                        .output()
                        .map_err(|e| format!("running xz (package xz-utils): {e}"))?;
                    if !output.status.success() {
                        return Err(format!(
                            "xz -dc {}: {}",
                            host.display(),
                            String::from_utf8_lossy(&output.stderr)
                        ));
                    }
                    std::fs::write(&at, output.stdout).map_err(err)?;
                }
                Source::Symlink(target) => std::os::unix::fs::symlink(target, &at).map_err(err)?,
                Source::Text { content, mode } => {
                    std::fs::write(&at, content).map_err(err)?;
                    std::fs::set_permissions(&at, std::fs::Permissions::from_mode(*mode))
                        .map_err(err)?;
                }
            }
        }
        Ok(())
    }
}

/// `cpio -o -H newc` of everything under `root`, symlinks kept as symlinks.
fn pack(root: &Path, out: &Path) -> Result<(), String> {
    let mut list = Vec::new();
    walk(root, Path::new("."), &mut list)?;
    let file = std::fs::File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut child = Command::new("cpio")
        .args(["-o", "-H", "newc", "--quiet"])
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(file)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("running cpio (apt package cpio, see scripts/setup.sh): {e}"))?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    for path in &list {
        writeln!(stdin, "{}", path.display()).map_err(|e| format!("writing to cpio: {e}"))?;
    }
    drop(stdin);
    let output = child.wait_with_output().map_err(|e| format!("cpio: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cpio failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

fn walk(root: &Path, rel: &Path, list: &mut Vec<PathBuf>) -> Result<(), String> {
    let dir = root.join(rel);
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = rel.join(entry.file_name());
        list.push(path.clone());
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            walk(root, &path, list)?;
        }
    }
    Ok(())
}

/// The absolute paths of the shared libraries `ldd` says `binary` loads; none for a static one.
fn shared_libraries(binary: &Path) -> Result<Vec<PathBuf>, String> {
    let output = Command::new("ldd")
        .arg(binary)
        .output()
        .map_err(|e| format!("running ldd {}: {e}", binary.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        if stdout.contains("not a dynamic executable")
            || stderr.contains("not a dynamic executable")
        {
            return Ok(Vec::new());
        }
        return Err(format!(
            "ldd {} failed ({}): {stderr}",
            binary.display(),
            output.status
        ));
    }
    let mut libs = Vec::new();
    for line in stdout.lines() {
        let line = line.trim();
        if line.contains("not found") {
            return Err(format!("ldd {}: {line}", binary.display()));
        }
        let path = match line.split_once("=>") {
            Some((_, right)) => right.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(path) = path.filter(|p| p.starts_with('/')) {
            libs.push(PathBuf::from(path));
        }
    }
    Ok(libs)
}

fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(p) => out.push(p),
            _ => {}
        }
    }
    out
}
