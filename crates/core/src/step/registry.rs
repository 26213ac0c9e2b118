//! The protocols a scenario may use, found by URL scheme or step key.

use std::fmt;
use std::sync::Arc;

use super::{Protocol, StepProtocol};

/// The protocols a scenario may use, found by URL scheme or step key.
#[derive(Clone, Default)]
pub struct Protocols(Vec<Arc<dyn StepProtocol>>);

impl fmt::Debug for Protocols {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|p| p.name()))
            .finish()
    }
}

impl Protocols {
    /// No protocols.
    pub fn new() -> Self {
        Protocols::default()
    }

    /// Adds a protocol.
    pub fn with(self, p: impl Protocol) -> Self {
        self.with_declared(Arc::new(p))
    }

    /// Adds a protocol already type-erased (a registry's).
    pub fn with_declared(mut self, p: Arc<dyn StepProtocol>) -> Self {
        self.0.push(p);
        self
    }

    /// Every protocol, in the order added.
    pub fn all(&self) -> &[Arc<dyn StepProtocol>] {
        &self.0
    }

    /// The protocol of a URL, by its scheme (case-insensitive).
    pub fn for_url(&self, url: &str) -> Option<&Arc<dyn StepProtocol>> {
        let scheme = url.split_once("://")?.0;
        self.0
            .iter()
            .find(|p| p.schemes().iter().any(|s| s.eq_ignore_ascii_case(scheme)))
    }

    /// The protocol whose steps are written under `key`.
    pub fn for_key(&self, key: &str) -> Option<&Arc<dyn StepProtocol>> {
        self.0.iter().find(|p| p.key() == key)
    }

    /// Every scheme, as `http://, https://`, for messages.
    pub fn schemes(&self) -> String {
        self.0
            .iter()
            .flat_map(|p| p.schemes().iter().map(|s| format!("{s}://")))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
