//! MCP resources: read-only views of the catalog, each answered by a read tool
//! of the registry (so a resource and its tool never disagree).
//!
//! Names inside URIs are percent-encoded (`aam://sources/anthropics%2Fskills`).
//! Fixed resources never sit where a template's `{name}` could: every name is
//! readable through its template (a package called `installed` is
//! `aam://packages/installed`; the installed list is `aam://installed`).

use percent_encoding::{NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use rmcp::ErrorData;
use rmcp::model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
use serde_json::{Value, json};

use super::AamServer;
use crate::error::{Category, Error};

const JSON: &str = "application/json";

/// The fixed resources, plus one per registered source.
pub(super) async fn list(server: &AamServer) -> Vec<Resource> {
    let mut out = vec![
        Resource::new("aam://sources", "sources")
            .with_description("Every registered source with its artifact counts and indexed commit")
            .with_mime_type(JSON),
        Resource::new("aam://installed", "installed packages")
            .with_description("Packages installed in the served project, from its lock file")
            .with_mime_type(JSON),
        Resource::new("aam://registries", "registries")
            .with_description("Configured package registries")
            .with_mime_type(JSON),
        Resource::new("aam://config", "config")
            .with_description("aam's settings")
            .with_mime_type(JSON),
        Resource::new("aam://manifest", "tool manifest")
            .with_description("Every tool aam has, with its schemas, risk and idempotency")
            .with_mime_type(JSON),
        Resource::new("aam://server/info", "server info")
            .with_description("Version, catalog path and schema, read-only state, transport and counts")
            .with_mime_type(JSON),
    ];
    if let Ok(sources) = server.read_with("aam_source_list", json!({})).await {
        for source in sources["sources"].as_array().into_iter().flatten() {
            if let Some(name) = source["name"].as_str() {
                out.push(
                    Resource::new(format!("aam://sources/{}", encode(name)), format!("source {name}"))
                        .with_description(format!("The artifacts indexed from `{name}`"))
                        .with_mime_type(JSON),
                );
            }
        }
    }
    out
}

/// The parameterized resources.
pub(super) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new("aam://sources/{name}", "source")
            .with_description("One source's indexed artifacts, by type (name percent-encoded)")
            .with_mime_type(JSON),
        ResourceTemplate::new("aam://sources/{name}/candidates", "source candidates")
            .with_description("A source's artifacts that no package holds yet (first 1000)")
            .with_mime_type(JSON),
        ResourceTemplate::new("aam://packages/{name}", "package")
            .with_description("An installed or published package: versions, artifacts, dependencies")
            .with_mime_type(JSON),
        ResourceTemplate::new("aam://artifacts/{source}/{name}", "artifact text")
            .with_description("The text of an artifact's main file (source and name percent-encoded)")
            .with_mime_type("text/markdown"),
    ]
}

/// Reads one resource; an unknown URI, or one naming something that does not
/// exist, is `resource not found`.
pub(super) async fn read(server: &AamServer, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let Some(path) = uri.strip_prefix("aam://") else {
        return Err(not_found(uri));
    };
    let parts: Vec<&str> = path.split('/').collect();
    let value = match parts.as_slice() {
        ["sources"] => server.read_with("aam_source_list", json!({})).await,
        ["sources", name] => {
            server
                .read_with("aam_source_scan", json!({ "name": decode(name)? }))
                .await
        }
        ["sources", name, "candidates"] => {
            let input = json!({ "source": decode(name)?, "limit": 1000 });
            server.read_with("aam_source_candidates", input).await
        }
        ["installed"] => server.read_with("aam_list", json!({})).await,
        ["packages", name] => {
            server
                .read_with("aam_package_info", json!({ "name": decode(name)? }))
                .await
        }
        ["registries"] => server.read_with("aam_registry_list", json!({})).await,
        ["config"] => server.read_with("aam_config_get", json!({})).await,
        ["manifest"] => Ok(crate::manifest::manifest()),
        ["server", "info"] => server_info(server).await,
        ["artifacts", source, name] => {
            let qualified = format!("{}/{}", decode(source)?, decode(name)?);
            let info = server
                .read_with("aam_info", json!({ "name": qualified, "full": true }))
                .await;
            let policy = server.ctx().serving_audit_policy().map_err(|e| to_protocol(uri, &e))?;
            return match info {
                // The text of what the install gate would block is not handed
                // out either (Skills over MCP leaves it out too); `aam_info`
                // shows it beside its findings.
                Ok(info) if let Some(severity) = blocking(&policy, &info["finding_counts"]) => {
                    Err(ErrorData::resource_not_found(
                        format!(
                            "`{uri}` is not served: the content audit found `{severity}` findings in it, which `audit.block` blocks (`aam audit {qualified}` lists them)"
                        ),
                        Some(json!({ "uri": uri, "finding_counts": info["finding_counts"] })),
                    ))
                }
                // No text, and the index said why (a main file that is a link
                // to nothing in the repository): that, not an empty text.
                Ok(info)
                    if info["preview"].as_str().is_none_or(str::is_empty)
                        && info["warnings"].as_array().is_some_and(|w| !w.is_empty()) =>
                {
                    Err(ErrorData::resource_not_found(
                        format!(
                            "`{uri}` has no text to read: {}",
                            info["warnings"][0].as_str().unwrap_or_default()
                        ),
                        Some(json!({ "uri": uri, "warnings": info["warnings"] })),
                    ))
                }
                Ok(info) => Ok(ReadResourceResult::new(vec![
                    ResourceContents::text(info["preview"].as_str().unwrap_or_default(), uri)
                        .with_mime_type("text/markdown"),
                ])),
                Err(e) => Err(to_protocol(uri, &e)),
            };
        }
        _ => return Err(not_found(uri)),
    };
    match value {
        Ok(value) => Ok(ReadResourceResult::new(vec![
            ResourceContents::text(serde_json::to_string_pretty(&value).unwrap_or_default(), uri).with_mime_type(JSON),
        ])),
        Err(e) => Err(to_protocol(uri, &e)),
    }
}

