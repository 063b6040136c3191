//! The VM's kernels: Debian's `linux-image-amd64` 6.1 and `linux-image-6.12-amd64` in /boot, and
//! the modules the VM loads from them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Kernel series the VM tests: kprobes, fentry and BTF are on in Debian's builds of both, and
/// CONFIG_FPROBE (kprobe_multi) in 6.12's only.
pub const SERIES_6_1: &str = "6.1.";
pub const SERIES_6_12: &str = "6.12.";

#[derive(Clone, Debug)]
pub struct Kernel {
    /// `uname -r` of the kernel, e.g. `6.1.0-56-amd64`.
    pub release: String,
    pub image: PathBuf,
    pub modules_dir: PathBuf,
}

impl Kernel {
    /// The newest `/boot/vmlinuz-<series>*` with its `/lib/modules` tree.
    pub fn find(series: &str) -> Result<Kernel, String> {
        let boot = Path::new("/boot");
        let mut found = Vec::new();
        let mut seen = Vec::new();
        let entries = std::fs::read_dir(boot).map_err(|e| format!("reading /boot: {e}"))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            seen.push(name.clone());
            if let Some(release) = name.strip_prefix("vmlinuz-")
                && release.starts_with(series)
            {
                found.push(release.to_owned());
            }
        }
        found.sort_by_key(|r| numeric_parts(r));
        let Some(release) = found.pop() else {
            seen.sort();
            return Err(format!(
                "no /boot/vmlinuz-{series}* (Debian's linux-image-amd64 or linux-image-6.12-amd64); \
                 /boot has {seen:?}. Run scripts/setup.sh, which installs them"
            ));
        };
        let modules_dir = PathBuf::from("/lib/modules").join(&release);
        if !modules_dir.join("modules.dep").is_file() {
            return Err(format!(
                "{}/modules.dep is missing: the modules of kernel {release} are not installed",
                modules_dir.display()
            ));
        }
        Ok(Kernel {
            image: boot.join(format!("vmlinuz-{release}")),
            release,
            modules_dir,
        })
    }

    /// The `.ko` files that `names` need, dependencies first: the order to insmod them in.
    pub fn module_load_order(&self, names: &[&str]) -> Result<Vec<PathBuf>, String> {
        let dep_file = self.modules_dir.join("modules.dep");
        let text = std::fs::read_to_string(&dep_file)
            .map_err(|e| format!("reading {}: {e}", dep_file.display()))?;
        let mut deps: HashMap<String, (String, Vec<String>)> = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let Some((module, rest)) = line.split_once(':') else {
                return Err(format!(
                    "{}:{}: no ':' after the module path",
                    dep_file.display(),
                    n + 1
                ));
            };
            let requires = rest.split_whitespace().map(str::to_owned).collect();
            deps.insert(module_name(module), (module.to_owned(), requires));
        }
        let builtin =
            std::fs::read_to_string(self.modules_dir.join("modules.builtin")).unwrap_or_default();
        let builtin: Vec<String> = builtin.lines().map(module_name).collect();
        let mut order = Vec::new();
        for name in names
            .iter()
            .filter(|n| !builtin.contains(&n.replace('-', "_")))
        {
            self.visit(&name.replace('-', "_"), &deps, &mut order)?;
        }
        Ok(order
            .into_iter()
            .map(|m| self.modules_dir.join(m))
            .collect())
    }

    fn visit(
        &self,
        name: &str,
        deps: &HashMap<String, (String, Vec<String>)>,
        order: &mut Vec<String>,
    ) -> Result<(), String> {
        let Some((path, requires)) = deps.get(name) else {
            return Err(format!(
                "module {name} is not in {}/modules.dep (built into kernel {}, or missing?)",
                self.modules_dir.display(),
                self.release
            ));
        };
        if order.contains(path) {
            return Ok(());
        }
        for dep in requires {
            self.visit(&module_name(dep), deps, order)?;
        }
        order.push(path.clone());
        Ok(())
    }
}

fn module_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.split(".ko").next().unwrap_or(file).replace('-', "_")
}

fn numeric_parts(release: &str) -> Vec<u64> {
    release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse().ok())
        .collect()
}
