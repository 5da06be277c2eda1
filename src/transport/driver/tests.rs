//! The driver's rules, against a fake h2 connection whose polls and
//! wake-ups the tests script, and wakers that count their wake-ups.

use std::sync::atomic::AtomicUsize;

use super::*;

/// The h2 side of a connection, as far as the driver sees it.
#[derive(Default)]
struct FakeConnection {
    polls: AtomicUsize,
    /// The waker of the last poll: what the socket's readiness wakes.
    waker: Mutex<Option<Waker>>,
    /// Woken by the next poll: a call's stream, as h2 wakes it when
    /// the call's frames arrive.
    stream: Mutex<Option<Waker>>,
    /// How many polls to come wake their own waker during the poll.
    waking_itself: AtomicUsize,
    ended: AtomicBool,
    panics: AtomicBool,
}

impl FakeConnection {
    fn future(self: &Arc<Self>) -> ConnectionFuture {
        let fake = self.clone();
        Box::pin(std::future::poll_fn(move |cx| {
            fake.polls.fetch_add(1, SeqCst);
            assert!(!fake.panics.load(SeqCst), "h2 broke");
            *fake.waker.lock().unwrap() = Some(cx.waker().clone());
            if let Some(stream) = fake.stream.lock().unwrap().take() {
                stream.wake();
            }
            let waking = fake.waking_itself.load(SeqCst);
            if waking > 0 {
                fake.waking_itself.store(waking - 1, SeqCst);
                cx.waker().wake_by_ref();
            }
            if fake.ended.load(SeqCst) {
                return Poll::Ready(Ok(()));
            }
            Poll::Pending
        }))
    }

    /// The socket turns ready: the last poll's waker is woken.
    fn turns_ready(&self) {
        let waker = self.waker.lock().unwrap().clone();
        waker.expect("polled once").wake();
    }

    fn polls(&self) -> usize {
        self.polls.load(SeqCst)
    }
}

/// A waker that counts its wake-ups.
#[derive(Default)]
struct Counted(AtomicUsize);

impl Wake for Counted {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

impl Counted {
    fn new() -> (Arc<Self>, Waker) {
        let counted = Arc::new(Self::default());
        (counted.clone(), Waker::from(counted))
    }

