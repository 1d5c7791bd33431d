//! Parsing what users type after `aam source add`.
//!
//! A spec becomes a [`SourceSpec`]: a credential-free URL to fetch, the cache key
//! that names its bare repository, an optional ref and an optional scope path.
//! Pure string work plus one file-system check for local paths; no git here.
//! Credentials found in a URL are dropped on the spot and only their presence is
//! remembered, so they can never be stored, printed or logged.

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, ErrorCode, Result};

/// The forms `aam source add` accepts, shown whenever a spec is refused.
pub const ACCEPTED_FORMS: &str = "accepted forms: `owner/repo`, `owner/repo@ref`, `owner/repo#sha`, \
`https://host/owner/repo(.git)`, `https://host/repo.git`, `https://github.com/owner/repo/tree/<ref>/<path>`, \
`https://host/group/repo/-/tree/<ref>/<path>`, `git+https://...`, `git@host:owner/repo.git`, \
`ssh://git@host/owner/repo.git`, `file:///abs/path`, and local paths `./x`, `../x`, `/abs/x`";

/// What to do instead of putting credentials in a URL.
pub const CREDENTIALS_HINT: &str = "aam never uses credentials written in a URL; drop them, and set a token (`GH_TOKEN` for github.com, `AAM_GIT_TOKEN_<HOST>` elsewhere) or use an ssh URL for private repositories";

/// The cache "host" of local repositories; `_` cannot start a real host name.
const LOCAL_HOST: &str = "_local";

/// Whether a source lives on a remote host or in a local folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// A remote reached over https or ssh.
    Git,
    /// A repository on this machine.
    Local,
}

impl SourceKind {
    /// The catalog's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Git => "git",
            SourceKind::Local => "local",
        }
    }
}

/// A parsed, validated source spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSpec {
    /// Remote or local.
    pub kind: SourceKind,
    /// The URL to fetch from, without credentials.
    pub url: String,
    /// Lowercase host (with `_port` when one is given), or `local`.
    pub host: String,
    /// `owner/repo` (or `group/sub/repo`) for remotes; the absolute folder for local repositories.
    pub repo_path: String,
    /// Branch, tag or commit to follow; `None` follows the remote's default branch.
    pub git_ref: Option<String>,
    /// Folder inside the repository the scan is limited to (`""` = everything).
    pub scope: String,
    /// The spec carried credentials, which were dropped.
    pub had_credentials: bool,
}

impl SourceSpec {
    /// Refuses a GitHub shorthand typed by a user (`owner/repo`, with an
    /// optional `@ref` or `#commit`) that also names a folder below `cwd`: which
    /// one was meant cannot be told, and guessing GitHub would register (or
    /// try to fetch) someone else's repository.
    pub fn refuse_ambiguous_shorthand(spec: &str, cwd: &Path) -> Result<()> {
        let spec = spec.trim();
        let repo = spec.split(['@', '#']).next().unwrap_or(spec);
        let shorthand = repo.matches('/').count() == 1
            && !spec.contains(':')
            && !spec.starts_with(['.', '/', '~'])
            && !spec.chars().any(char::is_whitespace);
        if shorthand && cwd.join(repo).is_dir() {
            return Err(
                invalid(format!("`{repo}` is both a GitHub repository name and a folder here")).with_hint(format!(
                    "write `./{repo}` for the folder (with `--ref` for a ref), or `https://github.com/{repo}` for the GitHub repository"
                )),
            );
        }
        Ok(())
    }

    /// The folder a recorded `file://` URL names (`file:///a/b/` is `/a/b`),
    /// worked out from the text alone, without looking at the file system:
    /// what a restore asks about a lock's local repository before it reads
    /// anything there. `None` for any other URL.
    pub fn recorded_local_path(url: &str) -> Option<String> {
        let url = url.trim();
        let scheme = url.get(..7).filter(|s| s.eq_ignore_ascii_case("file://"))?;
        let path = percent_decode(&url[scheme.len()..]);
        match path.trim_end_matches('/') {
            "" => Some("/".to_string()),
            trimmed => Some(trimmed.to_string()),
        }
    }

    /// Parses a URL a lock file recorded. A `file://` URL whose folder is not
    /// on this machine is taken as written (absolute, with no `.` or `..`
    /// part): its cache may still hold the commit, and a fetch from it fails
    /// only when one is needed.
    pub fn parse_recorded(url: &str, cwd: &Path) -> Result<Self> {
        if Self::recorded_local_path(url).is_some_and(|p| std::fs::symlink_metadata(p).is_err()) {
            return Self::parse_recorded_as_written(url);
        }
        let parsed = Self::parse(url, cwd)?;
        // Installs record a local repository as a `file://` URL: a bare
        // path (`../private`), resolved against wherever the command runs,
        // names a repository the lock's writer picked on this machine.
        if parsed.kind == SourceKind::Local && !url.trim().starts_with("file://") {
            return Err(invalid(format!("`{}` is a path, not a `file://` URL", redact(url))));
        }
        Ok(parsed)
    }

    /// Parses a recorded `file://` URL as written (an absolute path with no
    /// `.` or `..` part), never looking at that path: a repository not on this
    /// machine, or one a restore may not read.
    pub fn parse_recorded_as_written(url: &str) -> Result<Self> {
        let path = Self::recorded_local_path(url)
            .ok_or_else(|| invalid(format!("`{}` is not a `file://` URL", redact(url))))?;
        let plain = path
            .split('/')
            .skip(1)
            .all(|part| !part.is_empty() && part != "." && part != "..");
        if !path.starts_with('/') || !plain || path.chars().any(char::is_control) {
            return Err(invalid(format!("`{}` is not a plain absolute path", redact(url))));
        }
        Ok(SourceSpec {
            kind: SourceKind::Local,
            url: format!("file://{path}"),
            host: LOCAL_HOST.to_string(),
            repo_path: path,
            git_ref: None,
            scope: String::new(),
            had_credentials: false,
        })
    }

