//! The threads a run's matrix stages and heads are split across (std only): helper threads
//! that wait for the next piece of work by spinning, and park only after a while without any
//! (as llama.cpp's thread pool does), so that a hand-off costs a cache line's trip rather than a
//! wake-up.
//!
//! Parts are claimed, not assigned: the calling thread and every helper take the next unclaimed
//! part until none is left, so a helper that the system has not scheduled in time leaves its
//! share to the others instead of holding them up; the caller waits only for parts a helper has
//! started. When the helpers keep coming late (another process holds the cores), the team goes
//! solo: splits run on the calling thread alone, the helpers park, and after a pause that
//! doubles each time the team tries again ([`Pace`]).
//!
//! One team per process, sized by the last run that asked for more than one thread; runs on
//! several threads take turns with it a split at a time, and a split inside a part runs on the
//! part's thread. Every split computes exact integers in parts that write disjoint words, so
//! who runs which part changes no bit.

use std::cell::UnsafeCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};
use std::vec::Vec;

/// How long an idle helper spins before it parks.
const SPIN: Duration = Duration::from_micros(200);
/// How long the caller spins for a helper's unfinished part before it parks (freeing its core
/// for that helper, if the helper is waiting for one).
const WAIT_SPIN: Duration = Duration::from_micros(20);

/// A piece of work: part i of it, for i below the job's part count.
type Job<'a> = &'a (dyn Fn(usize) + Sync);

/// The job's word: its epoch (bits 32 to 63), its part count (16 to 31) and the next part to
/// claim (0 to 15), changed together so that a claim is always of the job it read.
#[derive(Clone, Copy)]
struct Word(u64);

impl Word {
    fn new(epoch: u64, parts: usize) -> Word {
        Word(epoch << 32 | (parts as u64) << 16)
    }
    fn epoch(self) -> u64 {
        self.0 >> 32
    }
    fn parts(self) -> usize {
        (self.0 >> 16 & 0xffff) as usize
    }
    fn next(self) -> usize {
        (self.0 & 0xffff) as usize
    }
}

struct Shared {
    /// The current job's [`Word`]; stored (Release) after `job` is written.
    word: AtomicU64,
    /// The current job, its lifetime erased: valid while any of its parts is unfinished (the
    /// caller of [`Team::run`] waits for every part before returning).
    job: UnsafeCell<Option<Job<'static>>>,
    /// Parts of the current job finished.
    finished: AtomicUsize,
    /// The caller waiting for the current job, when it parked (the helper finishing the last
    /// part unparks it).
    caller: Mutex<Option<Thread>>,
    caller_parked: AtomicBool,
    /// Per helper: parked, or about to park (the caller unparks it after a new job).
    parked: Vec<AtomicBool>,
    panicked: AtomicBool,
    stop: AtomicBool,
    /// Tests hold the helpers back with this, as a busy system would.
    #[cfg(test)]
    held: AtomicBool,
}

// SAFETY: `job` is written only by the caller of `Team::run` (one at a time: the team sits
// behind a mutex) before the word's epoch moves, and read only by a thread that has claimed one
// of that job's parts, which the caller waits for before it returns or writes `job` again.
unsafe impl Sync for Shared {}

impl Shared {
    /// Claims and runs parts of the job of `epoch` until none is left; returns how many ran here.
    fn claim_parts(&self, epoch: u64) -> usize {
        let mut ran = 0;
        let mut word = Word(self.word.load(Acquire));
        while word.epoch() == epoch && word.next() < word.parts() {
            match self
                .word
                .compare_exchange_weak(word.0, word.0 + 1, AcqRel, Acquire)
            {
                Ok(_) => {
                    // SAFETY: the job was written before this epoch's word, and stays valid
                    // until the part claimed here is counted finished.
                    let job = unsafe { (*self.job.get()).expect("a job for this epoch") };
                    if catch_unwind(AssertUnwindSafe(|| part(job, word.next()))).is_err() {
                        IN_PART.set(false);
                        self.panicked.store(true, Relaxed);
                    }
                    ran += 1;
                    if self.finished.fetch_add(1, SeqCst) + 1 == word.parts()
                        && self.caller_parked.load(SeqCst)
                    {
                        if let Some(caller) =
                            &*self.caller.lock().unwrap_or_else(|p| p.into_inner())
                        {
                            caller.unpark();
                        }
                    }
                    word = Word(self.word.load(Acquire));
                }
                Err(now) => word = Word(now),
            }
        }
        ran
    }
}

/// When the team splits and when it goes solo: a window of jobs in which the helpers came late
/// to at least half (they took no part, or the caller waited long for one) sends the team solo
/// for `pause`, which doubles with each such window in a row and falls back to its least after
/// a window without lateness.
struct Pace {
    solo_until: Option<Instant>,
    pause: Duration,
    jobs: u32,
    late: u32,
}

