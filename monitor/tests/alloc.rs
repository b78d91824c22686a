//! The common path (a delta with no hit, or one from a filtered speaker)
//! allocates nothing: counted by a per-thread counting allocator.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use common::*;
use monitor::Watch;
use serde_json::json;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: same layout, same contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn no_hit_no_allocation() {
    let words: Vec<String> = (0..1000).map(|i| format!("keyword{i}")).collect();
    let list: Vec<(&str, &str)> = words
        .iter()
        .enumerate()
        .map(|(i, w)| (w.as_str(), if i % 2 == 0 { "word" } else { "substring" }))
        .collect();
    let t = trigger(kws(&list), json!({ "speakers": ["agent", "tool"] }));
    let text = "the build failed: keywordless output, keyword, KEYWORD0X and keyword2_y\n".repeat(20);
    let no_hit = delta(1, "agent", &text);
    assert_eq!(allocations(|| assert!(t.hits(&no_hit).is_empty())), 0, "no hit");
    let filtered = delta(2, "human", "keyword1 keyword2");
    assert_eq!(
        allocations(|| assert!(t.hits(&filtered).is_empty())),
        0,
        "filtered speaker"
    );
    let own = delta(3, "monitor:lint", "keyword1");
    assert_eq!(allocations(|| assert!(t.hits(&own).is_empty())), 0, "own advice");
    // a hit does allocate (the Vec, the excerpt): the counter works
    let hit = delta(4, "agent", "keyword7 here");
    assert!(allocations(|| assert_eq!(t.hits(&hit).len(), 1)) > 0);
    // through a watch, after the conversation's cursor exists
    let mut w = Watch::new(attachment(kws(&list), json!({}))).unwrap();
    let _ = w.evaluate(&delta(1, "agent", "warm up"), 0);
    let next = delta(2, "agent", &text);
    assert_eq!(
        allocations(|| assert!(w.evaluate(&next, 0).hits.is_empty())),
        0,
        "watch"
    );
}
