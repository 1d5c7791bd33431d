//! The rules every relative path from untrusted input follows (lock file keys,
//! archive entries, journal entries): no `..` or `.` part, no empty part, not
//! absolute, no `~`, no drive letter or `:`, no backslash, no NUL or control
//! character, at most 4096 bytes. Where a path may lead is the caller's check
//! (see `install::keys`).

/// Checks a `/`-separated relative path part by part; the refusal says why in
/// words (the caller names the path).
pub fn check_relative(rest: &str) -> Result<(), String> {
    if rest.is_empty() {
        return Err("it is empty".to_string());
    }
    if rest.len() > 4096 {
        return Err("it is longer than 4096 bytes".to_string());
    }
    if rest.starts_with('/') {
        return Err("it is an absolute path".to_string());
    }
    if rest.starts_with('~') {
        return Err("it starts with `~`".to_string());
    }
    if rest.contains('\\') {
        return Err("it contains a backslash".to_string());
    }
    for part in rest.split('/') {
        match part {
            "" => return Err("it has an empty path part".to_string()),
            "." | ".." => return Err(format!("it has a `{part}` part")),
            _ if part.contains(':') => return Err("it contains `:` (a drive letter or stream)".to_string()),
            _ if part.chars().any(char::is_control) => {
                return Err("it contains a NUL or control character".to_string());
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_paths_pass_and_tricks_do_not() {
        assert!(check_relative("skills/a/SKILL.md").is_ok());
        for bad in [
            "", "/etc", "~/x", "a/../b", "./a", "a//b", "C:/x", "a\\b", "a\0b", "a\nb",
        ] {
            assert!(check_relative(bad).is_err(), "{bad:?}");
        }
    }
}
