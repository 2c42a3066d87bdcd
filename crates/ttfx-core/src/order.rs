//! The one sort in ttfx-core. A leaf: it uses nothing else in the crate, so the
//! timeline, the metrics and the statistics can all sort without depending on each other.

/// The order that sorts `keys` ascending (f64's total order; equal keys keep theirs).
/// Every sort in ttfx-core goes through [`stable_order`]: a `sort_by` on another element
/// type would bring its own copy of std's sort, about 4.5 KB of the browser probe's wasm
/// each.
pub fn ascending_order(keys: &[f64]) -> Vec<usize> {
    stable_order(keys.len(), &|a, b| keys[a].total_cmp(&keys[b]).is_le())
}

/// The order that sorts items `0..n` stably, where `le(a, b)` says item `a` goes no later
/// than item `b` (a total order). A plain bottom-up merge sort rather than std's
/// (driftsort, 4.4 KB of the browser analysis's wasm, 1.5 KB gzip): a stable sort under
/// a total order has one result, so which algorithm finds it changes no output.
pub fn stable_order(n: usize, le: &dyn Fn(usize, usize) -> bool) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut merged = order.clone();
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut left, mut right) = (start, mid);
            for slot in &mut merged[start..end] {
                // Left first on ties: that keeps equal keys in their order.
                let take_left = right == end || (left < mid && le(order[left], order[right]));
                if take_left {
                    *slot = order[left];
                    left += 1;
                } else {
                    *slot = order[right];
                    right += 1;
                }
            }
            start = end;
        }
        std::mem::swap(&mut order, &mut merged);
        width *= 2;
    }
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
    use proptest::prelude::*;

    #[test]
    fn ascending_order_is_stable_and_total() {
        let keys = [3.0, 1.0, f64::NAN, 1.0, -0.0, 0.0, f64::NEG_INFINITY];
        assert_eq!(ascending_order(&keys), [6, 4, 5, 1, 3, 0, 2]);
        let items = [("b", 2.0), ("a1", 1.0), ("c", 3.0), ("a2", 1.0)];
        let sorted = sorted_by_key(&items, |i| i.1);
        let names: Vec<&str> = sorted.iter().map(|i| i.0).collect();
        assert_eq!(names, ["a1", "a2", "b", "c"]);
    }

    proptest! {
        /// The merge sort finds std's stable sort's order, ties, NaNs and zeros included.
        #[test]
        fn ascending_order_is_std_stable_sort(
            keys in prop::collection::vec(
                prop_oneof![
                    (-3i8..4).prop_map(f64::from),
                    any::<f64>(),
                    Just(-0.0),
                    Just(f64::NAN),
                    Just(-f64::NAN),
                ],
                0..200,
            ),
        ) {
            let mut std_order: Vec<usize> = (0..keys.len()).collect();
            std_order.sort_by(|&a, &b| keys[a].total_cmp(&keys[b]));
            prop_assert_eq!(ascending_order(&keys), std_order);
        }
    }
}
