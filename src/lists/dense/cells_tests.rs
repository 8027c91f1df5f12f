//! The cells ([`super::cells`]) as an index run writes them and a search
//! probes them, through the codes they order.

use super::cells::*;
use super::quantize;
use crate::embed::normalize;
use crate::lists::AllowSet;
use crate::lists::dense::codes::{self, CodeSet, SignCodes, best_across};
use crate::lists::dense::{QuantizedVectors, VectorWriter};
use crate::store::generation::ChunkOrd;
use std::path::Path;

const DIM: usize = 32;
const CLUSTERS: usize = 8;

/// A pseudo-random value in [-0.5, 0.5) for `seed`.
fn noise(seed: usize) -> f32 {
    let x = (seed as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let x = (x ^ (x >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
}

/// Cluster `c`'s centre: one dimension of its own, strongly.
fn centre(cluster: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..DIM).map(|d| noise(cluster * DIM + d)).collect();
    v[cluster] = 4.0;
    normalize(&mut v);
    v
}

/// Row `row`: its cluster's (`row % CLUSTERS`) centre, moved a little.
fn row_vector(row: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (centre(row % CLUSTERS).iter().enumerate())
        .map(|(d, c)| c + 0.2 * noise(1_000_000 + row * DIM + d))
        .collect();
    normalize(&mut v);
    v
}

/// The vectors of `rows` rows in `dir`, and their codes and cells.
fn written(dir: &Path, rows: usize) {
    let mut vectors = QuantizedVectors::zeros(rows, DIM);
    for row in 0..rows {
        vectors.set(row, &row_vector(row));
    }
    let mut writer = VectorWriter::create(dir).unwrap();
    writer.append(vectors.rows(), &vec![0; rows]).unwrap();
    writer.finish().unwrap();
    codes::write(dir, rows, DIM).unwrap();
}

/// `rows` rows written into a new folder, and their cells and codes
/// opened (the folder is removed when the first is dropped).
fn opened(rows: usize) -> (tempfile::TempDir, Cells, SignCodes) {
    let dir = tempfile::tempdir().unwrap();
    written(dir.path(), rows);
    let cells = Cells::open(dir.path(), rows, DIM).unwrap().unwrap();
    let codes = SignCodes::open(dir.path(), rows, DIM).unwrap().unwrap();
    (dir, cells, codes)
}

#[test]
fn every_row_has_one_place_in_the_cells_and_its_code_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let rows = 5_000;
    written(dir.path(), rows);
    let cells = Cells::open(dir.path(), rows, DIM).unwrap().unwrap();
    // Cells of about CELL_ROWS rows: 78 of them, in a few coarse cells.
    assert!((40..=120).contains(&cells.len()), "{}", cells.len());
    let mut seen = vec![false; rows];
    for position in 0..rows {
        let row = cells.row_at(position);
        assert!(!std::mem::replace(&mut seen[row as usize], true));
        assert_eq!(cells.position(row).unwrap(), position);
    }
    // The codes file holds each row's code where its cell put it
    // (`check` reads it there).
    let codes = SignCodes::open(dir.path(), rows, DIM).unwrap().unwrap();
    let vectors = crate::lists::dense::StoredVectors::open(dir.path(), rows, DIM).unwrap();
    for row in (0..rows as ChunkOrd).step_by(7) {
        codes
            .check(row, vectors.quantized_row(row).unwrap().0)
            .unwrap();
    }
}

#[test]
fn a_probe_reads_the_nearest_cells_and_finds_the_query_s_cluster_there() {
    let rows = 8_000;
    let (_dir, cells, codes) = opened(rows);
    for cluster in 0..CLUSTERS {
        let (query, _) = quantize(&centre(cluster));
        // An eighth of the rows: about the cluster's own.
        let probe = cells.probe(&query, rows / CLUSTERS, &AllowSet::All, rows);
        assert!(
            probe.rows >= rows / CLUSTERS && probe.rows < rows / 2,
            "{probe:?}"
        );
        assert!(probe.blocks.windows(2).all(|b| b[0].end < b[1].start));
        let depth = 200;
        let set = CodeSet {
            codes: &codes,
            allow: &AllowSet::All,
            blocks: probe.blocks,
        };
        let best = best_across(&[set], &query, depth, probe.rows);
        assert_eq!(best.len(), depth);
        assert!(
            best.iter()
                .all(|(_, _, row)| *row as usize % CLUSTERS == cluster)
        );
    }
    // The whole share probes every cell.
    let all = cells.probe(&quantize(&centre(0)).0, rows, &AllowSet::All, rows);
    assert_eq!(
        (
            all.blocks.len(),
            all.blocks[0].clone(),
            all.cells,
            all.of,
            all.rows
        ),
        (1, 0..rows / 32, cells.len(), cells.len(), rows)
    );
}

#[test]
fn a_filtered_probe_counts_only_the_allowed_rows_and_reaches_them_far_from_the_query() {
    let rows = 8_000;
    let (_dir, cells, codes) = opened(rows);
    let (query, _) = quantize(&centre(0));
    // Only cluster 3's rows, none of them near the query.
    let flags: Vec<bool> = (0..rows).map(|row| row % CLUSTERS == 3).collect();
    let allow = AllowSet::Only(flags.into());
    let allowed = rows / CLUSTERS;
    let (wanted, depth) = (allowed / 2, 200);
    let probe = cells.probe(&query, wanted, &allow, allowed);
    assert!(probe.allowed >= wanted, "{probe:?}");
    // Cluster 0's cells came first and held none of it: more cells were
    // probed than the share of all rows would take.
    assert!(probe.rows > rows / CLUSTERS + wanted, "{probe:?}");
    let set = CodeSet {
        codes: &codes,
        allow: &allow,
        blocks: probe.blocks.clone(),
    };
    let best = best_across(&[set], &query, depth, probe.allowed);
    assert_eq!(best.len(), depth);
    assert!(best.iter().all(|(_, _, row)| *row as usize % CLUSTERS == 3));
    // Fifty of them are expected within 400 rows were they spread
    // evenly; the query's own cluster holds 1,000 rows and none of them,
    // so the walk stops there, short.
    let short = cells.probe(&query, 50, &allow, allowed);
    assert!(short.allowed < 50, "{short:?}");
    assert!(short.rows <= 2 * 50 * CLUSTERS + 2 * 64, "{short:?}");
    // Without a filter the same count is reached in the query's cluster.
    let unfiltered = cells.probe(&query, wanted, &AllowSet::All, rows);
    assert!(unfiltered.allowed >= wanted && unfiltered.allowed <= unfiltered.rows);
    assert!(unfiltered.rows < probe.rows, "{unfiltered:?} {probe:?}");
}

#[test]
fn a_damaged_cells_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    written(dir.path(), 1_000);
    let path = dir.path().join(CELLS_FILE);
    let bytes = std::fs::read(&path).unwrap();
    let named = |bytes: &[u8], rows: usize| {
        std::fs::write(&path, bytes).unwrap();
        let err = Cells::open(dir.path(), rows, DIM).err().expect("damaged");
        assert!(format!("{err:#}").contains(CELLS_FILE), "{err:#}");
    };
    named(&bytes[..bytes.len() - 1], 1_000);
    named(&bytes, 999);
    let mut wrong = bytes.clone();
    wrong[0] ^= 1;
    named(&wrong, 1_000);
    // A cell that starts past the next one's start.
    let mut wrong = bytes.clone();
    let cells = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let second = HEADER + 4 * cells + 4;
    wrong[second..second + 4].copy_from_slice(&2_000u32.to_le_bytes());
    named(&wrong, 1_000);
    std::fs::remove_file(&path).unwrap();
    assert!(Cells::open(dir.path(), 1_000, DIM).unwrap().is_none());
}
