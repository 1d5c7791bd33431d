//! The product's one error type.
//!
//! Every failure a user can meet carries a stable [`ErrorCode`] (`AAM_*`), a
//! [`Category`] shared with the MCP layer, a message that says what went wrong
//! (lowercase, no trailing period, values in backticks) and an optional hint that
//! says what to do next. Messages never contain SQL, stack traces or secrets: the
//! underlying cause is kept in `source` for `-v` logs only.

use std::fmt;

use schemars::JsonSchema;
use serde::Serialize;

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Broad classes of failure, shared by the CLI, MCP and tool-call front ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Category {
    /// The request itself is wrong.
    InvalidInput,
    /// Something named in the request does not exist.
    NotFound,
    /// The request clashes with existing state.
    Conflict,
    /// Credentials are missing or were refused.
    Unauthorized,
    /// The operation is not allowed here.
    Forbidden,
    /// The operation took too long.
    Timeout,
    /// A remote party refused or failed.
    UpstreamError,
    /// A bug, or local state aam cannot repair by itself.
    InternalError,
}

macro_rules! error_codes {
    ($( #[doc = $doc:literal] $variant:ident = $code:literal, $category:ident; )*) => {
        /// Stable machine-readable error codes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $( #[doc = $doc] $variant, )*
        }

        impl ErrorCode {
            /// Every code, in declaration order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),*];

            /// The stable `AAM_*` string.
            pub fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$variant => $code,)* }
            }

            /// The category this code belongs to.
            pub fn category(self) -> Category {
                match self { $(ErrorCode::$variant => Category::$category,)* }
            }

            /// When this code is returned, in words.
            pub fn description(self) -> &'static str {
                match self { $(ErrorCode::$variant => $doc.trim(),)* }
            }
        }
    };
}

