//! The one sort in ttfx-core. A leaf: it uses nothing else in the crate, so the
//! timeline, the metrics and the statistics can all sort without depending on each other.

/// The order that sorts `keys` ascending (f64's total order; equal keys keep theirs).
/// Every sort in ttfx-core goes through this one non-generic function: a `sort_by` on
/// another element type would bring its own copy of std's sort, about 4.5 KB of the
/// browser probe's wasm each.
pub fn ascending_order(keys: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|&a, &b| keys[a].total_cmp(&keys[b]));
    order
}

/// `items` in ascending order of `key`, stably.
pub fn sorted_by_key<T: Clone>(items: &[T], key: impl Fn(&T) -> f64) -> Vec<T> {
    let keys: Vec<f64> = items.iter().map(key).collect();
    ascending_order(&keys)
        .into_iter()
        .map(|i| items[i].clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascending_order_is_stable_and_total() {
        let keys = [3.0, 1.0, f64::NAN, 1.0, -0.0, 0.0, f64::NEG_INFINITY];
        assert_eq!(ascending_order(&keys), [6, 4, 5, 1, 3, 0, 2]);
        let items = [("b", 2.0), ("a1", 1.0), ("c", 3.0), ("a2", 1.0)];
        let sorted = sorted_by_key(&items, |i| i.1);
        let names: Vec<&str> = sorted.iter().map(|i| i.0).collect();
        assert_eq!(names, ["a1", "a2", "b", "c"]);
    }
}
