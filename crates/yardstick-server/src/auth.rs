//! Bearer tokens with scopes.
//!
//! `yardstick server token create --scope push` makes a random token, prints it once and stores
//! only its SHA-256 in `<store>/server-tokens.json` (written atomically, mode 0600). A request
//! carries it as `Authorization: Bearer TOKEN`; the server hashes what it receives and looks the
//! hash up, so the file never holds anything that authenticates by itself.
//!
//! Scopes are ordered: `admin` may do everything `push` may, and `push` everything `read` may.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ServerError;

/// File name of the token file inside a store directory.
pub const TOKENS_FILE: &str = "server-tokens.json";
/// Schema identifier of the token file.
pub const TOKENS_SCHEMA: &str = "yardstick.server-tokens/v1";
/// Every token starts with this, so a leaked one is recognisable (secret scanners, logs).
pub const TOKEN_PREFIX: &str = "ysk_";

/// What a token allows.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Read runs, facts, artifacts, comparisons, trends (only needed with
    /// `--require-read-token`).
    Read,
    /// Push runs (and read).
    Push,
    /// Administer: baselines, tokens (and push and read).
    Admin,
}

impl Scope {
    /// `read`, `push`, `admin`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Push => "push",
            Scope::Admin => "admin",
        }
    }

    /// Parses `read`, `push` or `admin`.
    pub fn parse(s: &str) -> Option<Scope> {
        match s {
            "read" => Some(Scope::Read),
            "push" => Some(Scope::Push),
            "admin" => Some(Scope::Admin),
            _ => None,
        }
    }

    /// Whether a token of this scope may do what needs `needed`.
    pub fn allows(self, needed: Scope) -> bool {
        self >= needed
    }
}

/// One stored token: never the token itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenRecord {
    /// A short public id (the first 12 hex digits of the hash), to list and revoke it by.
    pub id: String,
    /// Its scope.
    pub scope: Scope,
    /// SHA-256 of the token, hex.
    pub sha256: String,
    /// RFC 3339 time it was created.
    pub created_at: String,
    /// Who or what it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The token file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenFile {
    /// [`TOKENS_SCHEMA`].
    pub schema: String,
    /// The tokens.
    pub tokens: Vec<TokenRecord>,
}

impl Default for TokenFile {
    fn default() -> Self {
        TokenFile {
            schema: TOKENS_SCHEMA.into(),
            tokens: Vec::new(),
        }
    }
}

/// The token file of a store directory.
pub fn tokens_path(store: &Path) -> PathBuf {
    store.join(TOKENS_FILE)
}

/// Reads the token file; a missing file is no tokens.
pub fn load(store: &Path) -> Result<TokenFile, ServerError> {
    let path = tokens_path(store);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(TokenFile::default()),
        Err(e) => {
            return Err(ServerError::config(
                format!("cannot read {}: {e}", path.display()),
                None,
            ));
        }
    };
    let file: TokenFile = serde_json::from_slice(&bytes).map_err(|e| {
        ServerError::config(
            format!("{} is not a token file: {e}", path.display()),
            Some("it is written by `yardstick server token create`; restore it or delete it and create new tokens"),
        )
    })?;
    if file.schema != TOKENS_SCHEMA {
        return Err(ServerError::config(
            format!(
                "{} has schema {:?}, expected {TOKENS_SCHEMA:?}",
                path.display(),
                file.schema
            ),
            None,
        ));
    }
    Ok(file)
}

fn save(store: &Path, file: &TokenFile) -> Result<(), ServerError> {
    let path = tokens_path(store);
    let mut bytes =
        serde_json::to_vec_pretty(file).map_err(|e| ServerError::config(e.to_string(), None))?;
    bytes.push(b'\n');
    write_private(&path, &bytes)
        .map_err(|e| ServerError::config(format!("cannot write {}: {e}", path.display()), None))
}

/// Writes `bytes` to `path` atomically (temporary file, fsync, rename) with mode 0600 from the
/// start, so the file is never readable by others, not even for a moment.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    {
        let mut f = opts.open(&tmp)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
}

/// SHA-256 of a token, hex.
pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A fresh token: [`TOKEN_PREFIX`] and 32 random bytes in hex.
fn fresh_token() -> Result<String, ServerError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| ServerError::config(format!("no randomness for a token: {e}"), None))?;
    Ok(format!("{TOKEN_PREFIX}{}", hex::encode(bytes)))
}

/// A token just created: the token itself (shown once) and what was stored.
#[derive(Debug, Clone)]
pub struct CreatedToken {
    /// The token. It is not stored anywhere; print it once.
    pub token: String,
    /// What the token file now holds about it.
    pub record: TokenRecord,
}

/// Creates a token of `scope` in the store directory `store` and stores its hash.
pub fn create(
    store: &Path,
    scope: Scope,
    note: Option<String>,
) -> Result<CreatedToken, ServerError> {
    if !store.is_dir() {
        return Err(ServerError::config(
            format!("{} is not a store directory", store.display()),
            Some("pass --store DIR, the directory `yardstick run` stores runs in"),
        ));
    }
    let mut file = load(store)?;
    let token = fresh_token()?;
    let sha256 = hash_token(&token);
    let now = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let record = TokenRecord {
        id: sha256[..12].to_string(),
        scope,
        sha256,
        created_at: now,
        note,
    };
    file.tokens.push(record.clone());
    save(store, &file)?;
    Ok(CreatedToken { token, record })
}