impl Pace {
    const WINDOW: u32 = 32;
    /// A wait for helpers longer than this makes a job late.
    const LATE_WAIT: Duration = Duration::from_micros(50);
    const LEAST_PAUSE: Duration = Duration::from_millis(20);
    const MOST_PAUSE: Duration = Duration::from_secs(1);

    fn new() -> Pace {
        Pace {
            solo_until: None,
            pause: Self::LEAST_PAUSE,
            jobs: 0,
            late: 0,
        }
    }

    /// Whether splits run on the calling thread alone now.
    fn solo(&mut self) -> bool {
        match self.solo_until {
            Some(until) if Instant::now() < until => true,
            Some(_) => {
                self.solo_until = None;
                false
            }
            None => false,
        }
    }

    /// Counts one job: whether helpers ran any part, and how long the caller waited for them.
    fn record(&mut self, helped: bool, waited: Duration) {
        self.jobs += 1;
        self.late += u32::from(!helped || waited > Self::LATE_WAIT);
        if self.jobs < Self::WINDOW {
            return;
        }
        if 2 * self.late >= self.jobs {
            self.solo_until = Some(Instant::now() + self.pause);
            self.pause = (2 * self.pause).min(Self::MOST_PAUSE);
        } else if self.late == 0 {
            self.pause = Self::LEAST_PAUSE;
        }
        (self.jobs, self.late) = (0, 0);
    }
}

struct Team {
    shared: Arc<Shared>,
    helpers: Vec<JoinHandle<()>>,
    pace: Pace,
}

impl Team {
    /// A team of `helpers` threads beside the caller's (fewer when the system refuses some).
    fn new(helpers: usize) -> Team {
        let shared = Arc::new(Shared {
            word: AtomicU64::new(Word::new(0, 0).0),
            job: UnsafeCell::new(None),
            finished: AtomicUsize::new(0),
            caller: Mutex::new(None),
            caller_parked: AtomicBool::new(false),
            parked: (0..helpers).map(|_| AtomicBool::new(false)).collect(),
            panicked: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            #[cfg(test)]
            held: AtomicBool::new(false),
        });
        let mut handles = Vec::new();
        for index in 0..helpers {
            let shared = Arc::clone(&shared);
            let spawned = thread::Builder::new()
                .name(std::format!("curta-run-{}", index + 1))
                .spawn(move || help(&shared, index));
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(_) => break,
            }
        }
        Team {
            shared,
            helpers: handles,
            pace: Pace::new(),
        }
    }

    /// Runs parts 0 to `parts` − 1 of `job` (at most one more than the helpers) on the calling
    /// thread and whichever helpers claim some in time; returns when every part is done. A
    /// panic in any part panics here.
    fn run(&mut self, parts: usize, job: Job) {
        let s = &*self.shared;
        debug_assert!(parts <= self.helpers.len() + 1 && parts < 1 << 16);
        let epoch = Word(s.word.load(Relaxed)).epoch() + 1;
        // SAFETY: every part of the previous job is finished (the wait below), so no thread
        // reads `job` now, and none does before it claims a part of the new epoch. The erased
        // lifetime ends before this function returns, after the same wait.
        unsafe {
            *s.job.get() = Some(core::mem::transmute::<Job, Job<'static>>(job));
        }
        s.finished.store(0, Relaxed);
        s.word.store(Word::new(epoch, parts).0, SeqCst);
        for (flag, helper) in s.parked.iter().zip(&self.helpers) {
            if flag.load(SeqCst) {
                helper.thread().unpark();
            }
        }
        let own = s.claim_parts(epoch);
        let waited = self.wait(parts);
        self.pace.record(own < parts, waited);
        if s.panicked.swap(false, Relaxed) {
            panic!("a part of a run's split panicked");
        }
    }

    /// Waits until all `parts` are finished: spinning, then parked; returns how long it took.
    fn wait(&self, parts: usize) -> Duration {
        let s = &*self.shared;
        if s.finished.load(Acquire) == parts {
            return Duration::ZERO;
        }
        let start = Instant::now();
        while s.finished.load(Acquire) < parts {
            if start.elapsed() < WAIT_SPIN {
                core::hint::spin_loop();
                continue;
            }
            *s.caller.lock().unwrap_or_else(|p| p.into_inner()) = Some(thread::current());
            s.caller_parked.store(true, SeqCst);
            if s.finished.load(SeqCst) < parts {
                thread::park_timeout(Duration::from_millis(1));
            }
            s.caller_parked.store(false, SeqCst);
        }
        start.elapsed()
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        self.shared.stop.store(true, SeqCst);
        for helper in self.helpers.drain(..) {
            helper.thread().unpark();
            let _ = helper.join();
        }
    }
}

