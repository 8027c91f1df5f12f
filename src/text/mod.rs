//! Text analysis shared by indexing and querying.

pub mod tokenize;