error_codes! {
    /// An argument is malformed or out of range.
    InvalidArgument = "AAM_INVALID_ARGUMENT", InvalidInput;
    /// A source spec is not one of the accepted forms.
    SourceUrlInvalid = "AAM_SOURCE_URL_INVALID", InvalidInput;
    /// No source has the given name.
    SourceNotFound = "AAM_SOURCE_NOT_FOUND", NotFound;
    /// A source with that name is already registered.
    SourceAlreadyExists = "AAM_SOURCE_ALREADY_EXISTS", Conflict;
    /// The source is registered but has never been fetched.
    SourceNotIndexed = "AAM_SOURCE_NOT_INDEXED", NotFound;
    /// Another process changed the same state first.
    Conflict = "AAM_CONFLICT", Conflict;
    /// The scope path does not exist in the source's tree.
    SourcePathNotFound = "AAM_SOURCE_PATH_NOT_FOUND", NotFound;
    /// No artifact has the given name.
    ArtifactNotFound = "AAM_ARTIFACT_NOT_FOUND", NotFound;
    /// A name matches several artifacts.
    ArtifactAmbiguous = "AAM_ARTIFACT_AMBIGUOUS", InvalidInput;
    /// A branch, tag or commit could not be found on the remote.
    GitRefNotFound = "AAM_GIT_REF_NOT_FOUND", NotFound;
    /// The first fetch of a remote failed.
    GitCloneFailed = "AAM_GIT_CLONE_FAILED", UpstreamError;
    /// Fetching new commits from a remote failed.
    GitFetchFailed = "AAM_GIT_FETCH_FAILED", UpstreamError;
    /// The remote refused the credentials, or needs some.
    GitAuthFailed = "AAM_GIT_AUTH_FAILED", Unauthorized;
    /// The network could not be reached.
    NetworkError = "AAM_NETWORK_ERROR", UpstreamError;
    /// A remote's TLS certificate is not trusted (unknown issuer, wrong name, expired).
    TlsCertificate = "AAM_TLS_CERTIFICATE", UpstreamError;
    /// The local git cache is missing objects or unreadable.
    CacheCorrupted = "AAM_CACHE_CORRUPTED", InternalError;
    /// A file aam would read from a source is larger than it reads (16 MiB), or a git object of the source declares more than 1 GiB; fetches leave such files on the server.
    SourceFileTooLarge = "AAM_SOURCE_FILE_TOO_LARGE", InvalidInput;
    /// The catalog database failed.
    CatalogError = "AAM_CATALOG_ERROR", InternalError;
    /// The catalog was written by a newer aam.
    CatalogTooNew = "AAM_CATALOG_TOO_NEW", Conflict;
    /// Another aam process held the catalog's lock longer than the 10-second wait; try again once it is done.
    CatalogBusy = "AAM_CATALOG_BUSY", Timeout;
    /// An `aam.yaml` is invalid.
    ManifestInvalid = "AAM_MANIFEST_INVALID", InvalidInput;
    /// An archive is damaged or unsafe.
    ArchiveInvalid = "AAM_ARCHIVE_INVALID", InvalidInput;
    /// A registry name or path is unknown.
    RegistryNotFound = "AAM_REGISTRY_NOT_FOUND", NotFound;
    /// A folder is not a registry, or a registry is damaged.
    RegistryInvalid = "AAM_REGISTRY_INVALID", InvalidInput;
    /// A registry with that name is already configured.
    RegistryExists = "AAM_REGISTRY_EXISTS", Conflict;
    /// Files to package differ from the project's last commit (`--allow-dirty` packages them as they are).
    UncommittedChanges = "AAM_UNCOMMITTED_CHANGES", Conflict;
    /// A package version is already published (versions are immutable).
    VersionExists = "AAM_VERSION_EXISTS", Conflict;
    /// No package of that name or version can be found.
    PackageNotFound = "AAM_PACKAGE_NOT_FOUND", NotFound;
    /// The package is not installed here.
    PackageNotInstalled = "AAM_PACKAGE_NOT_INSTALLED", NotFound;
    /// Dependencies ask for versions no single version satisfies.
    DependencyConflict = "AAM_DEPENDENCY_CONFLICT", Conflict;
    /// The lock file cannot be read.
    LockInvalid = "AAM_LOCK_INVALID", InvalidInput;
    /// Content restored from the lock file does not match a checksum it records.
    ChecksumMismatch = "AAM_CHECKSUM_MISMATCH", Conflict;
    /// `--frozen`: restoring would change the lock file.
    LockOutdated = "AAM_LOCK_OUTDATED", Conflict;
    /// `--offline`: something a restore needs is not in `AAM_HOME` and would have to be fetched.
    OfflineMissing = "AAM_OFFLINE_MISSING", NotFound;
    /// The settings file cannot be read or written.
    SettingsInvalid = "AAM_SETTINGS_INVALID", InvalidInput;
    /// The operation is not allowed here (read-only mode, a path outside the served folders).
    Forbidden = "AAM_FORBIDDEN", Forbidden;
    /// The project folder is a disk root or home folder, or far larger than a project (`--large-project` indexes it anyway).
    ProjectTooLarge = "AAM_PROJECT_TOO_LARGE", Forbidden;
    /// A path named by a lock file, manifest, archive or journal leaves the folders aam installs into.
    UnsafePath = "AAM_UNSAFE_PATH", Forbidden;
    /// An artifact cannot be deployed safely (a line of it forges an aam section marker).
    ArtifactRejected = "AAM_ARTIFACT_REJECTED", InvalidInput;
    /// The content audit found something the install policy (`audit.block`) refuses.
    AuditBlocked = "AAM_AUDIT_BLOCKED", Forbidden;
    /// The operation did not finish within its time limit.
    Timeout = "AAM_TIMEOUT", Timeout;
    /// The call was cancelled (by the client or its time limit) before it kept any change.
    Cancelled = "AAM_CANCELLED", Timeout;
    /// The search index failed.
    IndexError = "AAM_INDEX_ERROR", InternalError;
    /// A file could not be read or written.
    IoError = "AAM_IO_ERROR", InternalError;
    /// A bug in aam.
    Internal = "AAM_INTERNAL_ERROR", InternalError;
}

