//! The threads a run's matrix stages and heads are split across (std only): helper threads
//! that wait for the next piece of work by spinning, and park only after a while without any
//! (as llama.cpp's thread pool does), so that a hand-off costs a cache line's trip rather than a
//! wake-up.
//!
//! Parts are claimed, not assigned: the calling thread and every helper take the next unclaimed
//! part until none is left, so a helper that the system has not scheduled in time leaves its
//! share to the others instead of holding them up; the caller waits only for parts a helper has
//! started. When splitting is slower than running alone (another process holds the cores), the
//! team goes solo: splits run on the calling thread alone and the helpers park ([`Pace`]).
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
    /// Claims and runs parts of the job of `epoch` until none is left.
    fn claim_parts(&self, epoch: u64) {
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
    }
}

/// Whether the team splits or goes solo, chosen by the clock: splits are counted in windows of
/// [`Pace::WINDOW`] (about a token of the stories15M shape), each window run in one mode and
/// timed from its first split's start to its last split's end, the work between splits
/// included. After every [`Pace::TRIAL`] windows one window runs in the other mode and is compared
/// with the window just before it (the same position of a run, give or take a token): the
/// faster mode stays, the team only when it is faster by a tenth. So when another process holds the cores, and
/// two threads are slower than one, the team goes solo (its helpers park and leave their
/// cores); when the cores are free again, a trial finds the team faster.
struct Pace {
    solo: bool,
    /// The current window: its start, the end of its last split, its splits so far.
    start: Instant,
    last: Option<Instant>,
    splits: u32,
    /// The latest window's time split across the team ([0]) and solo ([1]).
    took: [Option<Duration>; 2],
    since_trial: u32,
    /// Whether the current window is a trial of the other mode.
    trial: bool,
}

impl Pace {
    const WINDOW: u32 = 32;
    const TRIAL: u32 = 32;
    /// A split that starts longer than this after the last one ends starts a new window (the
    /// time between runs is no split's).
    const GAP: Duration = Duration::from_millis(2);

    fn new() -> Pace {
        Pace {
            solo: false,
            start: Instant::now(),
            last: None,
            splits: 0,
            took: [None, None],
            // The first window is compared with a trial at once.
            since_trial: Self::TRIAL - 1,
            trial: false,
        }
    }

    /// Whether the team (`team` its window's time) is faster than one thread (`solo`).
    fn team_wins(team: Duration, solo: Duration) -> bool {
        team + team / 10 < solo
    }

    /// Counts a split that ran from `began` to `ended` in the current mode; at a window's end,
    /// picks the next window's mode.
    fn record(&mut self, began: Instant, ended: Instant) {
        if self
            .last
            .is_none_or(|last| began.saturating_duration_since(last) > Self::GAP)
        {
            (self.start, self.splits) = (began, 0);
        }
        self.last = Some(ended);
        self.splits += 1;
        if self.splits < Self::WINDOW {
            return;
        }
        let took = ended.saturating_duration_since(self.start);
        (self.start, self.splits) = (ended, 0);
        let mode = usize::from(self.solo);
        self.took[mode] = Some(took);
        if self.trial {
            self.trial = false;
            if let [Some(team), Some(solo)] = self.took {
                self.solo = !Self::team_wins(team, solo);
            }
            return;
        }
        self.since_trial += 1;
        if self.since_trial >= Self::TRIAL {
            (self.since_trial, self.trial, self.solo) = (0, true, !self.solo);
        }
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
        s.claim_parts(epoch);
        self.wait(parts);
        if s.panicked.swap(false, Relaxed) {
            panic!("a part of a run's split panicked");
        }
    }

