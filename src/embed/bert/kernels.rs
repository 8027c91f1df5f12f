//! Matrix products and elementwise operations on `f32` slices.

/// How products run: chosen once per process from the CPU's features.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Backend {
    /// This module's AVX-512 kernel.
    #[cfg(target_arch = "x86_64")]
    Avx512,
    /// The `gemm` crate (AVX2/FMA or NEON when present).
    Portable,
}

impl Backend {
    /// AVX-512 when the CPU has it, else portable. Always portable in
    /// builds with debug assertions: the dev profile optimizes only
    /// dependencies, and unoptimized intrinsics are some 50 times
    /// slower than the (optimized) `gemm` crate.
    pub(super) fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if !cfg!(debug_assertions) && has_avx512() {
                return Self::Avx512;
            }
        }
        Self::Portable
    }

    /// Whether a product by a weight held as the checkpoint stores it
    /// ([`Rhs::transposed`]) gives the same bits as by its packed panels:
    /// only then may a one-shot process skip packing (it must rank as a
    /// server does). The `gemm` crate's products differ in the last bits
    /// between layouts.
    pub(super) fn multiplies_weights_as_stored(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Self::Avx512 => true,
            Self::Portable => false,
        }
    }

    /// The panel width weights with `n` outputs are packed in.
    pub(super) fn panel_width(self, n: usize) -> usize {
        match self {
            #[cfg(target_arch = "x86_64")]
            Self::Avx512 => avx512::NR,
            Self::Portable => n,
        }
    }
}

/// Whether the CPU has the AVX-512 subset the kernels are compiled for.
#[cfg(target_arch = "x86_64")]
fn has_avx512() -> bool {
    std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("avx512dq")
        && std::is_x86_feature_detected!("avx512vl")
        && std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("fma")
}

/// The right operand `B` (`k × n`) of a product.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rhs<'a> {
    data: &'a [f32],
    layout: Layout,
}

/// Where element (p, j) of an [`Rhs`] lies in its data.
#[derive(Debug, Clone, Copy)]
enum Layout {
    /// Vertical panels of `width` columns: element (p, j) is at
    /// `(j / width) · panel_stride + p · ldb + j % width`. A row-major
    /// matrix is one panel.
    Panels {
        ldb: usize,
        width: usize,
        panel_stride: usize,
    },
    /// `Bᵀ` row-major (a layer's weight `W` as a checkpoint stores it,
    /// `n` rows of `k`): element (p, j) is at `j · ldw + p`.
    Rows { ldw: usize },
}

impl<'a> Rhs<'a> {
    /// A row-major matrix whose rows start `ldb` floats apart.
    pub(super) fn dense(data: &'a [f32], ldb: usize) -> Self {
        Self {
            data,
            layout: Layout::Panels {
                ldb,
                width: usize::MAX,
                panel_stride: 0,
            },
        }
    }

    /// Panels of `k` rows of `width` floats, one after the other (as
    /// [`pack_transposed`] writes them).
    pub(super) fn panels(data: &'a [f32], k: usize, width: usize) -> Self {
        Self {
            data,
            layout: Layout::Panels {
                ldb: width,
                width,
                panel_stride: k * width,
            },
        }
    }

    /// `Wᵀ` of a weight `W` stored as it is, rows of `k` floats: what a
    /// process that embeds a query and exits multiplies by, straight from
    /// the mapped checkpoint, instead of packing the weights first.
    pub(super) fn transposed(data: &'a [f32], k: usize) -> Self {
        Self {
            data,
            layout: Layout::Rows { ldw: k },
        }
    }

    /// Index of element (p, j) in `data`.
    fn offset(&self, p: usize, j: usize) -> usize {
        match self.layout {
            Layout::Panels {
                ldb,
                width,
                panel_stride,
            } => (j / width) * panel_stride + p * ldb + j % width,
            Layout::Rows { ldw } => j * ldw + p,
        }
    }
}

