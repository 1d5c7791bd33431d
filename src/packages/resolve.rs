//! Dependency resolution: one version per package, found transitively: the
//! one the registry's `latest` dist-tag names when it satisfies every
//! constraint on the package (a publisher's `--tag next` does not reach plain
//! installs), else the highest that does. A package no version can satisfy
//! is reported with every constraint and who asked for it.

use std::collections::{BTreeMap, VecDeque};

use semver::{Version, VersionReq};

use super::manifest::parse_constraint;
use crate::error::{Error, ErrorCode, Result};

/// A published version and what it depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Its version.
    pub version: Version,
    /// Name to constraint.
    pub dependencies: BTreeMap<String, String>,
    /// Whether the registry's `latest` dist-tag names it.
    pub tagged_latest: bool,
}

/// The version chosen for a package, and every constraint it had to meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The chosen version.
    pub candidate: Candidate,
    /// The constraints on it joined with `, ` (`*` when there were none).
    pub constraint: String,
}

/// One constraint and who made it.
#[derive(Debug, Clone)]
struct Wanted {
    req: VersionReq,
    text: String,
    by: String,
}

/// Resolves `requests` (name, constraint) and everything they depend on.
/// `versions_of` lists the published versions of a package (any order).
/// The order versions are offered in, newest first: by semver precedence, and
/// among versions that differ only in build metadata (which precedence
/// ignores) the one without it first, so `1.0.0` picks `1.0.0`, never a
/// `1.0.0+build` published beside it.
pub fn newest_first(a: &semver::Version, b: &semver::Version) -> std::cmp::Ordering {
    b.cmp_precedence(a)
        .then_with(|| b.build.is_empty().cmp(&a.build.is_empty()))
        .then_with(|| b.cmp(a))
}

/// The newest few of `candidates` (sorted newest first), for a hint.
fn published_versions(candidates: &[Candidate]) -> String {
    const SHOWN: usize = 8;
    let mut text: Vec<String> = candidates.iter().take(SHOWN).map(|c| c.version.to_string()).collect();
    if candidates.len() > SHOWN {
        text.push(format!("and {} older", candidates.len() - SHOWN));
    }
    text.join(", ")
}

/// The candidate a constraint takes from `candidates` (newest first): the
/// one tagged `latest` when it satisfies, else the newest that does. A
/// `plain` request (no constraint but `*`) takes the tagged one even when it
/// is a prerelease, which `*` does not match: what a publisher tagged
/// `latest` is what a plain install gets, as with npm.
pub fn preferred(candidates: Vec<Candidate>, plain: bool, satisfies: impl Fn(&Version) -> bool) -> Option<Candidate> {
    let latest = candidates
        .iter()
        .position(|c| c.tagged_latest && (plain || satisfies(&c.version)));
    match latest {
        Some(at) => candidates.into_iter().nth(at),
        None => candidates.into_iter().find(|c| satisfies(&c.version)),
    }
}

/// Who made a request the user typed, as a conflict names it.
pub const YOUR_REQUEST: &str = "your request";

/// The version each of `requests` (name, constraint, all the user's) and
/// their dependencies resolve to, from `versions_of`.
pub fn resolve(
    requests: &[(String, String)],
    versions_of: impl Fn(&str) -> Result<Vec<Candidate>>,
) -> Result<BTreeMap<String, Resolved>> {
    let asked: Vec<(String, String, String)> = requests
        .iter()
        .map(|(name, text)| (name.clone(), text.clone(), YOUR_REQUEST.to_string()))
        .collect();
    resolve_asked(&asked, versions_of)
}