    /// Waits until all `parts` are finished: spinning, then parked.
    fn wait(&self, parts: usize) {
        let s = &*self.shared;
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

/// Runs a split of a run's work: `run(threads)` with the threads to split it across now (one
/// while the team is solo, `threads` otherwise), timed for the team's pace. A solo split is
/// the one-thread path itself, not the team's parts in turn. Inside another split's part, or
/// with one thread, `run(1)` untimed.
pub fn split<R>(threads: usize, run: impl FnOnce(usize) -> R) -> R {
    split_on(&TEAM, threads, run)
}

fn split_on<R>(team: &Mutex<Option<Team>>, threads: usize, run: impl FnOnce(usize) -> R) -> R {
    if threads <= 1 || IN_PART.get() {
        return run(1);
    }
    let lock = || team.lock().unwrap_or_else(|p| p.into_inner());
    let solo = sized(&mut lock(), threads).pace.solo;
    let began = Instant::now();
    let result = run(if solo { 1 } else { threads });
    if let Some(team) = lock().as_mut() {
        team.pace.record(began, Instant::now());
    }
    result
}

/// Runs `f(i, items[i])` for every item, across up to `threads` threads (the calling thread
/// and the process's team of helpers); returns Σ f. With one thread or one item, or inside
/// another split's part, on the calling thread alone. Call it inside [`split`], which keeps the
/// team's pace.
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
    if parts > member.helpers.len() + 1 {
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
    /// wait for them; released, they take parts again.
    #[test]
    fn late_helpers_leave_their_parts_to_the_caller() {
        let mut team = Team::new(2);
        team.shared.held.store(true, SeqCst);
        let me = thread::current().id();
        for _ in 0..100 {
            assert_eq!(threads_of(&mut team, 3, Duration::ZERO), [me; 3]);
        }
        team.shared.held.store(false, SeqCst);
        // The caller's own part spins long enough for a spinning helper to claim the others.
        let helped = (0..200).any(|_| {
            let ran = threads_of(&mut team, 3, Duration::from_micros(300));
            ran.iter().any(|&t| t != me)
        });
        assert!(helped, "no helper ran a part in 200 jobs");
    }

    /// The caller returns only when a part a helper claimed is finished, however long it takes.
    #[test]
    fn the_caller_waits_for_parts_that_helpers_started() {
        let mut team = Team::new(1);
        let me = thread::current().id();
        for _ in 0..5 {
            let done: Vec<AtomicBool> = (0..2).map(|_| AtomicBool::new(false)).collect();
            team.run(2, &|i| {
                // The caller's part is slow, so that the helper claims the other one, which
                // is slower still.
                let mine = thread::current().id() == me;
                thread::sleep(Duration::from_millis(if mine { 20 } else { 40 }));
                done[i].store(true, SeqCst);
            });
            assert!(
                done.iter().all(|d| d.load(SeqCst)),
                "run returned before a part ended"
            );
        }
    }

    /// Records a window of splits of `each` back to back from `at`; returns its end.
    fn window(pace: &mut Pace, at: Instant, each: Duration) -> Instant {
        let mut t = at;
        for _ in 0..Pace::WINDOW {
            pace.record(t, t + each);
            t += each;
        }
        t
    }

    /// Runs `count` windows whose splits take `team` or `solo` each by the window's mode;
    /// returns the modes (true: solo) and the end.
    fn windows(
        pace: &mut Pace,
        mut t: Instant,
        count: u32,
        (team, solo): (Duration, Duration),
    ) -> (Vec<bool>, Instant) {
        let mut modes = Vec::new();
        for _ in 0..count {
            modes.push(pace.solo);
            t = window(pace, t, if pace.solo { solo } else { team });
        }
        (modes, t)
    }

    /// The windows of `modes` in the minority mode: one every TRIAL windows.
    fn trials(modes: &[bool], minority: bool) -> Vec<usize> {
        (0..modes.len()).filter(|&i| modes[i] == minority).collect()
    }

    /// The pace compares the modes in adjacent windows: solo while the team is slower, but for
    /// one trial of the team after every TRIAL windows; the team once a trial finds it faster by
    /// a tenth, but for one trial of solo after every TRIAL windows; a team window much slower than the
    /// one before calls a trial at once; a gap between splits starts a new window.
    #[test]
    fn a_pace_takes_the_faster_mode_and_tries_the_other() {
        let us = Duration::from_micros;
        let (loaded, alone, free) = ((us(30), us(10)), us(10), us(5));
        let mut pace = Pace::new();
        let t = Instant::now();
        let (modes, t) = windows(&mut pace, t, 3, loaded);
        assert_eq!(
            modes,
            [false, true, true],
            "the team first, then a trial of solo"
        );
        assert_eq!(
            pace.took,
            [Some(us(30) * Pace::WINDOW), Some(alone * Pace::WINDOW)]
        );
        let (modes, t) = windows(&mut pace, t, 2 * (Pace::TRIAL + 1), loaded);
        let tried = trials(&modes, false);
        assert_eq!(tried.len(), 2, "{modes:?}");
        assert_eq!(tried[1] - tried[0], Pace::TRIAL as usize + 1);
        // A team faster by less than a tenth does not win.
        let (modes, t) = windows(
            &mut pace,
            t,
            2 * (Pace::TRIAL + 1),
            (us(10) - us(1) / 2, alone),
        );
        assert_eq!(trials(&modes, false).len(), 2, "{modes:?}");
        // The load goes: the next trial finds the team faster, and the team stays.
        let (modes, t) = windows(&mut pace, t, Pace::TRIAL + 1, (free, alone));
        let first = trials(&modes, false)[0];
        assert!(modes[first..].iter().all(|&solo| !solo), "{modes:?}");
        let (modes, t) = windows(&mut pace, t, 2 * (Pace::TRIAL + 1), (free, alone));
        let tried = trials(&modes, true);
        assert_eq!(tried.len(), 2, "{modes:?}");
        assert_eq!(tried[1] - tried[0], Pace::TRIAL as usize + 1);
        // Load comes back: the next trial of solo wins.
        let (modes, mut t) = windows(&mut pace, t, Pace::TRIAL + 2, (us(10) * 2, alone));
        assert!(modes.ends_with(&[true, true]), "{modes:?}");
        // A split after a gap starts a new window: the gap is no split's time.
        let splits = pace.splits;
        pace.record(t, t + free);
        t += free + Pace::GAP + us(1);
        pace.record(t, t + free);
        assert_eq!(
            (pace.splits, pace.start),
            (1, t),
            "after {} splits",
            splits + 1
        );
    }

    #[test]
    fn a_solo_split_is_the_one_thread_path_and_is_timed() {
        let team = Mutex::new(Some(Team::new(1)));
        let set_solo = |solo: bool| team.lock().unwrap().as_mut().unwrap().pace.solo = solo;
        let splits = || team.lock().unwrap().as_ref().unwrap().pace.splits;
        set_solo(true);
        let before = splits();
        assert_eq!(split_on(&team, 2, |threads| threads), 1);
        assert_eq!(
            splits(),
            before + 1,
            "a solo split counts in the pace's window"
        );
        set_solo(false);
        assert_eq!(split_on(&team, 2, |threads| threads), 2);
        assert_eq!(splits(), before + 2);
        // One thread asked for: no team, no pace.
        assert_eq!(split_on(&team, 1, |threads| threads), 1);
        assert_eq!(splits(), before + 2);
    }
}
