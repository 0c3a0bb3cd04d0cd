//! Maps JSON pointers back to source positions.

use std::collections::HashMap;

use crate::yaml::{Located, Pos};

/// Finds where a field is (or, when it is absent, where it should have been).
pub(crate) struct Locator<'a> {
    positions: &'a HashMap<String, Located>,
}

impl<'a> Locator<'a> {
    pub(crate) fn new(positions: &'a HashMap<String, Located>) -> Self {
        Locator { positions }
    }

    /// Whether the pointer names a node of the source.
    pub(crate) fn exists(&self, ptr: &str) -> bool {
        self.positions.contains_key(ptr)
    }

    /// The value's position; for an absent field, the key of the nearest enclosing field.
    pub(crate) fn value(&self, ptr: &str) -> Pos {
        match self.positions.get(ptr) {
            Some(l) => l.value,
            None => self.enclosing(ptr),
        }
    }

    /// The key's position (for "this field is wrong"); falls back like [`Locator::value`].
    pub(crate) fn key(&self, ptr: &str) -> Pos {
        match self.positions.get(ptr) {
            Some(l) => l.key.unwrap_or(l.value),
            None => self.enclosing(ptr),
        }
    }

    fn enclosing(&self, ptr: &str) -> Pos {
        let mut p = ptr;
        while let Some((parent, _)) = p.rsplit_once('/') {
            if let Some(l) = self.positions.get(parent) {
                return l.key.unwrap_or(l.value);
            }
            p = parent;
        }
        Pos { line: 1, col: 1 }
    }
}