/// `Wᵀ` of the `n × k` matrix `W` whose row `j` `row(j, dst)` writes
/// into `dst`, as panels of `width` columns (the last one padded with
/// zeros) for [`Rhs::panels`].
pub(super) fn pack_transposed(
    n: usize,
    k: usize,
    width: usize,
    mut row: impl FnMut(usize, &mut [f32]),
) -> Vec<f32> {
    let mut out = vec![0f32; n.div_ceil(width) * k * width];
    let mut values = vec![0f32; k];
    for j in 0..n {
        row(j, &mut values);
        let base = (j / width) * k * width + j % width;
        for (p, &x) in values.iter().enumerate() {
            out[base + p * width] = x;
        }
    }
    out
}

/// `C = A · B`, or `C += A · B` when `accumulate`, for `dims` =
/// (m, n, k): `A` is `m × k` with rows `lda` apart, `C` is `m × n` with
/// rows `ldc` apart. `parallel` spreads the rows over the rayon pool.
///
/// # Panics
/// When a slice is too short for its dimensions.
pub(super) fn matmul(
    backend: Backend,
    (m, n, k): (usize, usize, usize),
    (a, lda): (&[f32], usize),
    b: Rhs,
    (c, ldc): (&mut [f32], usize),
    accumulate: bool,
    parallel: bool,
) {
    if m == 0 || n == 0 || k == 0 {
        assert!(k > 0 || m == 0 || n == 0, "matmul with k = 0");
        return;
    }
    assert!(lda >= k && a.len() >= (m - 1) * lda + k, "A too short");
    assert!(ldc >= n && c.len() >= (m - 1) * ldc + n, "C too short");
    assert!(b.offset(k - 1, n - 1) < b.data.len(), "B too short");
    let c = &mut c[..(m - 1) * ldc + n];
    match backend {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx512` is only chosen when the CPU has AVX-512
        // (`Backend::detect`), and the operands were checked above.
        Backend::Avx512 => unsafe {
            avx512::matmul((m, n, k), (a, lda), b, (c, ldc), accumulate, parallel)
        },
        Backend::Portable => {
            let parallelism = if parallel {
                gemm::Parallelism::Rayon(rayon::current_num_threads())
            } else {
                gemm::Parallelism::None
            };
            // B's panels' width, and the strides of its columns and rows
            // (stored rows are one panel, column-major).
            let (width, cs, rs) = match b.layout {
                Layout::Panels { ldb, width, .. } => (width.min(n), 1, ldb),
                Layout::Rows { ldw } => (n, ldw, 1),
            };
            for j0 in (0..n).step_by(width) {
                let cols = width.min(n - j0);
                // SAFETY: rows 0..m, columns j0..j0 + cols of C, A and
                // this panel of B lie inside the slices checked above.
                unsafe {
                    gemm::gemm(
                        m,
                        cols,
                        k,
                        c.as_mut_ptr().add(j0),
                        1,
                        ldc as isize,
                        accumulate,
                        a.as_ptr(),
                        1,
                        lda as isize,
                        b.data.as_ptr().add(b.offset(0, j0)),
                        cs as isize,
                        rs as isize,
                        1.0,
                        1.0,
                        false,
                        false,
                        false,
                        parallelism,
                    );
                }
            }
        }
    }
}

/// The AVX-512 product: tiles of 14 rows × 32 columns (28 of the 32
/// vector registers accumulate; per step of k, two loads of `B` and 14
/// broadcasts of `A` feed 28 FMAs). Of 8, 12 and 14 rows, 14 used the
/// least CPU time on all-MiniLM-L6-v2 (8: +5%).
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use rayon::prelude::*;

    use super::{Layout, Rhs};

    /// Rows of a tile.
    const MR: usize = 14;
    /// Columns of a tile: two 16-float registers; also the panel width
    /// weights are packed in.
    pub(in super::super) const NR: usize = 32;
    /// Depth of one pass over a panel: its `KC × NR` floats (48 KiB)
    /// stay in the L1/L2 cache while every tile of a row block uses them.
    const KC: usize = 384;
    /// Rows per parallel task: whole tiles.
    const ROW_BLOCK: usize = 5 * MR;

    /// [`super::matmul`] on AVX-512.
    ///
    /// # Safety
    /// The CPU must have AVX-512F, and the operands must hold their
    /// dimensions (as `super::matmul` checks).
    pub(super) unsafe fn matmul(
        (m, n, k): (usize, usize, usize),
        (a, lda): (&[f32], usize),
        b: Rhs,
        (c, ldc): (&mut [f32], usize),
        accumulate: bool,
        parallel: bool,
    ) {
        let (ldb, width) = match b.layout {
            Layout::Panels { ldb, width, .. } => (ldb, width),
            Layout::Rows { ldw } => {
                // SAFETY: guaranteed by the caller.
                return unsafe {
                    lanes::matmul(
                        (m, n, k),
                        (a, lda),
                        (b.data, ldw),
                        (c, ldc),
                        accumulate,
                        parallel,
                    )
                };
            }
        };
        assert!(
            width >= n || width.is_multiple_of(NR),
            "tiles must not cross panels"
        );
        if parallel && m > ROW_BLOCK {
            c.par_chunks_mut(ROW_BLOCK * ldc)
                .enumerate()
                .for_each(|(i, c)| {
                    let r0 = i * ROW_BLOCK;
                    let rows = ROW_BLOCK.min(m - r0);
                    // SAFETY: as for the whole product, on rows r0..r0 + rows.
                    unsafe {
                        block(
                            (rows, n, k),
                            &a[r0 * lda..],
                            lda,
                            (b, ldb),
                            c,
                            ldc,
                            accumulate,
                        )
                    }
                });
        } else {
            // SAFETY: guaranteed by the caller.
            unsafe { block((m, n, k), a, lda, (b, ldb), c, ldc, accumulate) }
        }
    }

    /// Runs `tile` for its row count (a const generic: the accumulators
    /// must be a fixed-size array to live in registers).
    macro_rules! tile_rows {
        ($tile:expr, $rows:expr, $($r:literal)*) => {
            match $rows {
                $($r => $tile.run::<$r>(),)*
                rows => unreachable!("{rows} rows in a tile"),
            }
        };
    }

    /// The product for one block of rows, on the calling thread.
    #[target_feature(enable = "avx512f")]
    unsafe fn block(
        (m, n, k): (usize, usize, usize),
        a: &[f32],
        lda: usize,
        (b, ldb): (Rhs, usize),
        c: &mut [f32],
        ldc: usize,
        accumulate: bool,
    ) {
        let (a, c) = (a.as_ptr(), c.as_mut_ptr());
        for k0 in (0..k).step_by(KC) {
            let kc = KC.min(k - k0);
            let accumulate = accumulate || k0 > 0;
            for j0 in (0..n).step_by(NR) {
                let cols = NR.min(n - j0);
                // SAFETY (all pointer offsets below): inside the
                // operands, whose sizes the caller guarantees.
                let panel = unsafe { b.data.as_ptr().add(b.offset(k0, j0)) };
                for i0 in (0..m).step_by(MR) {
                    let tile = Tile {
                        kc,
                        a: unsafe { a.add(i0 * lda + k0) },
                        lda,
                        b: panel,
                        ldb,
                        c: unsafe { c.add(i0 * ldc + j0) },
                        ldc,
                        cols,
                        accumulate,
                    };
                    // SAFETY: the tile lies inside the operands.
                    unsafe { tile_rows!(tile, MR.min(m - i0), 14 13 12 11 10 9 8 7 6 5 4 3 2 1) }
                }
            }
        }
    }

    /// One tile: `C[..R, ..cols] (+)= A[..R, ..kc] · B[..kc, ..cols]`,
    /// rows `lda`, `ldb` and `ldc` floats apart, `cols` ≤ [`NR`].
    struct Tile {
        kc: usize,
        a: *const f32,
        lda: usize,
        b: *const f32,
        ldb: usize,
        c: *mut f32,
        ldc: usize,
        cols: usize,
        accumulate: bool,
    }

    impl Tile {
        /// Computes the tile for `R` ≤ [`MR`] rows.
        ///
        /// # Safety
        /// The CPU must have AVX-512F, and the tile's `R` rows of `A`
        /// and `C` and `kc` rows of `B` must be readable (and `C`
        /// writable) for `cols` columns.
        #[target_feature(enable = "avx512f")]
        #[inline]
        unsafe fn run<const R: usize>(&self) {
            let lo = ((1u32 << self.cols.min(16)) - 1) as __mmask16;
            let hi = ((1u32 << self.cols.saturating_sub(16)) - 1) as __mmask16;
            let mut c0 = [_mm512_setzero_ps(); R];
            let mut c1 = [_mm512_setzero_ps(); R];
            // SAFETY (pointer reads and writes): the caller's contract;
            // masked loads and stores touch only the first `cols`
            // columns.
            unsafe {
                if self.accumulate {
                    for r in 0..R {
                        let row = self.c.add(r * self.ldc);
                        c0[r] = _mm512_maskz_loadu_ps(lo, row);
                        c1[r] = _mm512_maskz_loadu_ps(hi, row.add(16));
                    }
                }
                for p in 0..self.kc {
                    let b = self.b.add(p * self.ldb);
                    let b0 = _mm512_maskz_loadu_ps(lo, b);
                    let b1 = _mm512_maskz_loadu_ps(hi, b.add(16));
                    for r in 0..R {
                        let x = _mm512_set1_ps(*self.a.add(r * self.lda + p));
                        c0[r] = _mm512_fmadd_ps(x, b0, c0[r]);
                        c1[r] = _mm512_fmadd_ps(x, b1, c1[r]);
                    }
                }
                for r in 0..R {
                    let row = self.c.add(r * self.ldc);
                    _mm512_mask_storeu_ps(row, lo, c0[r]);
                    _mm512_mask_storeu_ps(row.add(16), hi, c1[r]);
                }
            }
        }
    }

    /// The product by a weight held as its checkpoint stores it
    /// ([`Layout::Rows`]), for the few rows of a query: up to 16 rows of
    /// `A` ride in the lanes of a register, and each weight is read once
    /// per 16 rows, broadcast. Every element of `C` is the same chain of
    /// fused multiply-adds, in the same order, as in the tiles over packed
    /// panels, so a product gives the same bits whichever way the weights
    /// are held (a one-shot search and a server rank alike).
    mod lanes {
        use std::arch::x86_64::*;

        use rayon::prelude::*;

        /// Rows of `A` per pass: one per lane.
        const LANES: usize = 16;
        /// Columns of `C` accumulated at once.
        const COLS: usize = 8;
        /// Columns per parallel task.
        const TASK_COLS: usize = 16 * COLS;

        /// `C` shared by tasks that write disjoint columns of it.
        #[derive(Clone, Copy)]
        struct Shared(*mut f32);
        // SAFETY: each task writes only its own columns (see `matmul`).
        unsafe impl Send for Shared {}
        // SAFETY: as above.
        unsafe impl Sync for Shared {}

        impl Shared {
            /// The element `offset` floats in (a method, so that closures
            /// capture the whole `Shared`, not its pointer).
            ///
            /// # Safety
            /// As for `pointer::add`.
            unsafe fn at(self, offset: usize) -> *mut f32 {
                // SAFETY: the caller's contract.
                unsafe { self.0.add(offset) }
            }
        }

        /// `C (+)= A · Wᵀ` for `dims` = (m, n, k), `W` being `n` rows of
        /// `k` floats, `ldw` apart.
        ///
        /// # Safety
        /// The CPU must have AVX-512F, and the operands must hold their
        /// dimensions (as `super::super::matmul` checks).
        pub(in super::super) unsafe fn matmul(
            (m, n, k): (usize, usize, usize),
            (a, lda): (&[f32], usize),
            (w, ldw): (&[f32], usize),
            (c, ldc): (&mut [f32], usize),
            accumulate: bool,
            parallel: bool,
        ) {
            let c = Shared(c.as_mut_ptr());
            let mut a_t = vec![0f32; k * LANES];
            for i0 in (0..m).step_by(LANES) {
                let rows = LANES.min(m - i0);
                for r in 0..rows {
                    for (p, &x) in a[(i0 + r) * lda..][..k].iter().enumerate() {
                        a_t[p * LANES + r] = x;
                    }
                }
                let task = |j0: usize| {
                    let columns = Columns {
                        k,
                        rows,
                        a_t: &a_t,
                        w,
                        ldw,
                        // SAFETY: rows i0.. of C (as checked by the caller).
                        c: unsafe { c.at(i0 * ldc) },
                        ldc,
                        accumulate,
                    };
                    // SAFETY: the caller's contract; columns j0.. only.
                    unsafe { columns.run(j0, TASK_COLS.min(n - j0)) }
                };
                if parallel && n > TASK_COLS {
                    (0..n).into_par_iter().step_by(TASK_COLS).for_each(task);
                } else {
                    (0..n).step_by(TASK_COLS).for_each(task);
                }
            }
        }

        /// One pass over up to 16 rows of `A`, transposed into `a_t`
        /// (`k` rows of 16 lanes).
        struct Columns<'a> {
            k: usize,
            rows: usize,
            a_t: &'a [f32],
            w: &'a [f32],
            ldw: usize,
            c: *mut f32,
            ldc: usize,
            accumulate: bool,
        }

        impl Columns<'_> {
            /// Columns `j0..j0 + cols` of the pass's rows of `C`.
            ///
            /// # Safety
            /// The CPU must have AVX-512F; those rows and columns of `C`
            /// must be writable and no other thread may touch them.
            #[target_feature(enable = "avx512f")]
            unsafe fn run(&self, j0: usize, cols: usize) {
                let whole = cols - cols % COLS;
                for j in (j0..j0 + whole).step_by(COLS) {
                    // SAFETY: the caller's contract.
                    unsafe { self.group::<COLS>(j) }
                }
                for j in j0 + whole..j0 + cols {
                    // SAFETY: the caller's contract.
                    unsafe { self.group::<1>(j) }
                }
            }

            /// Columns `j..j + Q` of the pass's rows of `C`.
            ///
            /// # Safety
            /// As for [`Columns::run`].
            #[target_feature(enable = "avx512f")]
            #[inline]
            unsafe fn group<const Q: usize>(&self, j: usize) {
                let mut acc = [_mm512_setzero_ps(); Q];
                let mut lanes = [0f32; LANES];
                // SAFETY (reads and writes of C): the caller's contract.
                if self.accumulate {
                    for (q, acc) in acc.iter_mut().enumerate() {
                        for (r, lane) in lanes[..self.rows].iter_mut().enumerate() {
                            *lane = unsafe { *self.c.add(r * self.ldc + j + q) };
                        }
                        *acc = unsafe { _mm512_loadu_ps(lanes.as_ptr()) };
                    }
                }
                let weights: [&[f32]; Q] =
                    std::array::from_fn(|q| &self.w[(j + q) * self.ldw..][..self.k]);
                for (p, a) in self.a_t.chunks_exact(LANES).take(self.k).enumerate() {
                    // SAFETY: `a` holds 16 floats.
                    let x = unsafe { _mm512_loadu_ps(a.as_ptr()) };
                    for q in 0..Q {
                        acc[q] = _mm512_fmadd_ps(x, _mm512_set1_ps(weights[q][p]), acc[q]);
                    }
                }
                for (q, acc) in acc.iter().enumerate() {
                    // SAFETY: `lanes` holds 16 floats.
                    unsafe { _mm512_storeu_ps(lanes.as_mut_ptr(), *acc) };
                    for (r, &lane) in lanes[..self.rows].iter().enumerate() {
                        unsafe { *self.c.add(r * self.ldc + j + q) = lane };
                    }
                }
            }
        }
    }
}

/// Defines a function whose body is compiled twice, for AVX-512 (where
/// LLVM vectorizes its loops 16 floats wide) and for the baseline
/// target, and picks one per call from the CPU's features.
macro_rules! multiversion {
    ($(#[$attr:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$attr])*
        pub(super) fn $name($($arg: $ty),*) {
            #[inline(always)]
            fn generic($($arg: $ty),*) $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
                fn avx512($($arg: $ty),*) {
                    generic($($arg),*)
                }
                if has_avx512() {
                    // SAFETY: the CPU has the features `avx512` is compiled for.
                    return unsafe { avx512($($arg),*) };
                }
            }
            generic($($arg),*)
        }
    };
}

/// Lanes of the partial sums in reductions (one AVX-512 register).
const LANES: usize = 16;

/// `Σ f(x)` over `xs`, in `LANES` partial sums so that it vectorizes.
#[inline(always)]
fn sum_by(xs: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let (chunks, tail) = xs.as_chunks::<LANES>();
    let mut acc = [0f32; LANES];
    for chunk in chunks {
        for (a, &x) in acc.iter_mut().zip(chunk) {
            *a += f(x);
        }
    }
    acc.iter().sum::<f32>() + tail.iter().map(|&x| f(x)).sum::<f32>()
}

/// The largest of `xs` (−∞ when empty), in `LANES` partial maxima.
#[inline(always)]
fn max_of(xs: &[f32]) -> f32 {
    let (chunks, tail) = xs.as_chunks::<LANES>();
    let mut acc = [f32::NEG_INFINITY; LANES];
    for chunk in chunks {
        for (a, &x) in acc.iter_mut().zip(chunk) {
            *a = a.max(x);
        }
    }
    acc.iter()
        .chain(tail)
        .copied()
        .fold(f32::NEG_INFINITY, f32::max)
}

multiversion! {
    /// `dst = a + b`, elementwise.
    fn add(dst: &mut [f32], a: &[f32], b: &[f32]) {
        for ((d, &x), &y) in dst.iter_mut().zip(a).zip(b) {
            *d = x + y;
        }
    }
}

multiversion! {
    /// `dst += a`, elementwise.
    fn add_assign(dst: &mut [f32], a: &[f32]) {
        for (d, &x) in dst.iter_mut().zip(a) {
            *d += x;
        }
    }
}

multiversion! {
    /// Layer normalisation of one row: zero mean, unit variance (plus
    /// `eps`), then scaled by `weight` and shifted by `bias`.
    fn layer_norm(row: &mut [f32], weight: &[f32], bias: &[f32], eps: f32) {
        let n = row.len() as f32;
        let mean = sum_by(row, |x| x) / n;
        let var = sum_by(row, |x| (x - mean) * (x - mean)) / n;
        let inv = 1.0 / (var + eps).sqrt();
        for ((x, &w), &b) in row.iter_mut().zip(weight).zip(bias) {
            *x = (*x - mean) * inv * w + b;
        }
    }
}

multiversion! {
    /// Softmax of `scale · row`, in place.
    fn softmax(row: &mut [f32], scale: f32) {
        let max = max_of(row);
        for x in row.iter_mut() {
            *x = exp((*x - max) * scale);
        }
        let inv = 1.0 / sum_by(row, |x| x);
        for x in row.iter_mut() {
            *x *= inv;
        }
    }
}

multiversion! {
    /// GELU with the exact erf form (`hidden_act` "gelu"), in place.
    fn gelu_erf(xs: &mut [f32]) {
        for x in xs.iter_mut() {
            *x = 0.5 * *x * (1.0 + erf(*x * std::f32::consts::FRAC_1_SQRT_2));
        }
    }
}

multiversion! {
    /// GELU with the tanh approximation (`hidden_act`
    /// "geluapproximate"), in place.
    fn gelu_tanh(xs: &mut [f32]) {
        const SQRT_2_OVER_PI: f32 = 0.797_884_6;
        for x in xs.iter_mut() {
            let y = SQRT_2_OVER_PI * (*x + 0.044_715 * *x * *x * *x);
            let tanh = 1.0 - 2.0 / (exp(2.0 * y) + 1.0);
            *x = 0.5 * *x * (1.0 + tanh);
        }
    }
}

/// erf (Eigen's rational approximation on [−4, 4], error below 1e-7
/// there; ±1 outside), branch-free so that loops over it vectorize.
#[inline(always)]
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
    p = x2 * p + -2.101_024e-6;
    p = x2 * p + -5.692_506_4e-5;
    p = x2 * p + -7.349_906_3e-4;
    p = x2 * p + -2.954_6e-3;
    p = x2 * p + -1.609_603_3e-2;
    p *= x;
    let mut q = x2 * -1.456_607_2e-5 + -2.133_740_6e-4;
    q = x2 * q + -1.682_827e-3;
    q = x2 * q + -7.373_329e-3;
    q = x2 * q + -1.426_474e-2;
    p / q
}

/// eˣ for x ≤ 88 (Cephes' `expf`: 2ⁿ · a polynomial, relative error
/// about 1e-7; inputs below −87 give about 1.6e-38), branch-free.
#[inline(always)]
fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    // n = round(x / ln 2) by the 1.5 · 2²³ trick (no SSE4.1 `round`).
    let z = x * std::f32::consts::LOG2_E + 12_582_912.0;
    let n = z - 12_582_912.0;
    let n_int = z.to_bits() as i32 - 0x4B40_0000;
    let r = n * -0.693_359_4 + x;
    let r = n * 2.121_944_4e-4 + r;
    let mut p = 1.987_569_1e-4f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 5e-1;
    let y = p * r * r + r + 1.0;
    y * f32::from_bits(((n_int + 127) as u32) << 23)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic values in [−1, 1).
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            })
            .collect()
    }

    /// Every backend this CPU runs.
    fn backends() -> Vec<Backend> {
        let mut backends = vec![Backend::Portable];
        #[cfg(target_arch = "x86_64")]
        if has_avx512() {
            backends.push(Backend::Avx512);
        }
        backends
    }

    #[test]
    fn matmul_matches_the_definition_on_every_backend_and_layout() {
        for backend in backends() {
            for (m, n, k) in [(1, 1, 1), (13, 70, 300), (150, 96, 40), (9, 33, 517)] {
                let (lda, ldc) = (k + 2, n + 5);
                let a = values(m * lda, 1);
                let w = values(n * k, 2);
                let start = values(m * ldc, 3);
                let packed = pack_transposed(n, k, backend.panel_width(n), |j, row| {
                    row.copy_from_slice(&w[j * k..][..k])
                });
                let w_t: Vec<f32> = (0..k)
                    .flat_map(|p| (0..n + 1).map(move |j| (p, j)))
                    .map(|(p, j)| if j < n { w[j * k + p] } else { 0.0 })
                    .collect();
                let layouts = [
                    Rhs::panels(&packed, k, backend.panel_width(n)),
                    Rhs::dense(&w_t, n + 1),
                    Rhs::transposed(&w, k),
                ];
                for (b, accumulate, parallel) in layouts
                    .into_iter()
                    .flat_map(|b| [(b, true, true), (b, false, false)])
                {
                    let mut c = start.clone();
                    matmul(
                        backend,
                        (m, n, k),
                        (&a, lda),
                        b,
                        (&mut c, ldc),
                        accumulate,
                        parallel,
                    );
                    for i in 0..m {
                        for j in 0..ldc {
                            let got = c[i * ldc + j];
                            if j >= n {
                                assert_eq!(got, start[i * ldc + j], "wrote outside C");
                                continue;
                            }
                            let dot: f64 = (0..k)
                                .map(|p| f64::from(a[i * lda + p]) * f64::from(w[j * k + p]))
                                .sum();
                            let want = dot
                                + if accumulate {
                                    f64::from(start[i * ldc + j])
                                } else {
                                    0.0
                                };
                            assert!(
                                (f64::from(got) - want).abs() < 1e-4 * (k as f64).sqrt(),
                                "{backend:?} {m}×{n}×{k} ({i}, {j}): {got} vs {want}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_weight_as_stored_gives_the_bits_of_its_packed_panels() {
        let mut backends = backends();
        backends.retain(|b| b.multiplies_weights_as_stored());
        if backends.is_empty() {
            eprintln!("skipped: no backend multiplies weights as stored on this CPU");
            return;
        }
        for backend in backends {
            for (m, n, k) in [
                (1, 384, 384),
                (7, 1152, 384),
                (16, 100, 1536),
                (40, 33, 517),
            ] {
                let a = values(m * k, 4);
                let w = values(n * k, 5);
                let bias = values(m * n, 6);
                let width = backend.panel_width(n);
                let packed =
                    pack_transposed(n, k, width, |j, row| row.copy_from_slice(&w[j * k..][..k]));
                let product = |b: Rhs, parallel| {
                    let mut c = bias.clone();
                    matmul(backend, (m, n, k), (&a, k), b, (&mut c, n), true, parallel);
                    c
                };
                let want = product(Rhs::panels(&packed, k, width), true);
                for parallel in [true, false] {
                    let got = product(Rhs::transposed(&w, k), parallel);
                    assert!(
                        got.iter()
                            .zip(&want)
                            .all(|(x, y)| x.to_bits() == y.to_bits()),
                        "{backend:?} {m}×{n}×{k}, parallel {parallel}"
                    );
                }
            }
        }
    }

    #[test]
    fn elementwise_operations_match_their_definitions() {
        for (x, want) in [
            (-3.0f32, -0.004_049_7),
            (-1.0, -0.158_655_3),
            (0.5, 0.345_731_4),
            (2.0, 1.954_5),
        ] {
            let mut v = [x];
            gelu_erf(&mut v);
            assert!((v[0] - want).abs() < 1e-5, "gelu({x}) = {}", v[0]);
            let mut v = [x];
            gelu_tanh(&mut v);
            assert!((v[0] - want).abs() < 1e-3, "gelu_tanh({x}) = {}", v[0]);
        }
        for x in [-80.0f32, -10.0, -1.0, 0.0, 0.3, 5.0, 80.0] {
            assert!((exp(x) / x.exp() - 1.0).abs() < 1e-6, "exp({x})");
        }
        let row = values(37, 4);
        let mut soft = row.clone();
        softmax(&mut soft, 0.5);
        let total: f64 = row.iter().map(|&x| (0.5 * f64::from(x)).exp()).sum();
        for (&s, &x) in soft.iter().zip(&row) {
            assert!((f64::from(s) - (0.5 * f64::from(x)).exp() / total).abs() < 1e-6);
        }
        let (weight, bias) = (values(37, 5), values(37, 6));
        let mut norm = row.clone();
        layer_norm(&mut norm, &weight, &bias, 1e-12);
        let mean = row.iter().map(|&x| f64::from(x)).sum::<f64>() / 37.0;
        let var = row
            .iter()
            .map(|&x| (f64::from(x) - mean).powi(2))
            .sum::<f64>()
            / 37.0;
        for (i, &y) in norm.iter().enumerate() {
            let want =
                (f64::from(row[i]) - mean) / var.sqrt() * f64::from(weight[i]) + f64::from(bias[i]);
            assert!((f64::from(y) - want).abs() < 1e-5, "layer_norm[{i}]");
        }
    }
}