/// A helper's loop: wait for a new epoch (spinning, then parked), claim parts of it.
fn help(s: &Shared, index: usize) {
    let mut seen = 0;
    loop {
        let idle = Instant::now();
        let mut spins = 0u32;
        loop {
            if Word(s.word.load(Acquire)).epoch() != seen || s.stop.load(Relaxed) {
                break;
            }
            spins = spins.wrapping_add(1);
            if spins % 1024 != 0 || idle.elapsed() < SPIN {
                core::hint::spin_loop();
                continue;
            }
            // Announce the park, then look again: a job posted before the announcement is
            // seen here, one posted after it unparks this thread.
            s.parked[index].store(true, SeqCst);
            if Word(s.word.load(SeqCst)).epoch() == seen && !s.stop.load(SeqCst) {
                thread::park();
            }
            s.parked[index].store(false, SeqCst);
        }
        if s.stop.load(Acquire) {
            return;
        }
        seen = Word(s.word.load(Acquire)).epoch();
        #[cfg(test)]
        while s.held.load(Acquire) && !s.stop.load(Relaxed) {
            thread::yield_now();
        }
        s.claim_parts(seen);
    }
}

static TEAM: Mutex<Option<Team>> = Mutex::new(None);

/// The team, made (again) for `threads` threads in all when it has another size.
fn sized(team: &mut Option<Team>, threads: usize) -> &mut Team {
    if team.as_ref().is_none_or(|t| t.helpers.len() + 1 != threads) {
        *team = None;
        *team = Some(Team::new(threads - 1));
    }
    team.as_mut().expect("a team")
}

/// Makes the team for `threads` threads now (when more than one), so that its helpers have
/// started by the first split.
pub fn prepare(threads: usize) {
    if threads > 1 {
        sized(&mut TEAM.lock().unwrap_or_else(|p| p.into_inner()), threads);
    }
}