/// [`resolve`], each request `(name, constraint, by)` saying who made it
/// (`your request`, or a package installed from a folder that depends on it).
pub fn resolve_asked(
    requests: &[(String, String, String)],
    versions_of: impl Fn(&str) -> Result<Vec<Candidate>>,
) -> Result<BTreeMap<String, Resolved>> {
    let mut wanted: BTreeMap<String, Vec<Wanted>> = BTreeMap::new();
    let mut queue = VecDeque::new();
    for (name, text, by) in requests {
        let req = parse_constraint(text).map_err(|m| Error::invalid_argument(format!("`{name}@{text}`: {m}")))?;
        wanted.entry(name.clone()).or_default().push(Wanted {
            req,
            text: text.clone(),
            by: by.clone(),
        });
        queue.push_back(name.clone());
    }
    let mut chosen: BTreeMap<String, Candidate> = BTreeMap::new();
    let mut steps = 0;
    while let Some(name) = queue.pop_front() {
        steps += 1;
        if steps > 10_000 {
            return Err(
                Error::new(ErrorCode::DependencyConflict, "dependency resolution does not settle")
                    .with_hint("pin the versions of the packages involved"),
            );
        }
        let mut versions = versions_of(&name)?;
        if versions.is_empty() {
            let by = wanted
                .get(&name)
                .and_then(|w| w.first())
                .map(|w| w.by.clone())
                .unwrap_or_default();
            return Err(Error::new(
                ErrorCode::PackageNotFound,
                format!("no package named `{name}` (required by {by})"),
            )
            .with_hint("check the name, or add the registry that has it with `aam registry add`"));
        }
        versions.sort_by(|a, b| newest_first(&a.version, &b.version));
        let constraints = wanted.get(&name).cloned().unwrap_or_default();
        let plain = constraints.iter().all(|w| w.text.trim() == "*");
        let published = published_versions(&versions);
        let Some(pick) = preferred(versions, plain, |v| constraints.iter().all(|w| w.req.matches(v))) else {
            let who: Vec<String> = constraints
                .iter()
                .map(|w| format!("`{}` (required by {})", w.text, w.by))
                .collect();
            let hint = match constraints.len() {
                1 => format!("published versions: {published}; ask for one of them"),
                _ => format!("published versions: {published}; change one of the constraints so they overlap"),
            };
            return Err(Error::new(
                ErrorCode::DependencyConflict,
                format!("no version of `{name}` satisfies {}", who.join(" and ")),
            )
            .with_hint(hint));
        };
        if chosen.get(&name) == Some(&pick) {
            continue;
        }
        let by = format!("`{name}@{}`", pick.version);
        // The constraints the previously chosen version made no longer hold.
        if let Some(previous) = chosen.get(&name) {
            let old_by = format!("`{name}@{}`", previous.version);
            for (dep, list) in wanted.iter_mut() {
                let before = list.len();
                list.retain(|w| w.by != old_by);
                if list.len() != before {
                    queue.push_back(dep.clone());
                }
            }
        }
        for (dep, text) in &pick.dependencies {
            let req = parse_constraint(text).map_err(|m| {
                Error::new(
                    ErrorCode::DependencyConflict,
                    format!("{by} has an invalid constraint on `{dep}`: {m}"),
                )
            })?;
            wanted.entry(dep.clone()).or_default().push(Wanted {
                req,
                text: text.clone(),
                by: by.clone(),
            });
            queue.push_back(dep.clone());
        }
        chosen.insert(name, pick);
    }
    Ok(chosen
        .into_iter()
        .filter_map(|(name, candidate)| {
            let constraints = wanted.get(&name).filter(|w| !w.is_empty())?;
            let mut texts: Vec<&str> = constraints
                .iter()
                .map(|w| w.text.trim())
                .filter(|t| *t != "*")
                .collect();
            texts.sort();
            texts.dedup();
            let constraint = if texts.is_empty() {
                "*".to_string()
            } else {
                texts.join(", ")
            };
            Some((name, Resolved { candidate, constraint }))
        })
        .collect())
}

/// A constraint an installed package puts on another, which the version an
/// install brings would break.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenConstraint {
    /// The installed package that depends on `dependency`, and its version.
    pub dependent: (String, String),
    /// The package being installed.
    pub dependency: String,
    /// What `dependent` requires of it.
    pub constraint: String,
    /// The version the install brings.
    pub version: Version,
}

