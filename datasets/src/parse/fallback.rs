//! The serde_json path: every line the scanner declines (escapes, nesting, repeated fields,
//! syntax errors), read into the same raw field texts; serde_json words every error.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::fields::{Fields, LineError, RawArgs, err};

#[derive(Deserialize)]
struct Str<'a>(#[serde(borrow)] Cow<'a, str>);

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cat: Option<&'a RawValue>,
    #[serde(borrow, default)]
    ph: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    ts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    dur: Option<&'a RawValue>,
    #[serde(borrow, default)]
    args: Option<RawArgs<'a>>,
}
impl<'a> From<RawEvent<'a>> for Fields<'a> {
    fn from(r: RawEvent<'a>) -> Self {
        Fields {
            id: r.id.map(RawValue::get),
            name: r.name.map(RawValue::get),
            cat: r.cat.map(RawValue::get),
            ph: r.ph.map(RawValue::get),
            pid: r.pid.map(RawValue::get),
            tid: r.tid.map(RawValue::get),
            ts: r.ts.map(RawValue::get),
            dur: r.dur.map(RawValue::get),
            args: r.args,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawArgs<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = RawArgs<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(RawArgs::default())
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Self::Value, M::Error> {
                let mut out = RawArgs::default();
                while let Some(Str(k)) = m.next_key::<Str<'de>>()? {
                    let v: &'de RawValue = m.next_value()?;
                    out.add(k, v.get());
                }
                Ok(out)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}
pub(super) fn fields_serde(text: &str) -> Result<Fields<'_>, LineError> {
    let raw: RawEvent<'_> = serde_json::from_str(text).map_err(|e| err("-", e.to_string()))?;
    Ok(raw.into())
}
