//! The subset of WQL the groups write, read: `SELECT ... FROM Class
//! [WHERE P = 'literal' [AND Q = n]]` and `ASSOCIATORS OF {path} WHERE
//! AssocClass = A ResultClass = C ...`, and WMI's comparison of a value.

use std::collections::HashMap;

use crate::host::wmi::{WmiObject, WmiValue};

/// What a query asks for.
#[derive(Debug, PartialEq)]
pub(super) enum Query {
    /// `SELECT ... FROM class [WHERE p = v [AND ...]]`.
    Select {
        class: String,
        conditions: Vec<(String, WmiValue)>,
    },
    /// `ASSOCIATORS OF {path} WHERE AssocClass = a ResultClass = c ...`.
    Associators {
        path: String,
        association: String,
        class: String,
    },
}

/// A WQL literal: a quoted string (with backslash escapes) or a number.
fn literal(text: &str) -> Option<WmiValue> {
    let Some(quoted) = text.strip_prefix('\'') else {
        return text.parse().ok().map(WmiValue::UInt);
    };
    let quoted = quoted.strip_suffix('\'')?;
    let mut value = String::new();
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => value.push(chars.next()?),
            // An unescaped quote would have ended the literal.
            '\'' => return None,
            c => value.push(c),
        }
    }
    Some(WmiValue::String(value))
}

pub(super) fn parse(query: &str) -> Option<Query> {
    if let Some(rest) = query.strip_prefix("ASSOCIATORS OF {") {
        let (path, rest) = rest.split_once("} WHERE ")?;
        let mut words = rest.split(' ');
        let mut keys = HashMap::new();
        while let (Some(key), Some("="), Some(value)) = (words.next(), words.next(), words.next()) {
            keys.insert(key, value);
        }
        return Some(Query::Associators {
            path: path.to_owned(),
            association: keys.get("AssocClass")?.to_string(),
            class: keys.get("ResultClass")?.to_string(),
        });
    }
    let rest = query.strip_prefix("SELECT ")?;
    let (_, rest) = rest.split_once(" FROM ")?;
    let Some((class, condition)) = rest.split_once(" WHERE ") else {
        return Some(Query::Select {
            class: rest.to_owned(),
            conditions: Vec::new(),
        });
    };
    let mut conditions = Vec::new();
    for term in condition.split(" AND ") {
        let (property, value) = term.split_once(" = ")?;
        conditions.push((property.to_owned(), literal(value)?));
    }
    Some(Query::Select {
        class: class.to_owned(),
        conditions,
    })
}

/// Whether `object` has `value` as `property`: strings (and a `char16`,
/// read as a one-letter string) compared without regard to case, as WMI
/// compares them.
pub(super) fn has(object: &WmiObject, property: &str, value: &WmiValue) -> bool {
    match (object.get(property), value) {
        (Some(WmiValue::String(a)), WmiValue::String(b)) => a.eq_ignore_ascii_case(b),
        (Some(a), b) => {
            crate::host::wmi::unsigned(a).is_some()
                && crate::host::wmi::unsigned(a) == crate::host::wmi::unsigned(b)
        }
        (None, _) => false,
    }
}

#[test]
fn the_stand_in_reads_the_queries_the_groups_write() {
    let text = |s: &str| WmiValue::String(s.to_owned());
    let query = format!(
        "SELECT * FROM C WHERE P = {} AND N = 3260",
        crate::host::wmi::wql_string(r"\\a\b'c")
    );
    let conditions = vec![
        ("P".to_owned(), text(r"\\a\b'c")),
        ("N".to_owned(), WmiValue::UInt(3260)),
    ];
    let class = "C".to_owned();
    assert_eq!(parse(&query), Some(Query::Select { class, conditions }));
    let everything = Query::Select {
        class: "C".to_owned(),
        conditions: Vec::new(),
    };
    assert_eq!(parse("SELECT A, B FROM C"), Some(everything));
    assert_eq!(parse("SELECT * FROM C WHERE P = 'a'b'"), None);
    let associators = r#"ASSOCIATORS OF {\\H\ns:C.K="v"} WHERE AssocClass = A ResultClass = R ResultRole = r Role = s"#;
    let expected = Query::Associators {
        path: r#"\\H\ns:C.K="v""#.to_owned(),
        association: "A".to_owned(),
        class: "R".to_owned(),
    };
    assert_eq!(parse(associators), Some(expected));
}