    /// Parses `spec`, resolving local paths against `cwd`.
    pub fn parse(spec: &str, cwd: &Path) -> Result<Self> {
        let spec = spec.trim();
        if spec.is_empty() {
            return Err(invalid("the source spec is empty"));
        }
        if spec.starts_with('-') {
            return Err(invalid(format!(
                "`{}` looks like an option, not a source",
                redact(spec)
            )));
        }
        if spec.chars().any(char::is_control) {
            return Err(invalid("the source spec contains control characters"));
        }
        // Schemes are case-insensitive (`HTTPS://` is `https://`).
        let lowered;
        let spec = match spec.find("://") {
            Some(end) if spec[..end].chars().any(|c| c.is_ascii_uppercase()) => {
                lowered = format!("{}{}", spec[..end].to_ascii_lowercase(), &spec[end..]);
                lowered.as_str()
            }
            _ => spec,
        };
        // Local paths may contain spaces; nothing else may.
        if let Some(path) = spec.strip_prefix("file://") {
            if !path.starts_with('/') {
                return Err(invalid("a `file://` URL needs an absolute path (`file:///abs/path`)"));
            }
            return parse_local(Path::new(&percent_decode(path)), cwd);
        }
        if spec == "." || spec == ".." || spec.starts_with("./") || spec.starts_with("../") || spec.starts_with('/') {
            return parse_local(Path::new(spec), cwd);
        }
        if spec.chars().any(char::is_whitespace) {
            return Err(invalid(format!("`{}` contains spaces", redact(spec)))
                .with_hint(format!("a local folder needs `./` in front; {ACCEPTED_FORMS}")));
        }
        if let Some(rest) = spec.strip_prefix("git+") {
            return match rest {
                _ if rest.starts_with("https://") => parse_https(rest),
                _ if rest.starts_with("ssh://") => parse_ssh_url(rest),
                _ => Err(invalid(format!("`{}` is not a supported transport", redact(spec)))),
            };
        }
        if spec.starts_with("https://") {
            return parse_https(spec);
        }
        if spec.starts_with("ssh://") {
            return parse_ssh_url(spec);
        }
        if let Some(rest) = spec.strip_prefix("http://")
            && split_url(spec, rest).is_ok_and(|parts| is_loopback(parts.host))
        {
            return parse_https(spec);
        }
        if spec.starts_with("http://") {
            return Err(invalid(format!("plain `http://` is refused: `{}`", redact(spec)))
                .with_hint(format!("use `https://` instead; {ACCEPTED_FORMS}")));
        }
        if spec.contains("::") || spec.contains("://") {
            return Err(invalid(format!(
                "`{}` uses a transport aam does not accept",
                redact(spec)
            )));
        }
        if let Some((user_host, path)) = spec.split_once(':')
            && user_host.contains('@')
        {
            return parse_scp(spec, user_host, path);
        }
        parse_shorthand(spec).map_err(|err| {
            // `my-repo` or `some/dir` that exists here was probably meant as a local path.
            if cwd.join(spec).is_dir() {
                err.with_hint(format!("to add the local folder, write `./{spec}`"))
            } else {
                err
            }
        })
    }

    /// Applies `--ref` and `--path`, refusing a conflict with what the spec already says.
    pub fn with_overrides(mut self, git_ref: Option<&str>, path: Option<&str>) -> Result<Self> {
        if let Some(r) = git_ref {
            validate_ref(r)?;
            match &self.git_ref {
                Some(existing) if existing != r => {
                    return Err(Error::invalid_argument(format!(
                        "the spec names ref `{existing}` but `--ref` says `{r}`"
                    ))
                    .with_hint("give the ref once, either in the spec or with `--ref`"));
                }
                _ => self.git_ref = Some(r.to_string()),
            }
        }
        if let Some(p) = path {
            let p = normalize_scope(p)?;
            if !self.scope.is_empty() && self.scope != p {
                return Err(Error::invalid_argument(format!(
                    "the spec names path `{}` but `--path` says `{p}`",
                    self.scope
                ))
                .with_hint("give the path once, either in the spec or with `--path`"));
            }
            self.scope = p;
        }
        Ok(self)
    }

