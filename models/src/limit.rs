//! The allowed values of each numeric option, and why they end where they do. One [`Limit`] serves
//! both the deserializer (so that a pipeline file's bad value is refused at its line) and
//! `validate` (for options built in code: the CLI, Python).
use std::fmt::Display;
use std::ops::Bound::{self, Excluded, Included, Unbounded};

use crate::error::ModelError;

pub struct Limit<T: 'static> {
    /// The option's name as the pipeline file spells it (`gbm.n_estimators`).
    pub name: &'static str,
    pub low: Bound<T>,
    pub high: Bound<T>,
    /// Why the range ends there; empty where the range says it (a share in (0, 1]).
    pub why: &'static str,
}

impl<T: PartialOrd + Display + Copy> Limit<T> {
    /// `v` itself, or why it is refused: "1000000000 is not in [1, 100000]: …".
    pub fn check(&self, v: T) -> Result<T, String> {
        let above = match self.low {
            Included(m) => v >= m,
            Excluded(m) => v > m,
            Unbounded => true,
        };
        let below = match self.high {
            Included(m) => v <= m,
            Excluded(m) => v < m,
            Unbounded => true,
        };
        if above && below {
            return Ok(v);
        }
        let low = match self.low {
            Included(m) => format!("[{m}"),
            Excluded(m) => format!("({m}"),
            Unbounded => "(-inf".to_string(),
        };
        let high = match self.high {
            Included(m) => format!("{m}]"),
            Excluded(m) => format!("{m})"),
            Unbounded => "inf)".to_string(),
        };
        let why = if self.why.is_empty() {
            String::new()
        } else {
            format!(": {}", self.why)
        };
        Err(format!("{v} is not in {low}, {high}{why}"))
    }

    pub fn validate(&self, v: T) -> Result<(), ModelError> {
        self.check(v)
            .map(drop)
            .map_err(|reason| ModelError::Option {
                option: self.name.to_string(),
                reason,
            })
    }
}

/// For an option type's fields with a [`Limit`]: a deserializer for each, named after its field, so
/// that `#[serde(deserialize_with = "field")]` refuses a value outside it where the file gives it;
/// and `check_limits`, which refuses one in a value built in code.
macro_rules! limited_fields {
    ($options:ty { $($field:ident: $t:ty = $limit:expr;)* }) => {
        $(
            fn $field<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<$t, D::Error> {
                let v = <$t as serde::Deserialize>::deserialize(d)?;
                $limit.check(v).map_err(serde::de::Error::custom)
            }
        )*

        impl $options {
            fn check_limits(&self) -> $crate::error::Result<()> {
                $($limit.validate(self.$field)?;)*
                Ok(())
            }
        }
    };
}
pub(crate) use limited_fields;
