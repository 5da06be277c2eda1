//! A table of records that remembers which rows a change touched, so that
//! the journal writes only those and never compares or copies the rest.

use std::borrow::Borrow;
use std::collections::btree_map::{self, BTreeMap};

/// Rows by key, and for each row touched since the last
/// [`take_touched`](Table::take_touched), what it was before.
#[derive(Clone, Debug)]
pub(crate) struct Table<K, V> {
    rows: BTreeMap<K, V>,
    before: BTreeMap<K, Option<V>>,
}

impl<K, V> Default for Table<K, V> {
    fn default() -> Self {
        Self {
            rows: BTreeMap::new(),
            before: BTreeMap::new(),
        }
    }
}

impl<K: Ord, V: PartialEq> PartialEq for Table<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.rows == other.rows
    }
}

impl<K: Ord, V: Eq> Eq for Table<K, V> {}

impl<K: Ord + Clone, V: Clone + PartialEq> Table<K, V> {
    pub fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.rows.get(key)
    }

    pub fn contains_key<Q: Ord + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.rows.contains_key(key)
    }

    pub fn iter(&self) -> btree_map::Iter<'_, K, V> {
        self.rows.iter()
    }

    pub fn values(&self) -> btree_map::Values<'_, K, V> {
        self.rows.values()
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// The rows from `start` on, in key order.
    pub fn range_from(&self, start: K) -> btree_map::Range<'_, K, V> {
        self.rows.range(start..)
    }

    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        self.note(&key);
        self.rows.insert(key, value)
    }

    pub fn remove<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        let key = self.rows.get_key_value(key)?.0.clone();
        self.note(&key);
        self.rows.remove::<K>(&key)
    }

    pub fn get_mut<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
    {
        let key = self.rows.get_key_value(key)?.0.clone();
        self.note(&key);
        self.rows.get_mut::<K>(&key)
    }

    /// Keeps only the rows `keep` says yes to.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &V) -> bool) {
        let gone: Vec<K> = (self.rows.iter())
            .filter(|(key, value)| !keep(key, value))
            .map(|(key, _)| key.clone())
            .collect();
        for key in gone {
            self.remove(&key);
        }
    }

    /// The rows touched since the last call whose value changed, each with
    /// its value before and now; forgets them.
    pub fn take_touched(&mut self) -> Vec<(K, Option<V>, Option<&V>)> {
        let before = std::mem::take(&mut self.before);
        let rows = &self.rows;
        before
            .into_iter()
            .filter_map(|(key, was)| {
                let now = rows.get(&key);
                (was.as_ref() != now).then_some((key, was, now))
            })
            .collect()
    }

    fn note(&mut self, key: &K) {
        if !self.before.contains_key(key) {
            let was = self.rows.get(key).cloned();
            self.before.insert(key.clone(), was);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_rows_whose_value_changed_are_reported() {
        let mut table = Table::default();
        table.insert("a".to_owned(), 1);
        table.insert("b".to_owned(), 2);
        table.take_touched();
        table.insert("a".to_owned(), 1);
        *table.get_mut("b").unwrap() = 3;
        table.remove("missing");
        table.insert("c".to_owned(), 4);
        table.remove("c");
        let touched: Vec<_> = (table.take_touched().into_iter())
            .map(|(key, was, now)| (key, was, now.copied()))
            .collect();
        assert_eq!(touched, vec![("b".to_owned(), Some(2), Some(3))]);
        assert!(table.take_touched().is_empty());
    }
}