    /// The name used when `--name` is not given: `owner/repo` (`host/repo` when the
    /// remote path has one level), `owner/repo:<last path component>` when scoped, or
    /// the folder name for local repositories.
    pub fn default_name(&self) -> String {
        // A name's parts do not start with a dot (see `validate_name`): the
        // `org/.github` repository is named `org/github`.
        let plain_parts = |path: &str| {
            path.split('/')
                .map(|part| match part.trim_start_matches('.') {
                    "" => "_",
                    rest => rest,
                })
                .collect::<Vec<_>>()
                .join("/")
        };
        let base = match self.kind {
            SourceKind::Git if !self.repo_path.contains('/') => {
                format!("{}/{}", self.host, plain_parts(&self.repo_path))
            }
            SourceKind::Git => plain_parts(&self.repo_path),
            SourceKind::Local => {
                let folder = Path::new(&self.repo_path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                name_from_folder(folder.strip_suffix(".git").unwrap_or(&folder))
            }
        };
        match self.scope.rsplit('/').next() {
            Some(last) if !last.is_empty() => format!("{base}:{last}"),
            _ => base,
        }
    }

    /// The cache folder (relative to `cache/git/`) shared by every source on this remote.
    pub fn cache_key(&self) -> String {
        let path = self.repo_path.trim_start_matches('/');
        let path = path.strip_suffix(".git").unwrap_or(path);
        format!("{}/{}", self.host, path)
    }
}

/// Whether two credential-free clone URLs name one repository: the same
/// URL, with or without a trailing `/` or `.git`.
pub fn same_repository(a: &str, b: &str) -> bool {
    let identity = |url: &str| {
        let url = url.trim_end_matches('/');
        url.strip_suffix(".git").unwrap_or(url).to_string()
    };
    identity(a) == identity(b)
}

/// A valid source name made from a folder name: other characters become `-`.
fn name_from_folder(folder: &str) -> String {
    let mut name = String::new();
    for c in folder.chars() {
        let keep = c.is_ascii_alphanumeric() || "_.+@".contains(c);
        if keep {
            name.push(c);
        } else if !name.ends_with('-') {
            name.push('-');
        }
    }
    let name = name.trim_matches(|c| c == '-' || c == '.').to_string();
    if name.is_empty() { "local".to_string() } else { name }
}

/// Decodes `%XX` escapes of a `file://` URL path.
fn percent_decode(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Checks a user-chosen source name.
pub fn validate_name(name: &str) -> Result<()> {
    validate_name_of(name, "source")
}

/// Checks a user-chosen name of a `what` (`source`, `registry`): the same
/// rules for both, as both are named in qualified names.
pub fn validate_name_of(name: &str, what: &str) -> Result<()> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || "-_./:@+".contains(c);
    // Parts between slashes are path segments in qualified names and
    // `skill://` URIs: none empty, none `.` or `..` (`x/../y/pdf`).
    let plain_parts = name.split('/').all(|part| !part.is_empty() && !part.starts_with('.'));
    if name.is_empty() || name.len() > 128 || name.starts_with('-') || !plain_parts || !name.chars().all(ok_char) {
        return Err(Error::invalid_argument(format!("`{name}` is not a valid {what} name"))
            .with_hint("use up to 128 letters, digits and `-_./:@+`, not starting with `-`; parts between slashes are not empty and do not start with `.`"));
    }
    Ok(())
}

/// Checks a branch, tag or commit name the way git's ref-format rules do.
pub fn validate_ref(r: &str) -> Result<()> {
    if !is_valid_ref(r) {
        return Err(
            Error::invalid_argument(format!("`{r}` is not a valid branch, tag or commit"))
                .with_hint("pass a branch name, a tag name or a commit id"),
        );
    }
    Ok(())
}

fn is_valid_ref(r: &str) -> bool {
    !(r.is_empty()
        || r.starts_with(['-', '/', '.'])
        || r.ends_with(['/', '.'])
        || r.ends_with(".lock")
        || r.contains("..")
        || r.contains("@{")
        || r.contains("//")
        || r.chars()
            .any(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(c)))
}

/// Ref checks inside a spec report the spec as invalid.
fn spec_ref(spec: &str, r: &str) -> Result<String> {
    if is_valid_ref(r) {
        Ok(r.to_string())
    } else {
        Err(invalid(format!(
            "`{r}` in `{}` is not a valid branch, tag or commit",
            redact(spec)
        )))
    }
}

/// Normalizes a scope path: relative, `/`-separated, no `.`/`..` parts, no trailing `/`.
pub fn normalize_scope(p: &str) -> Result<String> {
    let trimmed = p.trim_start_matches("./").trim_matches('/');
    let parts: Vec<&str> = trimmed.split('/').filter(|s| !s.is_empty()).collect();
    let bad = p.starts_with('/')
        || p.contains('\\')
        || p.chars().any(|c| c.is_control())
        || parts.iter().any(|s| *s == "." || *s == "..");
    if bad {
        return Err(
            Error::invalid_argument(format!("`{p}` is not a valid path inside a repository"))
                .with_hint("give a relative folder such as `skills` or `skills/.curated`, without `..`"),
        );
    }
    Ok(parts.join("/"))
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::SourceUrlInvalid, message).with_hint(ACCEPTED_FORMS)
}

/// Hides credentials in a URL-ish string so it can be shown.
///
/// With a scheme, see [`redact_location`]. Without one, whatever precedes the
/// last `@` goes when it holds a `:` or comes before any `/` (`user:pw@host:o/r`,
/// `tok@host/o/r`), while `owner/repo@ref` is kept. An `@` written `%40` counts
/// as one. Then a query string (`?private_token=...`) is hidden too. The user
/// `git` alone is kept: ssh's conventional user, no secret. Over-hiding an odd
/// spec is fine; showing a secret is not.
pub fn redact(spec: &str) -> String {
    if let Some(end) = spec.find("://") {
        let (prefix, rest) = spec.split_at(end + 3);
        return format!("{prefix}{}", redact_location(rest));
    }
    let (user, tail) = match last_at(spec) {
        Some((at, len)) if &spec[..at] == "git" => (&spec[..at + len], &spec[at + len..]),
        Some((at, len)) if spec[..at].contains(':') || !spec[..at].contains('/') => ("***@", &spec[at + len..]),
        _ => ("", spec),
    };
    without_query(user, tail)
}

/// What follows `scheme://` in a URL, shown without credentials: everything up
/// to the last `@` goes (user names, tokens and passwords, even ones holding
/// `/`, `:`, `?`, `#` or `@`), then the query. When a `?` or `#` after a `/`
/// comes before that `@`, the `@` may be the query's (`/o/r?token=a@b`) as well
/// as a password's: everything goes.
pub fn redact_location(rest: &str) -> String {
    let (user, tail) = match last_at(rest) {
        Some((at, len)) if &rest[..at] == "git" => (&rest[..at + len], &rest[at + len..]),
        Some((at, _)) if query_on_the_way(&rest[..at]) => return "***".to_string(),
        Some((at, len)) => ("***@", &rest[at + len..]),
        None => ("", rest),
    };
    without_query(user, tail)
}

/// Whether `text` holds a `?` or `#` after a `/`: a query or fragment may begin there.
fn query_on_the_way(text: &str) -> bool {
    match (text.find('/'), text.find(['?', '#'])) {
        (Some(slash), Some(mark)) => slash < mark,
        _ => false,
    }
}

/// `user` then `tail` with its query (from the first `?`) shown as `?***`.
fn without_query(user: &str, tail: &str) -> String {
    match tail.find('?') {
        Some(q) => format!("{user}{}?***", &tail[..q]),
        None => format!("{user}{tail}"),
    }
}