std::thread_local! {
    /// Whether this thread is running a part: a split inside a part runs where it is.
    static IN_PART: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// `job(i)` marked as a part ([`IN_PART`]).
fn part(job: Job, i: usize) {
    IN_PART.set(true);
    job(i);
    IN_PART.set(false);
}

/// Runs `f(i, items[i])` for every item, across up to `threads` threads (the calling thread
/// and the process's team of helpers); returns Σ f. With one thread or one item, inside
/// another split's part, or while the team is solo, on the calling thread alone.
pub fn sum_parts<T: Send>(
    threads: usize,
    items: Vec<T>,
    f: impl Fn(usize, T) -> i64 + Sync,
) -> i64 {
    let alone = |items: Vec<T>| -> i64 {
        let parts = items.into_iter().enumerate();
        parts.map(|(i, item)| f(i, item)).sum()
    };
    let parts = items.len();
    if threads <= 1 || parts <= 1 || IN_PART.get() {
        return alone(items);
    }
    // Runs on other threads take turns, a split at a time. A panic in a part poisons the lock;
    // the team itself is whole again after it.
    let mut team = TEAM.lock().unwrap_or_else(|p| p.into_inner());
    let member = sized(&mut team, threads);
    if parts > member.helpers.len() + 1 || member.pace.solo() {
        drop(team);
        return alone(items);
    }
    let slots: Vec<Mutex<Option<T>>> = items.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let total = AtomicI64::new(0);
    member.run(parts, &|i| {
        let item = slots[i].lock().ok().and_then(|mut slot| slot.take());
        let item = item.expect("each part's item is taken once");
        total.fetch_add(f(i, item), Relaxed);
    });
    total.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::thread::ThreadId;

    /// Runs `parts` parts on `team`, each spinning for `work`; returns the threads that ran them.
    fn threads_of(team: &mut Team, parts: usize, work: Duration) -> Vec<ThreadId> {
        let ran: Vec<Mutex<Option<ThreadId>>> = (0..parts).map(|_| Mutex::new(None)).collect();
        team.run(parts, &|i| {
            let start = Instant::now();
            while start.elapsed() < work {
                core::hint::spin_loop();
            }
            let mut slot = ran[i].lock().unwrap();
            assert!(slot.is_none(), "part {i} ran twice");
            *slot = Some(thread::current().id());
        });
        ran.into_iter()
            .map(|r| r.into_inner().unwrap().expect("every part ran"))
            .collect()
    }

    /// Every part runs once with its own item; a panic in any part (the caller's or a
    /// helper's) reaches the caller and leaves the team usable; a team of another size
    /// replaces it.
    #[test]
    fn parts_run_once_each_and_panics_come_back() {
        for threads in [2, 3, 2] {
            for round in 0..200 {
                let items: Vec<i64> = (0..threads as i64).map(|i| i * 1000 + round).collect();
                let ran: Vec<AtomicUsize> = (0..threads).map(|_| AtomicUsize::new(0)).collect();
                let sum = sum_parts(threads, items.clone(), |i, item| {
                    ran[i].fetch_add(1, Relaxed);
                    assert_eq!(item, i as i64 * 1000 + round);
                    item
                });
                assert_eq!(sum, items.iter().sum::<i64>());
                assert!(ran.iter().all(|r| r.load(Relaxed) == 1));
            }
            for panicking in 0..threads {
                let caught = std::panic::catch_unwind(|| {
                    sum_parts(threads, (0..threads).collect(), |i, _| {
                        assert!(i != panicking, "part {i} panics");
                        0
                    })
                });
                assert!(
                    caught.is_err(),
                    "{threads} threads: part {panicking}'s panic"
                );
            }
            assert_eq!(
                sum_parts(threads, vec![5; threads], |_, v| v),
                5 * threads as i64
            );
        }
    }

    /// Helpers that the system does not run leave their parts to the caller, which does not
    /// wait for them; a team whose helpers come late to most jobs of a window goes solo.
    #[test]
    fn late_helpers_leave_their_parts_to_the_caller() {
        let mut team = Team::new(2);
        team.shared.held.store(true, SeqCst);
        let me = thread::current().id();
        for _ in 0..Pace::WINDOW {
            assert_eq!(threads_of(&mut team, 3, Duration::ZERO), [me; 3]);
        }
        assert!(
            team.pace.solo(),
            "a window of late jobs makes the team solo"
        );
        assert_eq!(team.pace.pause, 2 * Pace::LEAST_PAUSE);
        team.shared.held.store(false, SeqCst);
        // Free helpers take parts again: the caller's own part spins long enough for a
        // spinning helper to claim the others.
        let helped = (0..200).any(|_| {
            let ran = threads_of(&mut team, 3, Duration::from_micros(300));
            ran.iter().any(|&t| t != me)
        });
        assert!(helped, "no helper ran a part in 200 jobs");
    }

    /// The caller returns only when a part a helper claimed is finished, however long it
    /// takes, and counts the wait.
    #[test]
    fn the_caller_waits_for_parts_that_helpers_started() {
        let mut team = Team::new(1);
        let me = thread::current().id();
        for _ in 0..5 {
            let done: Vec<AtomicBool> = (0..2).map(|_| AtomicBool::new(false)).collect();
            let threads = Mutex::new(HashSet::new());
            team.run(2, &|i| {
                let mine = thread::current().id() == me;
                // The caller's part is slow, so that the helper claims the other one, which
                // is slower still.
                thread::sleep(Duration::from_millis(if mine { 20 } else { 40 }));
                threads.lock().unwrap().insert(thread::current().id());
                done[i].store(true, SeqCst);
            });
            assert!(
                done.iter().all(|d| d.load(SeqCst)),
                "run returned before a part ended"
            );
            if threads.into_inner().unwrap().len() == 2 {
                assert_eq!(team.pace.late, team.pace.jobs, "a wait of 20 ms is late");
            }
        }
    }

    /// The pace's windows: lateness in half a window or more sends the team solo for a pause
    /// that doubles up to its most; a window without lateness brings the pause back down.
    #[test]
    fn a_pace_goes_solo_after_a_late_window_and_backs_off() {
        let mut pace = Pace::new();
        let window = |pace: &mut Pace, late: u32| {
            for j in 0..Pace::WINDOW {
                pace.record(j >= late, Duration::ZERO);
            }
        };
        window(&mut pace, Pace::WINDOW / 2 - 1);
        assert!(!pace.solo());
        assert_eq!(pace.pause, Pace::LEAST_PAUSE);
        window(&mut pace, Pace::WINDOW / 2);
        assert!(pace.solo());
        let until = pace.solo_until.expect("solo");
        let left = until - Instant::now();
        assert!(
            left <= Pace::LEAST_PAUSE && left > Pace::LEAST_PAUSE / 2,
            "{left:?}"
        );
        for _ in 0..10 {
            window(&mut pace, Pace::WINDOW);
        }
        assert_eq!(pace.pause, Pace::MOST_PAUSE);
        pace.record(true, Pace::LATE_WAIT + Duration::from_micros(1));
        assert_eq!(
            pace.late, 1,
            "a long wait is late even when helpers ran parts"
        );
        pace.solo_until = Some(Instant::now() - Duration::from_millis(1));
        assert!(!pace.solo(), "the pause is over");
        assert_eq!(pace.solo_until, None);
        (pace.jobs, pace.late) = (0, 0);
        window(&mut pace, 1);
        assert_eq!(pace.pause, Pace::MOST_PAUSE, "one late job keeps the pause");
        window(&mut pace, 0);
        assert_eq!(pace.pause, Pace::LEAST_PAUSE);
        assert!(!pace.solo());
    }
}