    fn wakes(&self) -> usize {
        self.0.load(SeqCst)
    }
}

type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A driver whose task has run once (polling the connection once), and
/// that task with its waker's count.
fn started() -> (Arc<FakeConnection>, Arc<Driver>, Task, Arc<Counted>) {
    let fake = Arc::new(FakeConnection::default());
    let driver = Driver::new(fake.future());
    let (woken, waker) = Counted::new();
    let mut task: Task = Box::pin(driver.clone().run());
    assert!(task
        .as_mut()
        .poll(&mut Context::from_waker(&waker))
        .is_pending());
    assert_eq!(fake.polls(), 1);
    (fake, driver, task, woken)
}

/// A call under way whose caller polled it once, with its waker's
/// count.
fn waiting(driver: &Arc<Driver>) -> (Caller, Arc<Counted>, Waker) {
    let mut caller = driver.caller();
    let (woken, waker) = Counted::new();
    caller.drive_if_alone(&waker);
    (caller, woken, waker)
}

#[test]
fn with_no_call_under_way_the_task_is_woken() {
    let (fake, _driver, _task, task_woken) = started();
    fake.turns_ready();
    assert_eq!(task_woken.wakes(), 1);
}

#[test]
fn a_caller_alone_sends_at_once_and_is_woken_instead_of_the_task() {
    let (fake, driver, _task, task_woken) = started();
    let mut caller = driver.caller();
    caller.hand_over(|| fake.turns_ready());
    assert_eq!(fake.polls(), 2, "sent at once");
    let (caller_woken, waker) = Counted::new();
    caller.drive_if_alone(&waker);
    assert_eq!(fake.polls(), 2, "nothing new to poll for");
    fake.turns_ready();
    assert_eq!((caller_woken.wakes(), task_woken.wakes()), (1, 0));
    caller.drive_if_alone(&waker);
    assert_eq!(fake.polls(), 3, "the woken caller reads");
}

#[test]
fn before_a_calls_first_poll_wake_ups_go_to_the_task() {
    let (fake, driver, _task, task_woken) = started();
    let mut caller = driver.caller();
    fake.turns_ready();
    assert_eq!(task_woken.wakes(), 1);
    // The task has not polled yet: the caller's first poll does.
    let (_, waker) = Counted::new();
    caller.drive_if_alone(&waker);
    assert_eq!(fake.polls(), 2);
}

#[test]
fn a_call_that_returned_leaves_wake_ups_to_the_task_until_it_waits_again() {
    let (fake, driver, _task, task_woken) = started();
    let (mut caller, caller_woken, waker) = waiting(&driver);
    caller.returned();
    fake.turns_ready();
    assert_eq!((caller_woken.wakes(), task_woken.wakes()), (0, 1));
    caller.drive_if_alone(&waker);
    fake.turns_ready();
    assert_eq!((caller_woken.wakes(), task_woken.wakes()), (1, 1));
}

#[test]
fn a_caller_that_gives_up_the_route_hands_an_unread_wake_up_to_the_task() {
    /// A way for a caller to give up the route.
    type GiveUp = fn(&Arc<Driver>, Caller);
    let give_ups: [(&str, GiveUp); 3] = [
        ("its call returned", |_, caller| caller.returned()),
        ("its call was dropped", |_, caller| drop(caller)),
        ("a second call started", |driver, caller| {
            let _second = driver.caller();
            drop(caller);
        }),
    ];
    for (how, give_up) in give_ups {
        let (fake, driver, _task, task_woken) = started();
        let (caller, caller_woken, _) = waiting(&driver);
        fake.turns_ready();
        assert_eq!(caller_woken.wakes(), 1, "{how}");
        give_up(&driver, caller);
        // (Once more when a caller that returned is then dropped.)
        assert!(task_woken.wakes() >= 1, "{how}");
    }
}

#[test]
fn a_caller_done_with_nothing_unread_leaves_the_task_asleep() {
    let (fake, driver, _task, task_woken) = started();
    let (mut caller, _, waker) = waiting(&driver);
    fake.turns_ready();
    caller.drive_if_alone(&waker);
    // Dropping the call's stream makes h2 ask for a poll; the caller
    // makes it.
    caller.hand_over(|| fake.turns_ready());
    assert_eq!(task_woken.wakes(), 0);
    assert_eq!(fake.polls(), 3);
}

#[test]
fn a_second_call_hands_the_connection_back_to_the_task() {
    let (fake, driver, _task, task_woken) = started();
    let (mut first, first_woken, waker) = waiting(&driver);
    let mut second = driver.caller();
    fake.turns_ready();
    assert_eq!((first_woken.wakes(), task_woken.wakes()), (0, 1));
    // Neither caller drives while both are under way.
    let (_, other) = Counted::new();
    second.drive_if_alone(&other);
    first.drive_if_alone(&waker);
    assert_eq!(fake.polls(), 1);
    // Alone again, the second caller drives.
    drop(first);
    fake.turns_ready();
    second.drive_if_alone(&other);
    assert_eq!(fake.polls(), 2);
}

#[test]
fn a_wake_up_during_a_poll_is_polled_for_by_the_poller() {
    let (fake, driver, _task, task_woken) = started();
    let (mut caller, caller_woken, waker) = waiting(&driver);
    fake.waking_itself.store(2, SeqCst);
    fake.turns_ready();
    caller.drive_if_alone(&waker);
    assert_eq!(
        fake.polls(),
        4,
        "one poll, and one for each wake-up during a poll"
    );
    assert_eq!((caller_woken.wakes(), task_woken.wakes()), (1, 0));
}

#[test]
fn a_connection_that_keeps_waking_itself_is_left_to_its_task() {
    let (fake, driver, _task, task_woken) = started();
    let (mut caller, _, waker) = waiting(&driver);
    fake.waking_itself.store(usize::MAX, SeqCst);
    fake.turns_ready();
    caller.drive_if_alone(&waker);
    assert_eq!(fake.polls(), 1 + POLLS_IN_A_ROW);
    assert_eq!(task_woken.wakes(), 1);
}

#[test]
fn the_callers_own_poll_does_not_wake_it_and_anyone_elses_does() {
    let (fake, driver, mut task, _) = started();
    let mut caller = driver.caller();
    let (caller_woken, waker) = Counted::new();
    let own = caller.drive_if_alone(&waker);
    // The caller's own poll reads its answer: no wake-up, the caller
    // polls its stream next.
    *fake.stream.lock().unwrap() = Some(own.clone());
    fake.turns_ready();
    caller.drive_if_alone(&waker);
    assert_eq!(caller_woken.wakes(), 1, "the socket's wake-up only");
    // The task reads it (the caller is no longer alone): woken.
    let _second = driver.caller();
    *fake.stream.lock().unwrap() = Some(own);
    fake.turns_ready();
    let (_, task_waker) = Counted::new();
    assert!(task
        .as_mut()
        .poll(&mut Context::from_waker(&task_waker))
        .is_pending());
    assert_eq!(caller_woken.wakes(), 2);
}

#[test]
fn the_end_is_told_whoever_polls() {
    let (fake, driver, mut task, task_woken) = started();
    let mut ended = Box::pin(driver.ended());
    let (ended_woken, ended_waker) = Counted::new();
    assert!(ended
        .as_mut()
        .poll(&mut Context::from_waker(&ended_waker))
        .is_pending());
    let (mut caller, _, waker) = waiting(&driver);
    fake.ended.store(true, SeqCst);
    fake.turns_ready();
    caller.drive_if_alone(&waker);
    assert!(driver.is_closed());
    assert_eq!((ended_woken.wakes(), task_woken.wakes()), (1, 1));
    let (_, task_waker) = Counted::new();
    assert!(task
        .as_mut()
        .poll(&mut Context::from_waker(&task_waker))
        .is_ready());
    // Nothing is polled after the end.
    caller.hand_over(|| ());
    assert_eq!(fake.polls(), 2);
}

#[test]
fn the_connection_ends_with_its_task() {
    let (_fake, driver, task, _) = started();
    let mut ended = Box::pin(driver.ended());
    let (ended_woken, ended_waker) = Counted::new();
    assert!(ended
        .as_mut()
        .poll(&mut Context::from_waker(&ended_waker))
        .is_pending());
    drop(task);
    assert!(driver.is_closed());
    assert_eq!(ended_woken.wakes(), 1);
}

#[test]
fn a_panic_in_what_a_caller_hands_h2_leaves_the_connection_to_poll() {
    let (fake, driver, _task, task_woken) = started();
    let caller = driver.caller();
    let panicked = std::panic::catch_unwind(AssertUnwindSafe(|| {
        caller.hand_over(|| panic!("a request body broke"));
    }));
    assert!(panicked.is_err());
    assert_eq!(task_woken.wakes(), 1, "what is left goes to the task");
    caller.hand_over(|| ());
    assert_eq!(fake.polls(), 2, "and the next caller polls again");
}

#[test]
fn a_panic_in_the_connection_ends_it_and_not_the_caller() {
    let (fake, driver, _task, _) = started();
    let caller = driver.caller();
    fake.panics.store(true, SeqCst);
    caller.hand_over(|| fake.turns_ready());
    assert!(driver.is_closed());
}
