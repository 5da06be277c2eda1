//! Output: every command's answer is records of named fields, printed as
//! JSON for machines or as an aligned table for people, from the same
//! records; lines are written so that a closed pipe (`csiproxyctl probe |
//! head`) ends the program quietly.

use std::io::Write;

use serde_json::{Map, Value};

/// Writes one line to standard output; exits quietly if nobody reads it.
pub fn emit(line: &str) {
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{line}").is_err() {
        std::process::exit(0);
    }
}

/// A command's answer: records with the same fields.
pub struct Records {
    fields: &'static [&'static str],
    rows: Vec<Vec<Value>>,
    /// One record, printed as a JSON object rather than an array.
    single: bool,
    /// One value, printed alone rather than as a table (for scripts).
    bare: bool,
}

impl Records {
    /// One record, its values in the order of `fields`.
    pub fn one(fields: &'static [&'static str], values: Vec<Value>) -> Self {
        Self {
            fields,
            rows: vec![values],
            single: true,
            bare: false,
        }
    }

    /// One record of one field, printed as the bare value in text (a word
    /// a script reads) and as an object in JSON.
    pub fn word(field: &'static [&'static str], value: &str) -> Self {
        Self {
            bare: true,
            ..Self::one(field, vec![Value::String(value.to_owned())])
        }
    }

    /// Any number of records (an array in JSON; of bare values when there
    /// is only one field).
    pub fn many(fields: &'static [&'static str]) -> Self {
        Self {
            fields,
            rows: Vec::new(),
            single: false,
            bare: false,
        }
    }

    /// Adds a record, its values in the order of the fields.
    pub fn push(&mut self, values: Vec<Value>) {
        self.rows.push(values);
    }

    /// Prints the records as JSON, or as a table headed by the field names.
    pub fn print(&self, json: bool) {
        if json {
            emit(&self.to_json().to_string());
        } else if let (true, Some([value])) = (self.bare, self.rows.first().map(Vec::as_slice)) {
            emit(&cell(value));
        } else {
            self.to_table().print();
        }
    }

    fn to_json(&self) -> Value {
        let record = |row: &Vec<Value>| -> Value {
            match self.fields {
                [_] if !self.single => row[0].clone(),
                _ => Value::Object(
                    self.fields
                        .iter()
                        .map(|f| f.to_string())
                        .zip(row.iter().cloned())
                        .collect::<Map<_, _>>(),
                ),
            }
        };
        match (self.single, self.rows.first()) {
            (true, Some(row)) => record(row),
            _ => Value::Array(self.rows.iter().map(record).collect()),
        }
    }

    fn to_table(&self) -> Table {
        let header: Vec<String> = self
            .fields
            .iter()
            .map(|f| f.replace('_', " ").to_uppercase())
            .collect();
        let mut table = Table::new(header);
        for row in &self.rows {
            table.row(row.iter().map(cell).collect());
        }
        table
    }
}

/// A value as a table shows it: strings without quotes, nothing for null.
fn cell(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A table with a header row; columns are as wide as their widest cell.
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: Vec<String>) -> Self {
        Self { rows: vec![header] }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn print(&self) {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for row in &self.rows {
            let line: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(c, cell)| {
                    if c + 1 == row.len() {
                        cell.clone()
                    } else {
                        format!("{cell:<width$}", width = widths[c])
                    }
                })
                .collect();
            emit(&line.join("  "));
        }
    }
}