impl ErrorCode {
    /// Process exit code: 1 for failures the user can act on, 2 for internal errors.
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorCode::Internal => 2,
            _ => 1,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Characters of a value from outside (a name asked for, an archive entry's
/// path) an error quotes; the rest is cut, with `…`.
pub const QUOTED_CHARS: usize = 200;

/// Longest message or hint an error carries, in bytes: an input echoed in
/// one (a 500,000-character key) is cut, so an answer to an MCP client or a
/// log line stays readable.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;

/// `text` cut to [`MAX_MESSAGE_BYTES`] at a character boundary, saying how much was left out.
fn bounded(mut text: String) -> String {
    if text.len() <= MAX_MESSAGE_BYTES {
        return text;
    }
    let mut end = MAX_MESSAGE_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let left_out = text.len() - end;
    text.truncate(end);
    text.push_str(&format!("… ({left_out} more bytes)"));
    text
}

/// The name of `known` closest to `wanted` (ignoring case), when it is close
/// enough to be a typo of it: what a "did you mean" offers.
pub fn closest_name<'a>(wanted: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let wanted = wanted.to_lowercase();
    known
        .into_iter()
        .map(|name| (strsim::jaro_winkler(&wanted, &name.to_lowercase()), name))
        .filter(|(score, _)| *score >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, name)| name)
}

/// `text` as an error quotes it: control and invisible characters escaped
/// (`\n`, `\u{202e}`), so a line break or a bidi override in a hostile value
/// cannot forge or reorder a line of aam's output, and cut after
/// [`QUOTED_CHARS`] characters. Quotes, backslashes and combining marks (an
/// accent written apart, as macOS file names have it) stay as they are.
pub fn quoted(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == QUOTED_CHARS {
            out.push('…');
            break;
        }
        match c {
            '\'' | '"' | '\\' => out.push(c),
            // Escaped as inside a string, where a combining mark is printable.
            _ => out.extend(format!("a{c}").escape_debug().skip(1)),
        }
    }
    out
}

/// `text` with the user and password of every `scheme://user:pass@host` URL in
/// it replaced by `***`, and the query of such a URL by `?***` (as
/// [`crate::sources::spec::redact_location`] shows a URL), and likewise the
/// `user:pass` of an scp-like `user:pass@host:path`: whatever path built an
/// error's words, a token a user typed into a URL never comes back in them
/// (sources redact their URLs themselves; this catches every other one).
pub fn mask_credentials(text: String) -> String {
    let text = mask_scp_passwords(text);
    if !text.contains("://") {
        return text;
    }
    let ends_url = |c: char| c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '<' | '>' | ')' | ']' | ',');
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        out.push_str(before);
        let url_end = after.find(ends_url).unwrap_or(after.len());
        let (url, tail) = after.split_at(url_end);
        out.push_str(&crate::sources::spec::redact_location(url));
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// `text` with `***` for the part before `@` of every word shaped like
/// `user:pass@host`: a colon before the `@`, no `/` (URLs are masked apart).
fn mask_scp_passwords(text: String) -> String {
    if !text.contains('@') {
        return text;
    }
    let starts_word = |c: char| c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '(' | '[' | '<');
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find('@') {
        let (head, tail) = rest.split_at(at);
        let word_start = head
            .rfind(starts_word)
            .map_or(0, |i| i + head[i..].chars().next().map_or(1, char::len_utf8));
        let word = &head[word_start..];
        out.push_str(&head[..word_start]);
        if word.contains(':') && !word.contains('/') {
            out.push_str("***");
        } else {
            out.push_str(word);
        }
        out.push('@');
        rest = &tail[1..];
    }
    out.push_str(rest);
    out
}

