//! Idempotent calls: a call that names a key within [`KEPT_FOR`] of an earlier
//! one with the same key gets that call's result and does nothing again; two
//! at once with one key run once, the second waiting for the first. A call
//! that failed is not remembered (its retry runs). At most [`MAX_KEYS`] keys
//! are kept: the expired go first, then the oldest.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::OnceCell;

/// How long a key's result is kept.
pub const KEPT_FOR: Duration = Duration::from_secs(600);
/// Keys kept at most.
pub const MAX_KEYS: usize = 4096;

/// A key's result (once there is one), and when the key was first seen.
type Slot<V> = (Instant, Arc<OnceCell<V>>);

/// Results by key.
pub struct Recent<V> {
    keys: Mutex<HashMap<String, Slot<V>>>,
}

impl<V> Default for Recent<V> {
    fn default() -> Recent<V> {
        Recent {
            keys: Mutex::new(HashMap::new()),
        }
    }
}

impl<V: Clone> Recent<V> {
    /// The slot of `key` at `now`: the kept one, or a new one (making room).
    fn slot(&self, key: &str, now: Instant) -> Arc<OnceCell<V>> {
        let Ok(mut keys) = self.keys.lock() else {
            // A poisoned map remembers nothing: the call simply runs.
            return Arc::new(OnceCell::new());
        };
        if let Some((at, cell)) = keys.get(key)
            && now.saturating_duration_since(*at) < KEPT_FOR
        {
            return cell.clone();
        }
        if keys.len() >= MAX_KEYS {
            keys.retain(|_, (at, _)| now.saturating_duration_since(*at) < KEPT_FOR);
        }
        if keys.len() >= MAX_KEYS
            && let Some(oldest) = keys.iter().min_by_key(|(_, (at, _))| *at).map(|(k, _)| k.clone())
        {
            keys.remove(&oldest);
        }
        let cell = Arc::new(OnceCell::new());
        keys.insert(key.to_string(), (now, cell.clone()));
        cell
    }

    /// Runs `call` once per `key` (within [`KEPT_FOR`]), or gives the result
    /// it had. With no key, `call` simply runs.
    pub async fn once<E, F, Fut>(&self, key: Option<&str>, call: F) -> Result<V, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V, E>>,
    {
        let Some(key) = key else {
            return call().await;
        };
        let cell = self.slot(key, Instant::now());
        cell.get_or_try_init(call).await.cloned()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.keys.lock().map(|k| k.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn a_key_runs_once_a_failure_is_forgotten_and_no_key_always_runs() {
        let recent = Recent::<u32>::default();
        let runs = AtomicU32::new(0);
        let run = || async { Ok::<u32, String>(runs.fetch_add(1, Ordering::SeqCst) + 1) };
        assert_eq!(recent.once(Some("a"), run).await, Ok(1));
        assert_eq!(recent.once(Some("a"), run).await, Ok(1), "the kept result");
        assert_eq!(recent.once(Some("b"), run).await, Ok(2));
        assert_eq!(recent.once(None, run).await, Ok(3));
        assert_eq!(recent.once(None, run).await, Ok(4));
        let failed = recent
            .once(Some("c"), || async { Err::<u32, String>("busy".into()) })
            .await;
        assert_eq!(failed, Err("busy".into()));
        assert_eq!(recent.once(Some("c"), run).await, Ok(5), "a failed call's retry runs");
        assert_eq!(runs.load(Ordering::SeqCst), 5);
    }

    #[tokio::test]
    async fn two_at_once_with_one_key_run_once() {
        let recent = Arc::new(Recent::<u32>::default());
        let runs = Arc::new(AtomicU32::new(0));
        let mut tasks = vec![];
        for _ in 0..2 {
            let (recent, runs) = (recent.clone(), runs.clone());
            tasks.push(tokio::spawn(async move {
                recent
                    .once(Some("k"), || async {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        Ok::<u32, String>(runs.fetch_add(1, Ordering::SeqCst) + 1)
                    })
                    .await
            }));
        }
        for t in tasks {
            assert_eq!(t.await.expect("task"), Ok(1));
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn expired_keys_run_again_and_the_map_stays_bounded() {
        let recent = Recent::<u32>::default();
        let t0 = Instant::now();
        let first = recent.slot("a", t0);
        assert!(Arc::ptr_eq(&first, &recent.slot("a", t0 + Duration::from_secs(599))));
        assert!(!Arc::ptr_eq(&first, &recent.slot("a", t0 + KEPT_FOR)), "expired");
        for i in 0..MAX_KEYS + 10 {
            recent.slot(&format!("k{i}"), t0 + KEPT_FOR + Duration::from_millis(i as u64));
        }
        assert_eq!(recent.len(), MAX_KEYS);
    }
}