/// The constraints of installed packages that the versions in `installing`
/// break: installing `dy@2.0.0` while an installed `dx` needs `dy ^1`.
/// `installed` yields each installed package kept as it is (name, version,
/// dependencies); a constraint that does not parse breaks nothing here (the
/// manifest check reports it).
pub fn broken_constraints<'a>(
    installed: impl IntoIterator<Item = (&'a str, &'a str, &'a BTreeMap<String, String>)>,
    installing: &BTreeMap<String, Version>,
) -> Vec<BrokenConstraint> {
    let mut broken = Vec::new();
    for (name, version, dependencies) in installed {
        for (dependency, constraint) in dependencies {
            let Some(new) = installing.get(dependency) else {
                continue;
            };
            if parse_constraint(constraint).is_ok_and(|req| !req.matches(new)) {
                broken.push(BrokenConstraint {
                    dependent: (name.to_string(), version.to_string()),
                    dependency: dependency.clone(),
                    constraint: constraint.clone(),
                    version: new.clone(),
                });
            }
        }
    }
    broken
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_install_breaks_the_constraints_installed_packages_put_on_it() {
        let deps = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(n, c)| (n.to_string(), c.to_string())).collect()
        };
        let dx = deps(&[("dy", "^1")]);
        let dz = deps(&[("dy", ">=1.5"), ("other", "^2")]);
        let installing: BTreeMap<String, Version> = [("dy".to_string(), Version::new(2, 0, 0))].into();
        let installed = [("dx", "1.0.0", &dx), ("dz", "3.0.0", &dz)];
        let broken = broken_constraints(installed, &installing);
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert_eq!(broken[0].dependent, ("dx".to_string(), "1.0.0".to_string()));
        assert_eq!(
            (broken[0].dependency.as_str(), broken[0].constraint.as_str()),
            ("dy", "^1")
        );
        let within: BTreeMap<String, Version> = [("dy".to_string(), Version::new(1, 6, 0))].into();
        assert!(broken_constraints(installed, &within).is_empty());
    }

    fn registry(name: &str) -> Result<Vec<Candidate>> {
        let c = |v: &str, deps: &[(&str, &str)]| Candidate {
            version: Version::parse(v).unwrap(),
            dependencies: deps.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
            // `latest` lags behind `2.0.0`, which a publisher tagged `next`.
            tagged_latest: name == "tagged" && v == "1.1.0",
        };
        Ok(match name {
            "app" => vec![c("1.0.0", &[("lib", "^1.0"), ("util", ">=1.1")])],
            "lib" => vec![
                c("1.0.0", &[("util", "^1.0")]),
                c("1.4.0", &[("util", "^1.2")]),
                c("2.0.0", &[]),
            ],
            "util" => vec![c("1.0.0", &[]), c("1.1.0", &[]), c("1.2.5", &[]), c("2.0.0", &[])],
            "strict" => vec![c("1.0.0", &[("util", "=1.0.0")])],
            "tagged" => vec![c("1.0.0", &[]), c("1.1.0", &[]), c("1.2.0", &[]), c("2.0.0", &[])],
            _ => vec![],
        })
    }

    fn versions(map: &BTreeMap<String, Resolved>) -> Vec<String> {
        map.iter()
            .map(|(n, r)| format!("{n}@{}", r.candidate.version))
            .collect()
    }

    #[test]
    fn a_plain_version_comes_before_its_build_variants() {
        let mut versions: Vec<Version> = ["1.0.0+zzz", "0.9.0", "1.0.0", "1.0.0+aaa", "1.0.1-rc.1"]
            .iter()
            .map(|v| Version::parse(v).unwrap())
            .collect();
        versions.sort_by(newest_first);
        let order: Vec<String> = versions.iter().map(Version::to_string).collect();
        assert_eq!(order, ["1.0.1-rc.1", "1.0.0", "1.0.0+zzz", "1.0.0+aaa", "0.9.0"]);
    }

    #[test]
    fn transitive_highest_satisfying() {
        let got = resolve(&[("app".into(), "*".into())], registry).unwrap();
        assert_eq!(versions(&got), ["app@1.0.0", "lib@1.4.0", "util@1.2.5"]);
        let constraints: Vec<&str> = got.values().map(|r| r.constraint.as_str()).collect();
        assert_eq!(
            constraints,
            ["*", "^1.0", ">=1.1, ^1.2"],
            "what each version had to meet"
        );
        let pinned = resolve(&[("lib".into(), "1.0.0".into())], registry).unwrap();
        assert_eq!(versions(&pinned), ["lib@1.0.0", "util@1.2.5"]);
    }

    #[test]
    fn the_latest_tag_wins_wherever_it_satisfies() {
        let pick = |constraint: &str| {
            let got = resolve(&[("tagged".into(), constraint.into())], registry).unwrap();
            versions(&got)
        };
        assert_eq!(pick("*"), ["tagged@1.1.0"]);
        assert_eq!(pick("^1"), ["tagged@1.1.0"]);
        assert_eq!(
            pick(">=1.2"),
            ["tagged@2.0.0"],
            "the newest that satisfies when latest does not"
        );
        assert_eq!(pick("=2.0.0"), ["tagged@2.0.0"]);
        // A prerelease tagged `latest` is what a plain request gets, not what a range does.
        let beta = |name: &str| -> Result<Vec<Candidate>> {
            Ok(["1.0.0", "1.1.0", "2.0.0-beta.1"]
                .map(|v| Candidate {
                    version: Version::parse(v).unwrap(),
                    dependencies: BTreeMap::new(),
                    tagged_latest: name == "kit" && v == "2.0.0-beta.1",
                })
                .to_vec())
        };
        let got = |constraint: &str| versions(&resolve(&[("kit".into(), constraint.into())], beta).unwrap());
        assert_eq!(got("*"), ["kit@2.0.0-beta.1"]);
        assert_eq!(got("^1"), ["kit@1.1.0"]);
    }

    #[test]
    fn conflicts_name_who_requires_what() {
        let err = resolve(&[("app".into(), "*".into()), ("strict".into(), "*".into())], registry).unwrap_err();
        assert_eq!(err.code(), ErrorCode::DependencyConflict);
        let message = err.message();
        assert!(message.contains("no version of `util` satisfies"), "{message}");
        assert!(message.contains("`=1.0.0` (required by `strict@1.0.0`)"), "{message}");
        assert!(message.contains("(required by `app@1.0.0`)"), "{message}");
        let hint = err.hint().unwrap();
        assert!(
            hint.starts_with("published versions: 2.0.0, 1.2.5, 1.1.0, 1.0.0;"),
            "{hint}"
        );
        let unpublished = resolve(&[("lib".into(), "^3".into())], registry).unwrap_err();
        assert_eq!(
            unpublished.hint(),
            Some("published versions: 2.0.0, 1.4.0, 1.0.0; ask for one of them")
        );
        let missing = resolve(&[("ghost".into(), "*".into())], registry).unwrap_err();
        assert_eq!(missing.code(), ErrorCode::PackageNotFound);
    }
}