/// An error with a stable code, a user-facing message and an optional hint.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    code: ErrorCode,
    message: String,
    hint: Option<String>,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Error {
    /// A new error with `code` and a user-facing `message` (credentials in
    /// any URL it quotes are masked, see [`mask_credentials`]).
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: bounded(mask_credentials(message.into())),
            hint: None,
            source: None,
        }
    }

    /// Attaches what the user should do next.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(bounded(mask_credentials(hint.into())));
        self
    }

    /// The same error, its message told as part of `context` (what was being
    /// done, and to what).
    pub fn in_context(mut self, context: impl std::fmt::Display) -> Self {
        self.message = bounded(format!("{context}: {}", self.message));
        self
    }

    /// The same error, its message followed by those of `others` (failures of
    /// the same command on other items, each prefixed with its code), so one
    /// run tells every one.
    pub fn with_also(mut self, others: &[Error]) -> Self {
        if !others.is_empty() {
            let more: Vec<String> = others
                .iter()
                .map(|e| format!("{}: {}", e.code(), e.message()))
                .collect();
            self.message = bounded(format!("{}; also: {}", self.message, more.join("; ")));
        }
        self
    }

    /// Keeps the underlying cause for logs; it is never shown as the message.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// Shorthand for [`ErrorCode::InvalidArgument`].
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArgument, message)
    }

    /// Shorthand for an internal error (a bug).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
            .with_hint("this is a bug in aam; please report it with the output of `aam -vv`")
    }

    /// An I/O failure on `path`, doing `action` (`"read"`, `"write"`, ...).
    pub fn io(action: &str, path: &std::path::Path, source: std::io::Error) -> Self {
        let hint = match source.raw_os_error() {
            Some(libc::EMFILE | libc::ENFILE) => {
                "too many files are open at once: raise the limit (`ulimit -n 4096`) and run the command again"
            }
            _ => "check that the path exists, that you may write there, and that the disk is not full",
        };
        Self::new(
            ErrorCode::IoError,
            format!("failed to {action} `{}`: {source}", path.display()),
        )
        .with_hint(hint)
        .with_source(source)
    }

    /// The kind of the I/O error behind this one, if it is one.
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        let source = self.source.as_deref()?;
        source.downcast_ref::<std::io::Error>().map(std::io::Error::kind)
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The category of the code.
    pub fn category(&self) -> Category {
        self.code.category()
    }

    /// The user-facing message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What to do next, when known.
    pub fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }

    /// The chain of underlying causes, for verbose logs.
    pub fn causes(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut next = self.source.as_deref().map(|e| e as &dyn std::error::Error);
        while let Some(err) = next {
            out.push(err.to_string());
            next = err.source();
        }
        out
    }

    /// The structured form front ends return to machines.
    pub fn to_body(&self) -> ErrorBody {
        ErrorBody {
            code: self.code,
            category: self.category(),
            message: self.message.clone(),
            hint: self.hint.clone(),
        }
    }
}