async fn server_info(server: &AamServer) -> crate::error::Result<Value> {
    let ctx = server.ctx().clone();
    let counts = tokio::task::spawn_blocking(move || ctx.catalog()?.counts())
        .await
        .map_err(|e| Error::internal(format!("reading the catalog failed: {e}")))??;
    let options = server.options();
    Ok(json!({
        "name": env!("CARGO_PKG_NAME"),
        "version": env!("CARGO_PKG_VERSION"),
        "catalog_path": server.ctx().home.catalog_path(),
        "schema_version": counts.schema_version,
        "project_root": server.ctx().cwd,
        "read_only": options.read_only || !options.allow_write,
        "allow_write": options.allow_write,
        "transport": options.transport,
        "tool_timeout_seconds": options.timeout.as_secs_f64(),
        "counts": counts,
    }))
}

/// A name as it appears in a URI.
pub(super) fn encode(name: &str) -> String {
    utf8_percent_encode(name, NON_ALPHANUMERIC).to_string()
}

fn decode(part: &str) -> Result<String, ErrorData> {
    percent_decode_str(part)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| ErrorData::invalid_params(format!("`{part}` is not valid percent-encoded UTF-8"), None))
}

/// Longest URI a resource or skill request may name, in bytes: none aam
/// serves comes near it, and errors quote the URI (a 45,000-character one
/// made an answer the client never got).
pub const MAX_URI_BYTES: usize = 4096;

/// `-32602` for a URI longer than [`MAX_URI_BYTES`], quoting only its start.
pub(super) fn check_length(uri: &str) -> Result<(), ErrorData> {
    if uri.len() <= MAX_URI_BYTES {
        return Ok(());
    }
    Err(ErrorData::invalid_params(
        format!(
            "a URI of {} bytes is longer than any aam serves ({MAX_URI_BYTES} at most): `{}`",
            uri.len(),
            crate::error::quoted(uri)
        ),
        Some(json!({ "uri_bytes": uri.len() })),
    ))
}

/// The highest severity among `counts` (an artifact's `finding_counts`) that `policy` blocks.
fn blocking(policy: &crate::audit::Policy, counts: &Value) -> Option<crate::audit::Severity> {
    crate::audit::Severity::ALL
        .into_iter()
        .rev()
        .find(|s| policy.block.reached(*s) && counts[s.as_str()].as_u64().unwrap_or(0) > 0)
}

pub(super) fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(format!("no resource `{uri}`"), Some(json!({ "uri": uri })))
}

/// A tool failure behind a resource: things that do not exist are `resource
/// not found`; the rest are internal errors carrying the aam error body.
pub(super) fn to_protocol(uri: &str, error: &Error) -> ErrorData {
    let data = Some(json!({ "uri": uri, "error": error.to_body() }));
    let message = format!("[{}] {}", error.code(), error.message());
    match error.category() {
        Category::NotFound => ErrorData::resource_not_found(message, data),
        Category::InvalidInput => ErrorData::invalid_params(message, data),
        _ => ErrorData::internal_error(message, data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_slashes_round_trip() {
        let name = "anthropics/skills:skills";
        let encoded = encode(name);
        assert_eq!(encoded, "anthropics%2Fskills%3Askills");
        assert!(!encoded.contains('/'));
        assert_eq!(decode(&encoded).unwrap(), name);
    }
}
