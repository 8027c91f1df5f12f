//! Text analysis shared by indexing and querying.

pub mod near;
pub mod tokenize;