/// The machine-readable shape of an error (`--json` on failure, MCP structured content).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ErrorBody {
    /// Stable `AAM_*` code.
    #[schemars(with = "String")]
    pub code: ErrorCode,
    /// Broad class of the failure.
    pub category: Category,
    /// What went wrong.
    pub message: String,
    /// What to do next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_failures_follow_the_first() {
        let first = Error::new(ErrorCode::SourceNotFound, "a failed").with_hint("fix a");
        let all = first.with_also(&[Error::new(ErrorCode::Conflict, "b failed")]);
        assert_eq!(all.code(), ErrorCode::SourceNotFound);
        assert_eq!(all.message(), "a failed; also: AAM_CONFLICT: b failed");
        assert_eq!(all.hint(), Some("fix a"));
    }

    #[test]
    fn the_closest_name_is_offered_only_when_close() {
        let known = ["cursor", "claude-code", "codex"];
        assert_eq!(closest_name("cursr", known), Some("cursor"));
        assert_eq!(closest_name("Claude-Cod", known), Some("claude-code"));
        assert_eq!(closest_name("zed", known), None);
        assert_eq!(closest_name("x", []), None);
    }

    #[test]
    fn quoted_values_are_escaped_and_cut() {
        assert_eq!(quoted("bob's \"skill\""), "bob's \"skill\"");
        assert_eq!(quoted("a\nhint: run this"), "a\\nhint: run this");
        assert_eq!(quoted("evil\u{202e}txt.exe\u{200b}"), "evil\\u{202e}txt.exe\\u{200b}");
        assert_eq!(quoted("cafe\u{301} 日本"), "cafe\u{301} 日本");
        let long = "é".repeat(QUOTED_CHARS + 5);
        assert_eq!(quoted(&long), format!("{}…", "é".repeat(QUOTED_CHARS)));
        assert_eq!(quoted(&long[..2 * QUOTED_CHARS]), "é".repeat(QUOTED_CHARS));
    }

    #[test]
    fn long_messages_and_hints_are_cut_at_a_character() {
        let key = "é".repeat(300_000);
        let error = Error::invalid_argument(format!("`{key}` is not a setting")).with_hint(key.clone());
        for text in [error.message(), error.hint().unwrap()] {
            assert!(text.len() < MAX_MESSAGE_BYTES + 40, "{}", text.len());
            assert!(text.ends_with(" more bytes)"), "{}", &text[text.len() - 30..]);
        }
        assert_eq!(Error::invalid_argument("short").message(), "short");
    }

    #[test]
    fn credentials_in_quoted_urls_never_reach_the_message_or_hint() {
        let err = Error::invalid_argument(
            "`file://user:SECRET@localhost/tmp/x` needs an absolute path; so does https://SECRET@h/r.git?token=SECRET2, twice: (http://a:SECRET@h)",
        )
        .with_hint("try `https://user:SECRET@host/repo` again");
        assert!(!err.message().contains("SECRET"), "{}", err.message());
        assert!(!err.hint().unwrap_or_default().contains("SECRET"));
        assert_eq!(
            err.message(),
            "`file://***@localhost/tmp/x` needs an absolute path; so does https://***@h/r.git?***, twice: (http://***@h)"
        );
        let plain = "`https://github.com/a/b` at `main`, `git@github.com:o/r`, a@b.org and `/tmp/a@b`";
        assert_eq!(mask_credentials(plain.to_string()), plain);
        assert_eq!(
            mask_credentials("`user:SECRET@127.0.0.1:/repo` names no source".to_string()),
            "`***@127.0.0.1:/repo` names no source"
        );
        // A `/`, `?` or `#` typed raw into a password ends nothing: the last `@` does.
        let typed = "`https://ghp_SECRET?x@github.com/o/r`, https://u:pa/SECRET@h/r and ssh://git:SE#CRET@h/r?t=SECRET";
        assert_eq!(
            mask_credentials(typed.to_string()),
            "`https://***@github.com/o/r`, https://***@h/r and ssh://***@h/r?***"
        );
        let ssh = "accepted: `ssh://git@host/owner/repo.git`";
        assert_eq!(mask_credentials(ssh.to_string()), ssh);
        let query = "`https://127.0.0.1:9/o/r?token=abc@SECRET3` names no source artifact";
        assert_eq!(
            mask_credentials(query.to_string()),
            "`https://***` names no source artifact"
        );
    }
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_and_prefixed() {
        let mut seen = HashSet::new();
        for code in ErrorCode::ALL {
            assert!(code.as_str().starts_with("AAM_"), "{code}");
            assert!(seen.insert(code.as_str()), "duplicate code {code}");
        }
    }

    #[test]
    fn body_carries_code_category_and_hint() {
        let err = Error::new(ErrorCode::SourceNotFound, "no source named `x`").with_hint("run `aam source list`");
        let body = serde_json::to_value(err.to_body()).unwrap();
        assert_eq!(body["code"], "AAM_SOURCE_NOT_FOUND");
        assert_eq!(body["category"], "NOT_FOUND");
        assert_eq!(body["hint"], "run `aam source list`");
    }
}