/// Removes the token whose id (or full hash) is `id`; false when there is none.
pub fn revoke(store: &Path, id: &str) -> Result<bool, ServerError> {
    let mut file = load(store)?;
    let before = file.tokens.len();
    file.tokens.retain(|t| t.id != id && t.sha256 != id);
    if file.tokens.len() == before {
        return Ok(false);
    }
    save(store, &file)?;
    Ok(true)
}

/// Compares two byte strings in time that depends only on their lengths.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Why a request is not allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// No token, a malformed header, or a token the server does not know (401).
    Unauthenticated(String),
    /// A known token whose scope is too low (403).
    Forbidden(String),
}

/// The tokens a running server accepts.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    records: Vec<TokenRecord>,
}

impl Tokens {
    /// The tokens of a token file.
    pub fn new(file: TokenFile) -> Tokens {
        Tokens {
            records: file.tokens,
        }
    }

    /// How many tokens there are.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The scope of `token`, if it is one of ours.
    pub fn scope_of(&self, token: &str) -> Option<Scope> {
        let h = hash_token(token);
        // Look at every record, so the time taken does not tell which one matched.
        let mut found = None;
        for r in &self.records {
            if constant_time_eq(r.sha256.as_bytes(), h.as_bytes()) {
                found = Some(r.scope);
            }
        }
        found
    }

    /// Checks an `Authorization` header value (if any) for an operation that needs `needed`.
    pub fn check(&self, authorization: Option<&str>, needed: Scope) -> Result<Scope, Denied> {
        let Some(value) = authorization else {
            return Err(Denied::Unauthenticated(format!(
                "this needs a token of scope `{}`: send `Authorization: Bearer TOKEN`",
                needed.as_str()
            )));
        };
        let token = value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                Denied::Unauthenticated(
                    "the Authorization header must be `Bearer TOKEN`".to_string(),
                )
            })?;
        let scope = self.scope_of(token).ok_or_else(|| {
            Denied::Unauthenticated("the token is not known to this server".into())
        })?;
        if scope.allows(needed) {
            Ok(scope)
        } else {
            Err(Denied::Forbidden(format!(
                "the token's scope `{}` does not allow this; it needs `{}`",
                scope.as_str(),
                needed.as_str()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_are_ordered() {
        assert!(Scope::Admin.allows(Scope::Push));
        assert!(Scope::Push.allows(Scope::Read));
        assert!(!Scope::Read.allows(Scope::Push));
        assert!(!Scope::Push.allows(Scope::Admin));
        for s in [Scope::Read, Scope::Push, Scope::Admin] {
            assert_eq!(Scope::parse(s.as_str()), Some(s));
        }
        assert_eq!(Scope::parse("root"), None);
    }

    #[test]
    fn created_tokens_are_stored_as_hashes_only_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let push = create(dir.path(), Scope::Push, Some("ci".into())).unwrap();
        let read = create(dir.path(), Scope::Read, None).unwrap();
        assert!(push.token.starts_with(TOKEN_PREFIX));
        assert_ne!(push.token, read.token);
        let text = std::fs::read_to_string(tokens_path(dir.path())).unwrap();
        assert!(!text.contains(&push.token[TOKEN_PREFIX.len()..]));
        assert!(text.contains(&hash_token(&push.token)));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(tokens_path(dir.path()))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let tokens = Tokens::new(load(dir.path()).unwrap());
        assert_eq!(tokens.len(), 2);
        let bearer = |t: &str| format!("Bearer {t}");
        assert_eq!(
            tokens.check(Some(&bearer(&push.token)), Scope::Read),
            Ok(Scope::Push)
        );
        assert_eq!(
            tokens.check(Some(&bearer(&push.token)), Scope::Push),
            Ok(Scope::Push)
        );
        assert!(matches!(
            tokens.check(Some(&bearer(&read.token)), Scope::Push),
            Err(Denied::Forbidden(_))
        ));
        assert!(matches!(
            tokens.check(Some(&bearer("ysk_wrong")), Scope::Read),
            Err(Denied::Unauthenticated(_))
        ));
        assert!(matches!(
            tokens.check(Some(&push.token), Scope::Read),
            Err(Denied::Unauthenticated(_))
        ));
        assert!(matches!(
            tokens.check(None, Scope::Read),
            Err(Denied::Unauthenticated(_))
        ));
        assert!(revoke(dir.path(), &push.record.id).unwrap());
        assert!(!revoke(dir.path(), &push.record.id).unwrap());
        let tokens = Tokens::new(load(dir.path()).unwrap());
        assert_eq!(tokens.scope_of(&push.token), None);
        assert_eq!(tokens.scope_of(&read.token), Some(Scope::Read));
    }

    #[test]
    fn a_corrupt_token_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(tokens_path(dir.path()), "{not json").unwrap();
        assert!(matches!(load(dir.path()), Err(ServerError::Config { .. })));
        assert!(create(&dir.path().join("missing"), Scope::Read, None).is_err());
    }
}