/// Position and length of the last `@` (or `%40`) in `text`.
fn last_at(text: &str) -> Option<(usize, usize)> {
    let raw = text.rfind('@').map(|at| (at, 1));
    let encoded = text.to_ascii_lowercase().rfind("%40").map(|at| (at, 3));
    match (raw, encoded) {
        (Some(r), Some(e)) => Some(if r.0 > e.0 { r } else { e }),
        (r, e) => r.or(e),
    }
}

/// Splits `scheme://[user[:pass]@]host[:port]/path?query#frag`.
struct UrlParts<'a> {
    user: Option<&'a str>,
    had_password: bool,
    host: &'a str,
    port: Option<&'a str>,
    path: &'a str,
}

fn split_url<'a>(original: &str, rest: &'a str) -> Result<UrlParts<'a>> {
    let rest = rest.split(['?', '#']).next().unwrap_or(rest);
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    if path.contains('@') && !authority.contains('@') {
        // `https://user:pa/ss@host/...`: a password holding `/` ends the host early.
        return Err(invalid(format!(
            "`{}` has credentials holding `/`, which cannot be read as a URL",
            redact(original)
        ))
        .with_hint(CREDENTIALS_HINT));
    }
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let (user, had_password) = match userinfo {
        Some(u) => match u.split_once(':') {
            Some((name, _)) => (Some(name), true),
            None => (Some(u), false),
        },
        None => (None, false),
    };
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (hostport, None),
    };
    if !valid_host(host) {
        return Err(invalid(format!("`{}` has no valid host", redact(original))));
    }
    if let Some(p) = port
        && (p.is_empty() || !p.chars().all(|c| c.is_ascii_digit()))
    {
        return Err(invalid(format!("`{}` has an invalid port", redact(original))));
    }
    Ok(UrlParts {
        user,
        had_password,
        host,
        port,
        path,
    })
}

fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && !host.starts_with(['-', '.'])
        && host.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
}

fn host_key(host: &str, port: Option<&str>) -> String {
    let host = host.to_ascii_lowercase();
    match port {
        Some(p) => format!("{host}_{p}"),
        None => host,
    }
}

fn valid_segment(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && !s.starts_with('-')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.~".contains(c))
}

/// How many path levels a repository on `host` needs: GitHub has `owner/repo`, other
/// hosts may serve `/repo.git` (cgit, gitweb, `git http-backend`).
fn min_segments(host: &str) -> usize {
    if host.eq_ignore_ascii_case("github.com") { 2 } else { 1 }
}

/// Validates `owner/repo`-like segments (at least `min` of them) and drops a trailing `.git`.
fn repo_path(original: &str, segments: &[&str], min: usize) -> Result<String> {
    if segments.len() < min || !segments.iter().all(|s| valid_segment(s)) || segments == [".git"] {
        return Err(invalid(format!(
            "`{}` does not name a repository as `owner/repo`",
            redact(original)
        )));
    }
    let joined = segments.join("/");
    Ok(joined.strip_suffix(".git").unwrap_or(&joined).to_string())
}

/// Whether `host` is this machine's loopback interface, the only place plain `http://` may go.
fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || (host.split('.').next() == Some("127") && host.split('.').count() == 4)
}

fn parse_https(spec: &str) -> Result<SourceSpec> {
    let (scheme, rest) = spec.split_once("://").unwrap_or(("https", spec));
    let parts = split_url(spec, rest)?;
    let segments: Vec<&str> = parts.path.split('/').filter(|s| !s.is_empty()).collect();
    let is_github = parts.host.eq_ignore_ascii_case("github.com");
    let (repo_segments, tree): (&[&str], Option<&[&str]>) = if let Some(dash) = segments.iter().position(|s| *s == "-")
    {
        // GitLab: group/sub/repo/-/tree/<ref>/<path>
        match segments.get(dash + 1) {
            Some(&"tree") => (&segments[..dash], Some(&segments[dash + 2..])),
            _ => return Err(invalid(format!("`{}` is not a repository or folder URL", redact(spec)))),
        }
    } else if is_github && segments.len() > 2 {
        match segments[2] {
            "tree" => (&segments[..2], Some(&segments[3..])),
            _ => return Err(invalid(format!("`{}` is not a repository or folder URL", redact(spec)))),
        }
    } else {
        (&segments[..], None)
    };
    let repo = repo_path(spec, repo_segments, min_segments(parts.host))?;
    let (git_ref, scope) = match tree {
        Some([r, path @ ..]) => {
            let scope = normalize_scope(&path.join("/"))
                .map_err(|_| invalid(format!("`{}` has an invalid path", redact(spec))))?;
            (Some(spec_ref(spec, r)?), scope)
        }
        Some([]) => return Err(invalid(format!("`{}` names no branch after `tree/`", redact(spec)))),
        None => (None, String::new()),
    };
    let port = parts.port.map(|p| format!(":{p}")).unwrap_or_default();
    Ok(SourceSpec {
        kind: SourceKind::Git,
        url: format!("{scheme}://{}{port}/{repo}.git", parts.host.to_ascii_lowercase()),
        host: host_key(parts.host, parts.port),
        repo_path: repo,
        git_ref,
        scope,
        had_credentials: parts.user.is_some(),
    })
}

fn parse_ssh_url(spec: &str) -> Result<SourceSpec> {
    let rest = &spec["ssh://".len()..];
    let parts = split_url(spec, rest)?;
    let segments: Vec<&str> = parts.path.split('/').filter(|s| !s.is_empty()).collect();
    let repo = repo_path(spec, &segments, min_segments(parts.host))?;
    if let Some(user) = parts.user
        && !valid_segment(user)
    {
        return Err(invalid(format!("`{}` has an invalid user name", redact(spec))));
    }
    let user = parts.user.map(|u| format!("{u}@")).unwrap_or_default();
    let port = parts.port.map(|p| format!(":{p}")).unwrap_or_default();
    Ok(SourceSpec {
        kind: SourceKind::Git,
        url: format!("ssh://{user}{}{port}/{repo}.git", parts.host.to_ascii_lowercase()),
        host: host_key(parts.host, parts.port),
        repo_path: repo,
        git_ref: None,
        scope: String::new(),
        had_credentials: parts.had_password,
    })
}

