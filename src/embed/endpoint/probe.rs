//! Telling which model an endpoint runs by its answers: a few fixed probe
//! texts, and the signs of their vectors' components.
//!
//! A remote model has no files to hash, and a server may swap the model
//! behind a name. Its vectors for fixed texts are its fingerprint — but a
//! server's floats move in the last bits with batch and hardware, so the
//! fingerprint is the *signs* of the components, compared with a
//! tolerance: the same model agrees on nearly every sign (a component
//! near zero may flip), another model on about half.

use anyhow::{Result, bail, ensure};

/// The texts every endpoint model is probed with: prose, identifiers and
/// another language, so that two models rarely agree by chance.
pub(super) const PROBES: [&str; 3] = [
    "memidx probe: how to restart the payments service after an outage",
    "INC-2023-Q4-011 ERR_CONNECTION_RESET retry_backoff_ms kube-proxy",
    "Die Katze schläft auf dem warmen Fensterbrett.",
];

/// The share of signs two answers must agree on to come from one model.
const SAME_MODEL: f64 = 0.9;

/// The signs of the probes' vectors, one bit per component (set when it
/// is negative), probe after probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Signs {
    bits: Vec<bool>,
}

impl Signs {
    /// The signs of `vectors`, the answers to [`PROBES`].
    pub(super) fn of(vectors: &[Vec<f32>]) -> Self {
        Self {
            bits: vectors.iter().flatten().map(|x| *x < 0.0).collect(),
        }
    }

    /// As hexadecimal text, four bits a digit, for the manifest.
    pub(super) fn to_hex(&self) -> String {
        self.bits
            .chunks(4)
            .map(|nibble| {
                let value = nibble
                    .iter()
                    .enumerate()
                    .fold(0u32, |acc, (i, &bit)| acc | (u32::from(bit) << (3 - i)));
                char::from_digit(value, 16).expect("a nibble is a hex digit")
            })
            .collect()
    }

    /// Reads [`Signs::to_hex`]'s text back, for vectors of `dim` components.
    pub(super) fn from_hex(hex: &str, dim: usize) -> Result<Self> {
        let count = dim * PROBES.len();
        ensure!(
            hex.len() == count.div_ceil(4),
            "the recorded probe signs are {} digits, not the {} of {} probes of {dim} dimensions",
            hex.len(),
            count.div_ceil(4),
            PROBES.len()
        );
        let mut bits = Vec::with_capacity(hex.len() * 4);
        for digit in hex.chars() {
            let Some(value) = digit.to_digit(16) else {
                bail!("the recorded probe signs hold '{digit}', not a hexadecimal digit");
            };
            bits.extend((0..4).map(|i| value & (1 << (3 - i)) != 0));
        }
        bits.truncate(count);
        Ok(Self { bits })
    }

    /// The share of signs `self` and `other` agree on (0 when their
    /// lengths differ: another dimension is another model).
    pub(super) fn agreement(&self, other: &Self) -> f64 {
        if self.bits.len() != other.bits.len() || self.bits.is_empty() {
            return 0.0;
        }
        let same = self
            .bits
            .iter()
            .zip(&other.bits)
            .filter(|(a, b)| a == b)
            .count();
        same as f64 / self.bits.len() as f64
    }

    /// Whether `self` and `other` come from the same model.
    pub(super) fn same_model(&self, other: &Self) -> bool {
        self.agreement(other) >= SAME_MODEL
    }
}

/// A fingerprint for the endpoint model `name` of `dim` dimensions:
/// `endpoint:` and an xxh3-64 of both, so that two indexes of one model
/// compare equal (exact signs would not: one near zero may flip); with
/// `swapped`, the signs of a model that now answers under the name of
/// another, so that its vectors are never taken for the other's.
pub(super) fn fingerprint(name: &str, dim: usize, swapped: Option<&Signs>) -> String {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(&(dim as u64).to_le_bytes());
    hasher.update(name.as_bytes());
    if let Some(signs) = swapped {
        hasher.update(&[0]);
        hasher.update(signs.to_hex().as_bytes());
    }
    format!("endpoint:{:016x}", hasher.digest())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vectors(seed: u64, dim: usize) -> Vec<Vec<f32>> {
        let mut state = seed;
        (0..PROBES.len())
            .map(|_| {
                (0..dim)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn signs_read_back_from_their_text() {
        for dim in [1, 3, 384, 1536] {
            let signs = Signs::of(&vectors(7, dim));
            assert_eq!(Signs::from_hex(&signs.to_hex(), dim).unwrap(), signs);
        }
        assert!(Signs::from_hex("0f", 384).is_err());
        assert!(Signs::from_hex(&"g".repeat(288), 384).is_err());
    }

    #[test]
    fn the_same_model_with_noise_agrees_and_another_does_not() {
        let answer = vectors(1, 384);
        let noisy: Vec<Vec<f32>> = answer
            .iter()
            .map(|v| {
                v.iter()
                    .map(|x| if x.abs() < 0.01 { -x } else { x * 1.0001 })
                    .collect()
            })
            .collect();
        let (a, b) = (Signs::of(&answer), Signs::of(&noisy));
        assert!(a.agreement(&b) < 1.0, "some signs near zero flipped");
        assert!(a.same_model(&b));

        let other = Signs::of(&vectors(2, 384));
        assert!(!a.same_model(&other), "agreement {}", a.agreement(&other));
        assert!(!a.same_model(&Signs::of(&vectors(1, 256))));
    }

    #[test]
    fn a_fingerprint_names_the_model_and_a_swapped_one_its_signs() {
        let (a, b) = (Signs::of(&vectors(1, 384)), Signs::of(&vectors(2, 384)));
        assert_eq!(fingerprint("m", 384, None), fingerprint("m", 384, None));
        assert_ne!(fingerprint("m", 384, None), fingerprint("m", 256, None));
        assert_ne!(fingerprint("m", 384, None), fingerprint("n", 384, None));
        assert_ne!(fingerprint("m", 384, Some(&a)), fingerprint("m", 384, None));
        assert_ne!(
            fingerprint("m", 384, Some(&a)),
            fingerprint("m", 384, Some(&b))
        );
    }
}
