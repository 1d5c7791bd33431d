//! Packages: the `aam.yaml` manifest, the package layout, reproducible archives
//! and the local registry.

pub mod archive;
pub mod build;
pub mod layout;
pub mod lock;
pub mod manifest;
pub mod registry;
pub mod resolve;
pub mod store;
pub mod validate;

/// Writes a package folder at `dir`: `kit` 1.0.0 holding one skill `skill`
/// (its `SKILL.md` plus `extra` files, by path inside the skill), for tests.
#[cfg(test)]
pub(crate) fn sample_package(dir: &std::path::Path, skill: &str, extra: &[(&str, &str)]) {
    let folder = dir.join("skills").join(skill);
    std::fs::create_dir_all(&folder).unwrap();
    let main = format!("---\nname: {skill}\ndescription: The {skill} skill\n---\n");
    for (path, text) in std::iter::once(("SKILL.md", main.as_str())).chain(extra.iter().copied()) {
        std::fs::write(folder.join(path), text).unwrap();
    }
    let manifest = format!(
        "name: kit\nversion: 1.0.0\ndescription: A kit\nartifacts:\n  skills:\n    - name: {skill}\n      path: skills/{skill}\n"
    );
    std::fs::write(dir.join(manifest::MANIFEST_FILE), manifest).unwrap();
}