fn parse_scp(spec: &str, user_host: &str, path: &str) -> Result<SourceSpec> {
    let (user, host) = user_host.rsplit_once('@').unwrap_or(("", user_host));
    if !valid_segment(user) || !valid_host(host) {
        return Err(invalid(format!(
            "`{}` is not a valid `user@host:owner/repo.git` spec",
            redact(spec)
        )));
    }
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let repo = repo_path(spec, &segments, min_segments(host))?;
    Ok(SourceSpec {
        kind: SourceKind::Git,
        url: format!("{user}@{}:{repo}.git", host.to_ascii_lowercase()),
        host: host.to_ascii_lowercase(),
        repo_path: repo,
        git_ref: None,
        scope: String::new(),
        had_credentials: false,
    })
}

fn parse_shorthand(spec: &str) -> Result<SourceSpec> {
    let (repo_part, git_ref) = if let Some((repo, sha)) = spec.split_once('#') {
        if sha.len() < 7 || sha.len() > 40 || !sha.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(invalid(format!("`{sha}` after `#` is not a commit id")));
        }
        (repo, Some(sha.to_ascii_lowercase()))
    } else if let Some((repo, r)) = spec.split_once('@') {
        (repo, Some(spec_ref(spec, r)?))
    } else {
        (spec, None)
    };
    let segments: Vec<&str> = repo_part.split('/').collect();
    if segments.len() != 2 {
        return Err(invalid(format!("`{}` is not a source spec", redact(spec))));
    }
    let repo = repo_path(spec, &segments, 2)?;
    Ok(SourceSpec {
        kind: SourceKind::Git,
        url: format!("https://github.com/{repo}.git"),
        host: "github.com".to_string(),
        repo_path: repo,
        git_ref,
        scope: String::new(),
        had_credentials: false,
    })
}

/// Whether `folder` (relative to `cwd` unless absolute) is a folder.
fn joined_dir(cwd: &Path, folder: &str) -> bool {
    !folder.is_empty() && cwd.join(folder).is_dir()
}

