//! Atomic file replacement (being written).
