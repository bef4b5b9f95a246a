//! Mapping a list on a few threads, in order: for start-up work that is
//! many small independent reads (skill files, a checkpoint's `lstat`s),
//! where a second core halves the wait.

/// `f` of each item, in the items' order: on the calling thread for fewer
/// than `from` items (starting threads would cost more than they save) or
/// on a one-core machine, otherwise on up to four threads, each mapping a
/// contiguous part. A thread that cannot start leaves its part to the
/// caller; a panic in one is resumed here.
pub fn map_in_order<T: Sync, R: Send>(
    items: &[T],
    from: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let map = |part: &[T]| part.iter().map(&f).collect::<Vec<R>>();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    if threads == 1 || items.len() < from {
        return map(items);
    }
    std::thread::scope(|s| {
        let running: Vec<_> = items
            .chunks(items.len().div_ceil(threads))
            .map(|part| {
                let thread = std::thread::Builder::new().spawn_scoped(s, move || map(part));
                (part, thread)
            })
            .collect();
        running
            .into_iter()
            .flat_map(|(part, thread)| match thread {
                Ok(thread) => thread
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                Err(_) => map(part),
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_result_is_the_sequential_map_in_order(items in proptest::collection::vec(any::<u32>(), 0..300), from in 0usize..100) {
            let expected: Vec<u64> = items.iter().map(|&i| u64::from(i) * 3).collect();
            prop_assert_eq!(map_in_order(&items, from, |&i| u64::from(i) * 3), expected);
        }
    }

    #[test]
    fn a_long_list_is_mapped_on_more_than_one_thread_where_there_are_cores() {
        let items: Vec<u32> = (0..64).collect();
        let threads = map_in_order(&items, 1, |_| std::thread::current().id());
        let distinct: std::collections::HashSet<_> = threads.iter().collect();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        assert_eq!(distinct.len(), cores.min(items.len()));
        assert!(!distinct.contains(&std::thread::current().id()) || cores == 1);
    }
}
