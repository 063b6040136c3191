//! The string hash datacrumbs writes: XXH3-64 (seed 0) of the UTF-8 bytes.
//!
//! It is stable across versions and platforms, and it fits in a u64, which `dftracer_validate`
//! requires (it rejects the 128-bit hashes of the Python-era DataCrumbs).

use crate::Hash;

pub fn hash_str(s: &str) -> Hash {
    Hash(u128::from(xxhash_rust::xxh3::xxh3_64(s.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_xxh3_values() {
        // Reference values of XXH3_64bits with seed 0 (xxHash's own test vectors).
        assert_eq!(hash_str("").0, 0x2D06800538D394C2);
        assert_eq!(hash_str("a").0, 0xE6C632B61E964E1F);
    }
}
