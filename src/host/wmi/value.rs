//! The seam's values and objects, and their conversions to and from COM's.

use std::collections::BTreeMap;

use wmi::{IWbemClassWrapper, Variant};

use super::failure::WmiFailure;

/// A WMI object: its properties by name. Objects a query returns also
/// carry their path, as `__PATH`, for instance methods.
pub(crate) type WmiObject = BTreeMap<String, WmiValue>;

/// The name under which a query's objects carry their path.
pub(crate) const PATH: &str = "__PATH";

/// A property's or a parameter's value. The seam's own type: the `wmi`
/// crate's `Variant` may hold COM pointers, which stay on the thread that
/// made the request.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum WmiValue {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Real(f64),
    String(String),
    Array(Vec<WmiValue>),
    /// An embedded object or an interface, which no group reads: its
    /// description.
    Other(String),
}

impl From<Variant> for WmiValue {
    fn from(value: Variant) -> Self {
        match value {
            Variant::Empty | Variant::Null => Self::Null,
            Variant::Bool(v) => Self::Bool(v),
            Variant::I1(v) => Self::Int(v.into()),
            Variant::I2(v) => Self::Int(v.into()),
            Variant::I4(v) => Self::Int(v.into()),
            Variant::I8(v) => Self::Int(v),
            Variant::UI1(v) => Self::UInt(v.into()),
            Variant::UI2(v) => Self::UInt(v.into()),
            Variant::UI4(v) => Self::UInt(v.into()),
            Variant::UI8(v) => Self::UInt(v),
            Variant::R4(v) => Self::Real(v.into()),
            Variant::R8(v) => Self::Real(v),
            Variant::String(v) => Self::String(v),
            Variant::Array(items) => Self::Array(items.into_iter().map(Self::from).collect()),
            other => Self::Other(format!("{other:?}")),
        }
    }
}

impl From<WmiValue> for Variant {
    fn from(value: WmiValue) -> Self {
        match value {
            WmiValue::Null => Variant::Null,
            WmiValue::Bool(v) => Variant::Bool(v),
            // WMI takes every integer type up to 32 bits as VT_I4 (a
            // `uint32` above 2^31 as its bits), and 64-bit ones as decimal
            // text: a `uint64` parameter is given as
            // [`WmiValue::uint64`], text already.
            WmiValue::Int(v) => {
                i32::try_from(v).map_or(Variant::String(v.to_string()), Variant::I4)
            }
            WmiValue::UInt(v) => match u32::try_from(v) {
                Ok(bits) => Variant::I4(bits as i32),
                Err(_) => Variant::String(v.to_string()),
            },
            WmiValue::Real(v) => Variant::R8(v),
            WmiValue::String(v) | WmiValue::Other(v) => Variant::String(v),
            WmiValue::Array(items) => {
                Variant::Array(items.into_iter().map(Variant::from).collect())
            }
        }
    }
}

impl WmiValue {
    /// A `uint64` parameter, as WMI takes one: decimal text.
    pub fn uint64(value: u64) -> Self {
        Self::String(value.to_string())
    }
}

/// The properties of `object`, as the seam gives them.
pub(super) fn properties(object: &IWbemClassWrapper) -> Result<WmiObject, WmiFailure> {
    let mut properties = WmiObject::new();
    for name in object.list_properties()? {
        let value = object.get_property(&name)?;
        properties.insert(name, value.into());
    }
    Ok(properties)
}

/// The properties of an object a query gave, with its path, if it has
/// one: a query of some properties only gives objects no path.
pub(super) fn with_path(object: &IWbemClassWrapper) -> Result<WmiObject, WmiFailure> {
    let mut found = properties(object)?;
    if let Ok(Variant::String(path)) = object.get_property(PATH) {
        found.insert(PATH.to_owned(), WmiValue::String(path));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_go_as_wmi_takes_them() {
        let port = Variant::from(WmiValue::UInt(3260));
        assert!(matches!(port, Variant::I4(3260)), "{port:?}");
        // A `uint32` above 2^31 (a registry hive's handle) as its bits.
        let hive = Variant::from(WmiValue::UInt(0x8000_0002));
        assert!(
            matches!(hive, Variant::I4(v) if v as u32 == 0x8000_0002),
            "{hive:?}"
        );
        let negative = Variant::from(WmiValue::Int(-1));
        assert!(matches!(negative, Variant::I4(-1)), "{negative:?}");
        // A `uint64`, small or not, as decimal text.
        for size in [512, 3 << 30] {
            let text = Variant::from(WmiValue::uint64(size));
            assert!(
                matches!(&text, Variant::String(t) if *t == size.to_string()),
                "{text:?}"
            );
        }
        let big = Variant::from(WmiValue::UInt(1 << 40));
        assert!(
            matches!(&big, Variant::String(t) if t == "1099511627776"),
            "{big:?}"
        );
    }
}