fn parse_local(path: &Path, cwd: &Path) -> Result<SourceSpec> {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    let absolute: PathBuf = match joined.canonicalize() {
        Ok(p) => p,
        Err(_) => {
            let missing = Error::new(
                ErrorCode::SourceUrlInvalid,
                format!("`{}` does not exist", path.display()),
            );
            // `./repo@v1` or `./repo#abc`: a ref written as a remote's would be.
            let text = path.to_string_lossy();
            let with_ref = text
                .rsplit_once(['@', '#'])
                .filter(|(folder, git_ref)| !git_ref.is_empty() && joined_dir(cwd, folder));
            return Err(match with_ref {
                Some((folder, git_ref)) => missing.with_hint(format!(
                    "for `{git_ref}` of the repository `{folder}`, pass the ref apart: `aam source add {} --ref {}`",
                    crate::paths::shell_word(folder),
                    crate::paths::shell_word(git_ref)
                )),
                None => missing.with_hint("pass the path of a git repository on this machine"),
            });
        }
    };
    if !absolute.is_dir() {
        return Err(Error::new(
            ErrorCode::SourceUrlInvalid,
            format!("`{}` is not a folder", path.display()),
        )
        .with_hint("pass the path of a git repository on this machine"));
    }
    let text = absolute.to_str().ok_or_else(|| {
        Error::new(
            ErrorCode::SourceUrlInvalid,
            format!("`{}` is not valid UTF-8", path.display()),
        )
        .with_hint("move the repository to a folder whose path is UTF-8")
    })?;
    if absolute.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(invalid(format!("`{}` could not be resolved", path.display())));
    }
    Ok(SourceSpec {
        kind: SourceKind::Local,
        url: format!("file://{text}"),
        host: LOCAL_HOST.to_string(),
        repo_path: text.to_string(),
        git_ref: None,
        scope: String::new(),
        had_credentials: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a restore asks of a lock's URL before it looks at any path.
    #[test]
    fn a_recorded_local_path_is_read_from_the_url_text_alone() {
        let cases = [
            ("file:///srv/skills", Some("/srv/skills")),
            ("file:///srv/skills/", Some("/srv/skills")),
            ("  FILE:///srv/my%20skills ", Some("/srv/my skills")),
            ("file:///", Some("/")),
            ("https://github.com/o/r", None),
            ("/srv/skills", None),
            ("file:", None),
        ];
        for (url, path) in cases {
            assert_eq!(SourceSpec::recorded_local_path(url).as_deref(), path, "{url}");
        }
        let missing = "file:///nowhere/at/all";
        let spec = SourceSpec::parse_recorded_as_written(missing).unwrap();
        assert_eq!(
            (spec.kind, spec.repo_path.as_str()),
            (SourceKind::Local, "/nowhere/at/all")
        );
        assert!(SourceSpec::parse_recorded_as_written("file:///a/../b").is_err());
        assert!(SourceSpec::parse_recorded_as_written("https://h/o/r").is_err());
    }

    #[test]
    fn one_repository_with_or_without_git_and_slash() {
        assert!(same_repository("https://github.com/o/r", "https://github.com/o/r.git"));
        assert!(same_repository("file:///srv/r/", "file:///srv/r"));
        assert!(!same_repository("https://github.com/o/r", "https://github.com/o/r2"));
    }
    use rstest::rstest;

    fn parse(spec: &str) -> SourceSpec {
        SourceSpec::parse(spec, Path::new("/")).unwrap_or_else(|e| panic!("{spec}: {e}"))
    }

    #[rstest]
    #[case(
        "openai/skills",
        "https://github.com/openai/skills.git",
        "github.com/openai/skills",
        None,
        "",
        "openai/skills"
    )]
    #[case(
        "openai/skills@v2",
        "https://github.com/openai/skills.git",
        "github.com/openai/skills",
        Some("v2"),
        "",
        "openai/skills"
    )]
    #[case(
        "openai/skills#ABCDEF1",
        "https://github.com/openai/skills.git",
        "github.com/openai/skills",
        Some("abcdef1"),
        "",
        "openai/skills"
    )]
    #[case(
        "https://github.com/o/r",
        "https://github.com/o/r.git",
        "github.com/o/r",
        None,
        "",
        "o/r"
    )]
    #[case(
        "https://GitHub.com/o/r.git/",
        "https://github.com/o/r.git",
        "github.com/o/r",
        None,
        "",
        "o/r"
    )]
    #[case(
        "https://github.com/openai/skills/tree/main/skills/.curated",
        "https://github.com/openai/skills.git",
        "github.com/openai/skills",
        Some("main"),
        "skills/.curated",
        "openai/skills:.curated"
    )]
    #[case(
        "https://gitlab.com/g/sub/repo/-/tree/dev/rules",
        "https://gitlab.com/g/sub/repo.git",
        "gitlab.com/g/sub/repo",
        Some("dev"),
        "rules",
        "g/sub/repo:rules"
    )]
    #[case(
        "https://git.example.com:8443/team/repo.git",
        "https://git.example.com:8443/team/repo.git",
        "git.example.com_8443/team/repo",
        None,
        "",
        "team/repo"
    )]
    #[case(
        "git+https://github.com/o/r.git",
        "https://github.com/o/r.git",
        "github.com/o/r",
        None,
        "",
        "o/r"
    )]
    #[case(
        "git@github.com:o/r.git",
        "git@github.com:o/r.git",
        "github.com/o/r",
        None,
        "",
        "o/r"
    )]
    #[case(
        "ssh://git@github.com/o/r.git",
        "ssh://git@github.com/o/r.git",
        "github.com/o/r",
        None,
        "",
        "o/r"
    )]
    #[case(
        "https://git.example.org/repo.git",
        "https://git.example.org/repo.git",
        "git.example.org/repo",
        None,
        "",
        "git.example.org/repo"
    )]
    #[case(
        "https://Git.Example.org:8443/repo",
        "https://git.example.org:8443/repo.git",
        "git.example.org_8443/repo",
        None,
        "",
        "git.example.org_8443/repo"
    )]
    #[case(
        "https://code.example.org/git/team/sub/tools/repo.git",
        "https://code.example.org/git/team/sub/tools/repo.git",
        "code.example.org/git/team/sub/tools/repo",
        None,
        "",
        "git/team/sub/tools/repo"
    )]
    #[case(
        "http://127.0.0.1:8080/repo.git",
        "http://127.0.0.1:8080/repo.git",
        "127.0.0.1_8080/repo",
        None,
        "",
        "127.0.0.1_8080/repo"
    )]
    #[case(
        "http://localhost/g/repo",
        "http://localhost/g/repo.git",
        "localhost/g/repo",
        None,
        "",
        "g/repo"
    )]
    #[case("git@host:repo.git", "git@host:repo.git", "host/repo", None, "", "host/repo")]
    #[case(
        "https://github.com/org/.github",
        "https://github.com/org/.github.git",
        "github.com/org/.github",
        None,
        "",
        "org/github"
    )]
    #[case(
        "ssh://git@host:2222/o/r",
        "ssh://git@host:2222/o/r.git",
        "host_2222/o/r",
        None,
        "",
        "o/r"
    )]
    fn accepted(
        #[case] spec: &str,
        #[case] url: &str,
        #[case] key: &str,
        #[case] git_ref: Option<&str>,
        #[case] scope: &str,
        #[case] name: &str,
    ) {
        let parsed = parse(spec);
        assert_eq!(parsed.url, url);
        assert_eq!(parsed.cache_key(), key);
        assert_eq!(parsed.git_ref.as_deref(), git_ref);
        assert_eq!(parsed.scope, scope);
        assert_eq!(parsed.default_name(), name);
        assert_eq!(parsed.kind, SourceKind::Git);
        validate_name(&parsed.default_name()).unwrap();
    }

    #[rstest]
    #[case("")]
    #[case("-uhttps://evil")]
    #[case("--upload-pack=touch /tmp/x")]
    #[case("http://github.com/o/r")]
    #[case("http://10.0.0.1/o/r")]
    #[case("http://127.0.0.1.evil.com/o/r")]
    #[case("https://host/.git")]
    #[case("https://host/")]
    #[case("ext::sh -c touch% /tmp/pwned")]
    #[case("fd::17")]
    #[case("git://github.com/o/r")]
    #[case("ftp://host/o/r")]
    #[case("justaname")]
    #[case("a/b/c")]
    #[case("o/r#nothex")]
    #[case("o/r@bad..ref")]
    #[case("https://github.com/o")]
    #[case("https://github.com/o/r/pulls")]
    #[case("https://-host/o/r")]
    #[case("https://github.com/o/../r")]
    #[case("git@github.com:o")]
    #[case("file://relative/path")]
    #[case("./does/not/exist")]
    fn refused(#[case] spec: &str) {
        let err = SourceSpec::parse(spec, Path::new("/")).unwrap_err();
        assert_eq!(err.code(), ErrorCode::SourceUrlInvalid, "{spec}: {err}");
        assert!(err.hint().is_some());
    }

    #[test]
    fn refused_lists_accepted_forms() {
        let err = SourceSpec::parse("nonsense", Path::new("/")).unwrap_err();
        assert!(err.hint().unwrap().contains("owner/repo@ref"));
    }

    #[test]
    fn credentials_are_dropped_and_never_shown() {
        let parsed = parse("https://user:s3cret@github.com/o/r.git");
        assert!(parsed.had_credentials);
        assert!(!parsed.url.contains("s3cret") && !parsed.url.contains("user"));
        let err = SourceSpec::parse("http://user:s3cret@github.com/o/r", Path::new("/")).unwrap_err();
        assert!(!err.message().contains("s3cret"), "{}", err.message());
        let err = SourceSpec::parse("https://user:s3cret@github.com/o", Path::new("/")).unwrap_err();
        assert!(!err.message().contains("s3cret"), "{}", err.message());
    }

    #[rstest]
    #[case("https://user:pa/ss@host/o/r", "pa/ss")]
    #[case("https://user:pa/ss@github.com/o/r.git", "pa/ss")]
    #[case("https://user:p@ss/word@host/o/r", "p@ss/word")]
    #[case("https://ghp_t0ken@github.com/o", "ghp_t0ken")]
    #[case("https://ab/cd+ef@host/o", "ab/cd+ef")]
    #[case("git+https://user:pa/ss@host/o/r", "pa/ss")]
    #[case("HTTPS://user:pa/ss@host/o/r", "pa/ss")]
    #[case("http://user:pa/ss@host/o/r", "pa/ss")]
    #[case("ssh://user:pw/x@host/o", "pw/x")]
    #[case("ssh://user:pw@-host/o/r", "pw")]
    #[case("ftp://user:pw@host/o/r", "pw")]
    #[case("user:pw@host:o", "pw")]
    #[case("user:pa/ss@host:o/r/x", "pa/ss")]
    #[case("user:pa/ss@host/o/r", "pa/ss")]
    #[case("tok3n@host/o/r", "tok3n")]
    #[case("https://user:p%2Fss%40x@github.com/o", "p%2Fss")]
    #[case("https://user:secr3t%40host/o/r", "secr3t")]
    #[case("https://github.com/o?private_token=secr3t", "secr3t")]
    #[case("https://ghp_T0KEN?x@github.com/o/r", "ghp_T0KEN")]
    #[case("https://user:sec?ret@github.com/o/r", "sec")]
    #[case("ssh://git:sec?ret@host/o/r", "sec")]
    #[case("user:sec?ret@host:o/r", "sec")]
    #[case("https://user:se#cret@github.com/o/r", "se")]
    fn credentials_never_reach_a_message_or_hint(#[case] spec: &str, #[case] secret: &str) {
        let err = SourceSpec::parse(spec, Path::new("/")).unwrap_err();
        assert_eq!(err.code(), ErrorCode::SourceUrlInvalid, "{spec}: {err}");
        let shown = format!("{} {}", err.message(), err.hint().unwrap_or_default());
        assert!(!shown.contains(secret), "{spec}: {shown}");
        assert!(!redact(spec).contains(secret), "{spec}: {}", redact(spec));
    }

    #[rstest]
    #[case("https://ghp_t0ken@host/repo", "ghp_t0ken")]
    #[case("https://user:p%2Fss%40x@host/o", "p%2Fss")]
    #[case("https://host/o?private_token=secr3t", "secr3t")]
    fn one_level_urls_drop_credentials(#[case] spec: &str, #[case] secret: &str) {
        let parsed = parse(spec);
        assert!(
            !parsed.url.contains(secret) && !parsed.default_name().contains(secret),
            "{parsed:?}"
        );
    }

    #[test]
    fn redaction_keeps_what_is_not_a_credential() {
        assert_eq!(redact("https://user:pa/ss@host/o/r"), "https://***@host/o/r");
        assert_eq!(redact("user:pw@host:o/r"), "***@host:o/r");
        assert_eq!(redact("owner/repo@v1"), "owner/repo@v1");
        assert_eq!(redact("https://github.com/o/r"), "https://github.com/o/r");
        assert_eq!(redact("https://host/o/r?token=x"), "https://host/o/r?***");
        // A `?` typed into a token or password ends nothing: the last `@` does.
        assert_eq!(
            redact("https://ghp_T0KEN?x@github.com/o/r"),
            "https://***@github.com/o/r"
        );
        assert_eq!(
            redact("https://user:sec?ret@github.com/o/r?a=b"),
            "https://***@github.com/o/r?***"
        );
        assert_eq!(redact("ssh://git:sec?ret@host/o/r"), "ssh://***@host/o/r");
        assert_eq!(redact("user:sec?ret@host:o/r"), "***@host:o/r");
        assert_eq!(redact("ssh://git@host/o/r.git"), "ssh://git@host/o/r.git");
        assert_eq!(redact("git@github.com:o/r.git"), "git@github.com:o/r.git");
        // An `@` in a query after a path: the query's, maybe a password's; all goes.
        assert_eq!(redact("https://h/o/r?token=abc@SECRET3"), "https://***");
        assert_eq!(redact("https://user:pa/ss?x@host/o"), "https://***");
        assert_eq!(redact("owner/repo?token=a@b"), "owner/repo?***");
        let err = SourceSpec::parse("https://user:pa/ss@host/o/r", Path::new("/")).unwrap_err();
        assert_eq!(
            err.message(),
            "`https://***@host/o/r` has credentials holding `/`, which cannot be read as a URL"
        );
        assert_eq!(err.hint(), Some(CREDENTIALS_HINT));
    }

    #[test]
    fn a_shorthand_that_is_also_a_folder_here_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sp/skills")).unwrap();
        for typed in ["sp/skills", "sp/skills@main", " sp/skills "] {
            let err = SourceSpec::refuse_ambiguous_shorthand(typed, dir.path()).unwrap_err();
            assert_eq!(err.code(), ErrorCode::SourceUrlInvalid, "{typed}");
            assert!(err.hint().unwrap().contains("`./sp/skills`"), "{err:?}");
        }
        std::fs::create_dir_all(dir.path().join("a/b/c")).unwrap();
        for clear in [
            "./sp/skills",
            "https://github.com/sp/skills",
            "other/repo",
            "sp",
            "a/b/c",
        ] {
            assert!(
                SourceSpec::refuse_ambiguous_shorthand(clear, dir.path()).is_ok(),
                "{clear}"
            );
        }
    }

    #[test]
    fn a_recorded_local_url_need_not_exist_but_must_be_plain() {
        let gone = SourceSpec::parse_recorded("file:///nowhere/a%20repo/", Path::new("/")).unwrap();
        assert_eq!(gone.kind, SourceKind::Local);
        assert_eq!(gone.url, "file:///nowhere/a repo");
        assert_eq!(gone.cache_key(), format!("{LOCAL_HOST}/nowhere/a repo"));
        for bad in [
            "file:///nowhere/../etc",
            "file://nowhere/x",
            "file:///nowhere/./x",
            "file:///a//b",
        ] {
            let err = SourceSpec::parse_recorded(bad, Path::new("/")).unwrap_err();
            assert_eq!(err.code(), ErrorCode::SourceUrlInvalid, "{bad}");
        }
        // A folder that exists is parsed as `source add` parses it.
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let canonical = dir.path().canonicalize().unwrap();
        assert_eq!(
            SourceSpec::parse_recorded(&url, Path::new("/")).unwrap().repo_path,
            canonical.to_str().unwrap()
        );
        // A bare path is no recorded URL, relative or not (it was resolved
        // against the working folder).
        let parent = dir.path().parent().unwrap();
        let name = dir.path().file_name().unwrap().to_str().unwrap();
        for bare in [dir.path().to_str().unwrap().to_string(), format!("./{name}")] {
            let err = SourceSpec::parse_recorded(&bare, parent).unwrap_err();
            assert_eq!(err.code(), ErrorCode::SourceUrlInvalid, "{bare}");
        }
    }

    #[test]
    fn local_paths_resolve_against_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("my-repo");
        std::fs::create_dir(&repo).unwrap();
        let parsed = SourceSpec::parse("./my-repo", dir.path()).unwrap();
        let canonical = repo.canonicalize().unwrap();
        assert_eq!(parsed.kind, SourceKind::Local);
        assert_eq!(parsed.url, format!("file://{}", canonical.display()));
        assert_eq!(parsed.default_name(), "my-repo");
        assert_eq!(parsed.cache_key(), format!("_local{}", canonical.display()));
        let via_url = SourceSpec::parse(&format!("file://{}", canonical.display()), Path::new("/")).unwrap();
        assert_eq!(via_url, parsed);
        let scoped = parsed.with_overrides(None, Some("./fixtures/")).unwrap();
        assert_eq!(scoped.scope, "fixtures");
        assert_eq!(scoped.default_name(), "my-repo:fixtures");
        // A ref written after the folder, as a remote's would be, is pointed at `--ref`.
        let with_ref = SourceSpec::parse("./my-repo@v1", dir.path()).unwrap_err();
        assert_eq!(
            with_ref.hint(),
            Some("for `v1` of the repository `./my-repo`, pass the ref apart: `aam source add ./my-repo --ref v1`")
        );
        let missing = SourceSpec::parse("./other@v1", dir.path()).unwrap_err();
        assert_eq!(
            missing.hint(),
            Some("pass the path of a git repository on this machine")
        );
    }

    #[test]
    fn awkward_local_folders() {
        let dir = tempfile::tempdir().unwrap();
        let odd = dir.path().join("my repo (1)");
        std::fs::create_dir(&odd).unwrap();
        let parsed = SourceSpec::parse("./my repo (1)", dir.path()).unwrap();
        assert_eq!(parsed.default_name(), "my-repo-1");
        validate_name(&parsed.default_name()).unwrap();
        let encoded = format!(
            "file://{}/my%20repo%20%281%29",
            dir.path().canonicalize().unwrap().display()
        );
        assert_eq!(SourceSpec::parse(&encoded, Path::new("/")).unwrap(), parsed);
        let err = SourceSpec::parse("my repo", dir.path()).unwrap_err();
        assert!(err.hint().unwrap().contains("`./`"), "{err:?}");
    }

    #[test]
    fn uppercase_schemes_and_schemeless_credentials() {
        assert_eq!(parse("HTTPS://github.com/o/r").url, "https://github.com/o/r.git");
        let err = SourceSpec::parse("user:tok3n@github.com/o/r", Path::new("/")).unwrap_err();
        assert!(!err.message().contains("tok3n"), "{}", err.message());
        let err = SourceSpec::parse("git:tok3n@host", Path::new("/")).unwrap_err();
        assert!(!err.message().contains("tok3n"), "{}", err.message());
    }

    #[test]
    fn existing_folders_get_a_local_path_hint() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("corpus")).unwrap();
        let err = SourceSpec::parse("corpus", dir.path()).unwrap_err();
        assert_eq!(err.code(), ErrorCode::SourceUrlInvalid);
        assert_eq!(err.hint(), Some("to add the local folder, write `./corpus`"));
    }

    #[test]
    fn overrides_conflict_with_spec() {
        let err = parse("o/r@main").with_overrides(Some("dev"), None).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument);
        assert_eq!(
            parse("o/r@main")
                .with_overrides(Some("main"), None)
                .unwrap()
                .git_ref
                .as_deref(),
            Some("main")
        );
        let err = parse("o/r").with_overrides(None, Some("../up")).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument);
    }

    #[rstest]
    #[case("ok-name", true)]
    #[case("openai/skills:.curated", true)]
    #[case("-bad", false)]
    #[case("has space", false)]
    #[case("", false)]
    #[case("x/../y", false)]
    #[case("q/./r", false)]
    #[case("z//w", false)]
    #[case("team/", false)]
    #[case(".hidden", false)]
    #[case("team/.hidden", false)]
    fn names(#[case] name: &str, #[case] ok: bool) {
        assert_eq!(validate_name(name).is_ok(), ok, "{name}");
    }
}
